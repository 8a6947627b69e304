import type { LabConfig } from '../config/schema';
import { UsageError } from '../errors';
import type { TraceStore } from '../store/traceStore';
import type { RunRecord } from '../store/types';
import { rewardSetupOf, type RewardSetup } from '../reward/rewardSetup';
import { isScored } from '../reward/scoredRollouts';
import { evaluationTable, type EvaluationTable } from './evaluationTable';
import { failureReport, type FailureReport, type FailureReportOptions } from './failureCategories';
import { lowestRollouts, type LowRollout } from './lowestRollouts';
import { breakdownKeys, judgeCriteria } from './metrics';
import { RESEARCH_LAB_DECISIONS, decisionLabelsOf, type DecisionLabels } from '../data/decisionAlignment';
import { runOutcome } from './runOutcome';
import { agentReports, criterionReports, decisionReport, type AgentReport, type CriterionReport, type DecisionReport, type ReportCriteria } from './reportBreakdowns';
import { REPORT_CONFIDENCE } from './reportStats';
import type { SpanBudget } from './reportSpans';
import { repairsNote, structuredRepairs, type StructuredRepairs } from './structuredRepairs';

/*
 * The evaluation report of one run: the evaluation table of the reference
 * study with confidence intervals, and the breakdowns that explain it (per
 * criterion, agent, decision), the failure categories and the worst
 * rollouts. Plain data (JSON-serialisable) so the panel, the Markdown and
 * HTML exports and `rollout-lab report --format json` all show the same
 * numbers. Rollout records carry almost everything; spans are read only for
 * the few rollouts whose failures need explaining (then for the custom
 * reward's info of the lowest-reward ones), and at most `maxSpanReads` of
 * them, so a large run stays fast. What it shows follows the lab: judge
 * sections only with a judge, alignment only where it applies (EvalShape).
 */

// The parts' types, for the report's readers (its formatting, the panel).

export interface ReportRunFacts {
  id: string;
  status: RunRecord['status'];
  startTime: number;
  endTime: number | null;
  durationMs: number | null;
  /** `params.command`: 'eval' for Evaluate, 'run' for Run Rollouts, null for older runs. */
  command: string | null;
  split: string | null;
  params: Record<string, unknown>;
  simulated: boolean;
  planned: number;
  tasks: number;
  /** `noOutput`: of the failed ones, those whose graph finished without a final output (they have a reward). */
  counts: { total: number; succeeded: number; failed: number; noOutput: number; cancelled: number; running: number; notStarted: number; superseded: number };
}

export interface EvaluationReport {
  generatedAt: number;
  confidenceLevel: number;
  run: ReportRunFacts;
  table: EvaluationTable;
  /** The judge's criteria; empty without a judge. */
  criteria: CriterionReport[];
  agents: AgentReport[];
  decisions: DecisionReport;
  failures: FailureReport;
  lowest: LowRollout[];
  /** The parts of the custom reward's breakdown (columns of the lowest-reward table); empty without one. */
  rewardParts: string[];
  /** Structured answers repaired locally or after a repair request; counted on the spans the report may read. */
  repairs?: StructuredRepairs;
  /** Things a reader should know about the numbers (a run still running, criteria no longer configured...). */
  notes: string[];
  /**
   * runner.maxTurns, and how many scored rollouts went over it: the limit is
   * handed to the graph (ctx.maxTurns), and the turn count is the graph's own
   * (a module graph's `turns`, else its AI messages, tool-call requests
   * included), so a graph that does not stop at the limit reports more.
   */
  turnLimit?: { maxTurns: number; over: number } | null;
}

export interface EvaluationReportOptions extends FailureReportOptions {
  runId: string;
  criteria: ReportCriteria;
  /** The lab's reward runs the judge (no custom reward, or mode "combine"). Default true. */
  judge?: boolean;
  /** A custom reward (reward.module) scores the rollouts. Default: whether customFailurePenalty is given. */
  customReward?: boolean;
  /** The decision mapping the lab's graph declares (decisionLabelsOf); default the research lab's GO / NO-GO. */
  decisionLabels?: DecisionLabels;
  now?: number;
  /** At most this many rollouts' spans are read (failed rollouts first). Default 200. */
  maxSpanReads?: number;
  /** How many lowest-reward rollouts to list. Default 10. */
  lowest?: number;
}

/** The run a report opens on by default: the newest evaluation run, else the newest run; null for an empty store. */
export function defaultReportRun(runs: readonly RunRecord[]): RunRecord | null {
  const newest = (xs: readonly RunRecord[]): RunRecord | null => xs.reduce<RunRecord | null>((a, r) => (!a || r.startTime > a.startTime ? r : a), null);
  return newest(runs.filter((r) => r.params?.command === 'eval')) ?? newest(runs);
}

/** The report options a lab config gives for a run: its criteria, whether it has a judge and a custom reward, turn limit and custom-reward penalty. */
export function reportOptionsFromConfig(config: LabConfig, runId: string): EvaluationReportOptions {
  const setup = rewardSetupOf(config);
  return {
    runId,
    criteria: config.reward.criteria,
    judge: setup.judge,
    customReward: setup.custom,
    maxTurns: config.runner.maxTurns,
    decisionLabels: decisionLabelsOf(config),
    ...(config.reward.module ? { customFailurePenalty: config.reward.customFailurePenalty } : {}),
  };
}

