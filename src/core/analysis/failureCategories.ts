import { FAILURE_KINDS, FAILURE_LABELS, type FailureKind } from '../store/failureKinds';
import type { TraceStore } from '../store/traceStore';
import type { RolloutRecord } from '../store/types';
import { spanIssues, type SpanIssue } from '../reward/failureClassification';
import { failureOf } from './metrics';
import { clip } from '../clip';
import { readSpans, type SpanBudget } from './reportSpans';

/*
 * The failure categories of a run: why rollouts failed (from their records,
 * or their spans where the record does not say) and what went wrong in those
 * that succeeded anyway, with a few examples of each.
 */

export interface FailureReportOptions {
  /** runner.maxTurns: succeeded rollouts that used every turn count under "max turns reached". */
  maxTurns?: number;
  /** With a custom reward (reward.module): rollouts whose reward equals its failure penalty are checked for a failed reward. */
  customFailurePenalty?: number;
  /** Examples per failure category. Default 5. */
  examples?: number;
}

export interface FailureExample {
  rolloutId: string;
  taskId: string;
  agent: string | null;
  message: string;
}

export interface FailureCategory {
  kind: FailureKind;
  label: string;
  /** Rollouts with at least one failure of this kind. */
  rollouts: number;
  /** Of those, rollouts that failed (or were cancelled) because of it; the rest succeeded despite it. */
  fatal: number;
  examples: FailureExample[];
}

export interface FailureReport {
  categories: FailureCategory[];
  /** Rollouts that failed or were cancelled. */
  failedRollouts: number;
  /** Rollouts with any failure, fatal or not. */
  rolloutsWithIssues: number;
  /** Rollouts whose spans were read to explain a failure. */
  spansRead: number;
  /** Rollouts whose spans would have explained more but were left unread (the bound was reached). */
  unread: number;
}

export function failureReport(store: TraceStore, finished: readonly RolloutRecord[], opts: FailureReportOptions, budget: SpanBudget): Omit<FailureReport, 'spansRead' | 'unread'> {
  const perCategory = Math.max(0, opts.examples ?? 5);
  const byKind = new Map<FailureKind, { rollouts: Set<string>; fatal: Set<string>; examples: FailureExample[] }>();
  const add = (r: RolloutRecord, issue: SpanIssue, fatal: boolean): void => {
    let c = byKind.get(issue.kind);
    if (!c) byKind.set(issue.kind, (c = { rollouts: new Set(), fatal: new Set(), examples: [] }));
    if (c.rollouts.has(r.id)) return;
    c.rollouts.add(r.id);
    if (fatal) c.fatal.add(r.id);
    if (c.examples.length < perCategory) c.examples.push({ rolloutId: r.id, taskId: r.taskId, agent: issue.agent, message: clip(issue.message) });
  };

  // Failed rollouts first: they are what the report must explain, so they get the span budget first.
  const failed = finished.filter((r) => r.status !== 'succeeded');
  for (const r of failed) {
    const recorded = failureOf(r) ?? 'other';
    if (recorded !== 'other') {
      add(r, { kind: recorded, agent: null, message: r.error ?? FAILURE_LABELS[recorded] }, true);
      continue;
    }
    // Records from before the runner kept a category, and errors their message does not place: the spans may say more.
    let issue: SpanIssue = { kind: 'other', agent: null, message: r.error ?? 'failed without an error message' };
    const spans = readSpans(store, r, budget);
    const cause = spans ? spanIssues(spans).find((i) => i.kind !== 'other') : undefined;
    if (cause) issue = { kind: cause.kind, agent: cause.agent, message: r.error ? `${r.error} (${cause.message})` : cause.message };
    add(r, issue, true);
  }

  for (const r of finished) {
    if (r.status !== 'succeeded') continue;
    const cutAnswers = r.truncatedAnswers ?? 0;
    const suspect =
      r.judgeFailed ||
      cutAnswers > 0 ||
      r.agents.some((a) => a.errors > 0) ||
      (opts.customFailurePenalty !== undefined && r.finalReward === opts.customFailurePenalty);
    const issues: SpanIssue[] = [];
    if (suspect) {
      const spans = readSpans(store, r, budget);
      if (spans) issues.push(...spanIssues(spans));
    }
    if (r.judgeFailed && !issues.some((i) => i.kind === 'judge_failed')) {
      issues.push({ kind: 'judge_failed', agent: null, message: "the judge's answer could not be used; the failure penalty was applied" });
    }
    if (cutAnswers > 0 && !issues.some((i) => i.kind === 'truncated')) {
      issues.push({ kind: 'truncated', agent: null, message: `${cutAnswers} model answer${cutAnswers === 1 ? ' was' : 's were'} truncated at max_tokens; the rollout still finished` });
    }
    if (opts.maxTurns !== undefined && r.turns !== null && r.turns >= opts.maxTurns) {
      issues.push({ kind: 'max_turns', agent: null, message: `reached the turn limit (${r.turns} turns; runner.maxTurns is ${opts.maxTurns})` });
    }
    for (const i of issues) add(r, i, false);
  }

  const categories = [...byKind]
    .map(([kind, c]) => ({ kind, label: FAILURE_LABELS[kind], rollouts: c.rollouts.size, fatal: c.fatal.size, examples: c.examples }))
    .sort((a, b) => b.fatal - a.fatal || b.rollouts - a.rollouts || FAILURE_KINDS.indexOf(a.kind) - FAILURE_KINDS.indexOf(b.kind));
  const withIssues = new Set<string>();
  for (const c of byKind.values()) for (const id of c.rollouts) withIssues.add(id);
  return { categories, failedRollouts: failed.length, rolloutsWithIssues: withIssues.size };
}
