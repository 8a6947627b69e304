import type { LabConfig } from '../../config/schema';
import type { TraceStore } from '../../store/traceStore';
import type { RolloutRecord, Split } from '../../store/types';
import { isScoredFailure } from './adapters/rolloutSelection';
import { MAX_LISTED, type PreflightCheck, type PreflightOptions } from './preflightTypes';

/** The options the checks run with: the split resolved (none: every split). */
export type CheckedOptions = Omit<PreflightOptions, 'split'> & { split?: Split };

/**
 * What every check of a run looks at: the stored rollouts of the split in
 * their groups (finished, simulated, usable, with a chosen agent), and where
 * the checks put what they found (`checks`, `counts`).
 */
export class PreflightContext {
  readonly checks: PreflightCheck[] = [];
  readonly counts: Record<string, number> = {};
  /** Finished rollouts of the split (simulated ones only when included): the phase's candidates. */
  readonly finished: RolloutRecord[];
  /** Finished simulated rollouts of the split, included or not. */
  readonly simulated: RolloutRecord[];
  /** Succeeded with a final reward; for grpo also failures the runner still scored (the negative signal). */
  readonly usable: RolloutRecord[];
  /** Usable rollouts in which a chosen agent ran. */
  readonly withAgents: RolloutRecord[];

  constructor(
    readonly store: TraceStore,
    readonly config: LabConfig,
    readonly opts: CheckedOptions,
    readonly agents: string[],
  ) {
    // Oldest first, so the listed ids follow the order the rollouts ran in.
    const all = store.listRollouts({ ...(opts.split ? { split: opts.split } : {}), superseded: false, sort: 'startTime', order: 'asc' }).rollouts;
    const finished = all.filter((r) => r.status !== 'running');
    this.simulated = finished.filter((r) => r.simulated);
    this.finished = opts.includeSimulated ? finished : finished.filter((r) => !r.simulated);
    this.usable = this.finished.filter((r) => r.finalReward !== null && (r.status === 'succeeded' || (this.keepsScoredFailures && isScoredFailure(r))));
    this.withAgents = this.usable.filter((r) => this.ranChosen(r));
    this.counts.rollouts = this.finished.length;
    this.counts.simulated = this.simulated.length;
    this.counts.running = all.length - finished.length;
    this.counts.usable = this.usable.length;
    this.counts.withAgents = this.withAgents.length;
  }

  /** GRPO compares a group's rollouts with each other: a scored failure (no output) is part of its signal. */
  get keepsScoredFailures(): boolean {
    return this.opts.phase === 'grpo';
  }

  ranChosen(r: RolloutRecord): boolean {
    return r.agents.some((a) => this.agents.includes(a.agent) && ran(a));
  }

  /**
   * A check with nothing to look at: it passes nothing (never "all 0 model calls carry logprobs"), it says there was
   * nothing to check, as a warning, or as an error where the phase cannot run without those things.
   */
  nothing(check: Pick<PreflightCheck, 'id' | 'title' | 'fix'>, severity: 'warning' | 'error' = 'warning'): void {
    this.checks.push({ ...check, severity, count: 0, rollouts: [] });
  }

  add(check: Omit<PreflightCheck, 'rollouts'> & { rollouts?: string[] }, passed: boolean): void {
    this.checks.push({
      id: check.id,
      severity: passed ? 'info' : check.severity,
      title: check.title,
      count: check.count,
      rollouts: (check.rollouts ?? []).slice(0, MAX_LISTED),
      fix: check.fix,
    });
  }

  /** Which split the rollouts are of, for the titles: " (train split)", or nothing for every split. */
  get scope(): string {
    return this.opts.split ? ` (${this.opts.split} split)` : '';
  }
}

/** Whether an agent did something in a rollout: a visit of its node, or a model call (a module graph's node may be named otherwise). */
export function ran(a: RolloutRecord['agents'][number]): boolean {
  return a.visits > 0 || a.llmCalls > 0;
}