export function buildEvaluationReport(store: TraceStore, opts: EvaluationReportOptions): EvaluationReport {
  const run = store.getRun(opts.runId);
  if (!run) throw new UsageError(`run "${opts.runId}" is not in the trace store`);
  // Each task's current attempt; the attempts a resume redid are kept in the store (superseded) and counted apart.
  const all = store.listRollouts({ runId: run.id, superseded: false, sort: 'startTime', order: 'asc', limit: Number.MAX_SAFE_INTEGER }).rollouts;
  const outcome = runOutcome(store, run.id);
  const finished = all.filter((r) => r.status !== 'running');
  const succeeded = finished.filter((r) => r.status === 'succeeded');
  const setup: RewardSetup = { criteria: Object.keys(opts.criteria), judge: opts.judge ?? true, custom: opts.customReward ?? opts.customFailurePenalty !== undefined };
  const done = finished.filter((r) => r.status !== 'cancelled');
  const labels = opts.decisionLabels ?? RESEARCH_LAB_DECISIONS;
  const table = evaluationTable(done, setup, labels);
  const { shape } = table.metrics;
  const criteriaNames = shape.judge ? judgeCriteria(done, setup) : [];
  const notes: string[] = [];

  const counts = {
    total: all.length,
    succeeded: succeeded.length,
    failed: all.filter((r) => r.status === 'failed').length,
    noOutput: table.metrics.noOutput,
    cancelled: all.filter((r) => r.status === 'cancelled').length,
    running: all.filter((r) => r.status === 'running').length,
    notStarted: outcome.notStarted,
    superseded: outcome.superseded,
  };
  if (counts.superseded) notes.push(`${plural(counts.superseded, 'earlier attempt')} redone by a resume ${counts.superseded === 1 ? 'is' : 'are'} kept in the store, superseded, and not counted here`);
  if (counts.running) notes.push(`${counts.running} rollouts were still running when the report was made; they are left out`);
  if (run.status === 'running') notes.push('the run is still in progress');
  if (counts.cancelled) notes.push(`${counts.cancelled} cancelled rollouts are not in the evaluation table (they appear under failure categories)`);
  if (counts.noOutput) {
    notes.push(
      `${plural(counts.noOutput, 'rollout')} finished without a final output${table.metrics.truncated ? ` (${table.metrics.truncated} because an answer was truncated at max_tokens)` : ''}: failed in the execution success rate, and counted with the reward given in the average final reward`,
    );
  }
  if (table.metrics.crashed) notes.push(`${plural(table.metrics.crashed, 'rollout')} failed with an error before any reward: left out of the average final reward`);
  const cutPrompts = finished.reduce((n, r) => n + (r.truncatedPrompts ?? 0), 0);
  if (cutPrompts) {
    const inRollouts = finished.filter((r) => (r.truncatedPrompts ?? 0) > 0).length;
    notes.push(
      `the server cut ${plural(cutPrompts, 'prompt')} (in ${plural(inRollouts, 'rollout')}) to fit its context window, so the model did not see them whole — raise the server's context per request (llama.cpp: -c, shared by the -np slots; Ollama: num_ctx; vLLM: --max-model-len) or shorten the prompts`,
    );
  }
  const over = opts.maxTurns === undefined ? 0 : done.filter((r) => r.turns !== null && r.turns > opts.maxTurns!).length;
  if (over) {
    notes.push(
      `${plural(over, 'rollout')} took more turns than runner.maxTurns (${opts.maxTurns}): the limit is handed to the graph (ctx.maxTurns), and the turn count is the graph's own (its state's \`turns\`, else its AI messages, tool-call requests included) — a graph that does not stop at the limit reports more; they are counted under "max turns reached"`,
    );
  }
  const unconfigured = criteriaNames.filter((c) => !setup.criteria.includes(c));
  if (unconfigured.length) notes.push(`scored criteria no longer in the config (weight 0 here): ${unconfigured.join(', ')}`);

  const budget: SpanBudget = { left: Math.max(0, opts.maxSpanReads ?? 200), read: 0, unread: 0 };
  const failures = failureReport(store, finished, opts, budget);
  const lowest = lowestRollouts(store, done, Math.max(0, opts.lowest ?? 10), shape.customReward, budget);
  // Its own budget: repairs hide in rollouts that succeeded, which the failure sections never read.
  const repairs = structuredRepairs(store, finished, { left: Math.max(0, opts.maxSpanReads ?? 200), read: 0, unread: 0 });
  const repairLine = repairsNote(repairs);
  if (repairLine) notes.push(repairLine);

  const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
  return {
    generatedAt: opts.now ?? Date.now(),
    confidenceLevel: REPORT_CONFIDENCE,
    run: {
      id: run.id,
      status: run.status,
      startTime: run.startTime,
      endTime: run.endTime,
      durationMs: run.endTime === null ? null : run.endTime - run.startTime,
      command: str(run.params?.command),
      split: str(run.params?.split),
      params: { ...run.params },
      simulated: run.simulated || all.some((r) => r.simulated),
      planned: run.planned,
      tasks: new Set(all.map((r) => r.taskId)).size,
      counts,
    },
    table,
    criteria: shape.judge ? criterionReports(done, criteriaNames, opts.criteria) : [],
    agents: agentReports(finished),
    decisions: decisionReport(done.filter(isScored), shape.alignment, labels),
    failures: { ...failures, spansRead: budget.read, unread: budget.unread },
    lowest,
    rewardParts: breakdownKeys(done),
    repairs,
    notes,
    turnLimit: opts.maxTurns === undefined ? null : { maxTurns: opts.maxTurns, over },
  };
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
