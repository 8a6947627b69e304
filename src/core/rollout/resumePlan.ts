import { failureCountsText, isTransportFailure, type FailureKind } from '../store/failureKinds';
import type { RolloutAttempt } from '../store/types';
import { classifyFailure } from '../reward/failureClassification';

/** What a resumed run redoes, and why: the answer `run --resume` prints before it starts. */
export interface ResumeSummary {
  /** Task and sample keys whose current attempt stands (succeeded, or failed for the agent's own reasons without retryFailed). */
  done: number;
  /** Attempts redone because they failed on the way to the model, by category (connection, timeout, server error, rate limit). */
  transport: Partial<Record<FailureKind, number>>;
  /** Attempts whose process ended (interrupted), that were cancelled, or never finished. */
  unfinished: number;
  /** Attempts that failed for the agent's own reasons, redone because retryFailed asked for it. */
  retried: Partial<Record<FailureKind, number>>;
  /** Attempts that failed for the agent's own reasons and stay as they are (retryFailed redoes them). */
  keptFailed: Partial<Record<FailureKind, number>>;
  /** Planned keys the run never started. */
  notStarted: number;
}

export interface ResumePlan {
  /** Keys (`task#sample`) not to run again. */
  skip: Set<string>;
  /** Per key to redo, the attempts its new attempt replaces. */
  supersedes: Map<string, string[]>;
  summary: ResumeSummary;
}

const key = (a: Pick<RolloutAttempt, 'taskId' | 'sample'>): string => `${a.taskId}#${a.sample}`;

/** A failed attempt's category: recorded, or (rows from before it was) read from its error, as the report does. */
const kindOf = (a: RolloutAttempt): FailureKind => a.failure ?? classifyFailure(a.error);

const bump = (counts: Partial<Record<FailureKind, number>>, k: FailureKind): void => {
  counts[k] = (counts[k] ?? 0) + 1;
};

/**
 * What a resumed run does with each planned task and sample, from its current
 * attempts: a success stands; a failure on the way to the model (connection,
 * timeout, 5xx, 429), an interrupted, cancelled or unfinished attempt is
 * redone; a failure of the agent's own (invalid output, no output, a tool
 * error...) stands unless `retryFailed`. A redone attempt is superseded by the
 * new one, never deleted; one still running is left to end, and the store keeps
 * one of the two (CatalogEvents.resolveDuplicates).
 */
export function resumePlan(planned: readonly string[], attempts: readonly RolloutAttempt[], opts: { retryFailed?: boolean } = {}): ResumePlan {
  const byKey = new Map<string, RolloutAttempt[]>();
  for (const a of attempts) {
    const list = byKey.get(key(a));
    if (list) list.push(a);
    else byKey.set(key(a), [a]);
  }
  const summary: ResumeSummary = { done: 0, transport: {}, unfinished: 0, retried: {}, keptFailed: {}, notStarted: 0 };
  const skip = new Set<string>();
  const supersedes = new Map<string, string[]>();
  for (const k of new Set(planned)) {
    const list = byKey.get(k) ?? [];
    if (list.length === 0) {
      summary.notStarted++;
      continue;
    }
    const own = (a: RolloutAttempt): FailureKind | null => {
      const kind = kindOf(a);
      return a.status === 'failed' && kind !== 'interrupted' && !isTransportFailure(kind) ? kind : null;
    };
    // The latest attempt that stands decides; older ones of the same key (a store from before attempts were linked) do not.
    const stands = [...list].reverse().find((a) => a.status === 'succeeded' || (own(a) !== null && !opts.retryFailed));
    if (stands) {
      skip.add(k);
      summary.done++;
      const kind = own(stands);
      if (kind) bump(summary.keptFailed, kind);
      continue;
    }
    const last = list[list.length - 1]!;
    const kind = own(last);
    if (kind) bump(summary.retried, kind);
    else if (last.status === 'failed' && isTransportFailure(kindOf(last))) bump(summary.transport, kindOf(last));
    else summary.unfinished++;
    // An attempt still running (another process is at it, or was presumed dead and is not) is not replaced by name:
    // whichever of the two ends first with a success stands, as the store resolves attempts that ran at once.
    supersedes.set(k, list.filter((a) => a.status !== 'running').map((a) => a.id));
  }
  return { skip, supersedes, summary };
}

const total = (counts: Partial<Record<FailureKind, number>>): number => Object.values(counts).reduce((a, b) => a + b, 0);

/**
 * "redoing 4 rollouts that failed on transport (connection failed ×3, timeout
 * ×1); 36 already done", and what it leaves alone and how to redo that too.
 */
export function resumeSummaryText(s: ResumeSummary, retryFlag = '--retry-failed'): string {
  const parts: Array<{ n: number; what: string }> = [
    { n: total(s.transport), what: `that failed on transport (${failureCountsText(s.transport)})` },
    { n: s.unfinished, what: 'interrupted or cancelled' },
    { n: total(s.retried), what: `that failed (${failureCountsText(s.retried)}), as asked` },
    { n: s.notStarted, what: 'not started' },
  ].filter((p) => p.n > 0);
  const todo = parts.reduce((n, p) => n + p.n, 0);
  const rollouts = (n: number): string => `${n} rollout${n === 1 ? '' : 's'}`;
  let text =
    parts.length === 0
      ? `nothing to redo; ${s.done} already done`
      : parts.length === 1
        ? `redoing ${rollouts(todo)} ${parts[0]!.what}; ${s.done} already done`
        : `redoing ${rollouts(todo)} (${parts.map((p) => `${p.n} ${p.what}`).join(', ')}); ${s.done} already done`;
  const kept = total(s.keptFailed);
  if (kept) text += ` — ${kept} of those failed for the agent's own reasons (${failureCountsText(s.keptFailed)}) and ${kept === 1 ? 'is' : 'are'} kept; add ${retryFlag} to redo ${kept === 1 ? 'it' : 'them'}`;
  return text;
}
