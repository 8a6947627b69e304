import { Lab } from '../core/lab/lab';
import type { RetryNotice } from '../core/llm/retryNotices';
import { warningSummaryLine, type RunWarning } from '../core/rollout/runWarnings';
import { err, out, type Values } from './args';

/**
 * Opens the workspace's lab for a command that runs rollouts: says so when an
 * endpoint is simulated, turns the first Ctrl+C into a cancellation (the
 * rollouts in flight finish and are stored; a second Ctrl+C stops at once),
 * and closes the lab afterwards so its catalog is checkpointed.
 */
export async function withRunningLab(v: Values, work: (lab: Lab, signal: AbortSignal) => Promise<number>): Promise<number> {
  const lab = await Lab.open({ workspace: (v.workspace as string) ?? '.', baseUrl: v['base-url'] as string, model: v.model as string });
  const controller = new AbortController();
  const onSignal = (): void => {
    if (controller.signal.aborted) process.exit(130);
    err('cancelling: finishing the rollouts in flight (press Ctrl+C again to stop at once)');
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let failed = false;
  try {
    const notice = lab.simulationNotice();
    if (notice) err(notice);
    return await work(lab, controller.signal);
  } catch (e) {
    failed = true;
    throw e;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    // Closing writes the catalog; when the work failed (a full disk), its error is the one to report, not the close's.
    await lab.close().catch((e: unknown) => {
      if (!failed) throw e;
    });
  }
}

/** A run's warning as it first happens: on stderr, beside the progress lines. */
export function tellWarning(w: RunWarning, prefix = ''): void {
  err(`${prefix}warning: ${w.message}`);
}

/**
 * Model calls being retried, on stderr as they happen: every timeout (a stalled server is otherwise silent for the
 * whole timeoutMs), and the first retry of each other kind (429s, 5xx, resets, broken bodies), which the run's
 * "model calls retried" warning then totals.
 */
export function retryTeller(prefix = ''): (n: RetryNotice) => void {
  const told = new Set<string>();
  return (n) => {
    const kind = n.kind === 'other' ? n.reason.replace(/\(.*$/, '').trim() : n.kind;
    if (n.kind !== 'timeout' && told.has(kind)) return;
    told.add(kind);
    err(`${prefix}${n.message}`);
  };
}

/** The totals of a run's warnings, after its summary; `rollouts` is how many ran in this invocation. */
export function printWarnings(warnings: readonly RunWarning[], rollouts: number, heading = 'Warnings'): void {
  if (!warnings.length) return;
  out('');
  out(`${heading}:`);
  for (const w of warnings) out(`  ${warningSummaryLine(w, rollouts)}`);
}
