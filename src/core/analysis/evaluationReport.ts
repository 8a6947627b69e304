import type { LabConfig } from '../config/schema';
import { UsageError } from '../errors';
import { FAILURE_KINDS, FAILURE_LABELS, type FailureKind } from '../store/failureKinds';
import type { TraceStore } from '../store/traceStore';
import type { RolloutRecord, RunRecord } from '../store/types';
import { Attr, type SpanRecord } from '../trace/span';
import { expertLabel } from './alignment';
import { spanIssues, type SpanIssue } from '../reward/failureClassification';
import { breakdownKeys, computeMetrics, decisionKey, failureOf, judgeCriteria, type EvalMetrics } from './metrics';
import { rewardSetupOf, type RewardSetup } from '../reward/rewardSetup';
import { isScored } from '../reward/scoredRollouts';
import { UNIT_RANGE, boundedMeanInterval, finiteNumbers, mean, meanConfidenceInterval, sampleStd, wilsonInterval } from './statistics';

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

export const REPORT_CONFIDENCE = 0.95;

/** A mean with its interval. */
export interface MeanStat {
  n: number;
  mean: number | null;
  /** 95 % interval (see meanStat); null without values, or below two that are not all 0 or 1. */
  ci: [number, number] | null;
  std: number | null;
  min: number | null;
  max: number | null;
}

/** A proportion in percent with its Wilson score interval (percent). */
export interface RateStat {
  count: number;
  n: number;
  rate: number | null;
  ci: [number, number] | null;
}

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
  counts: { total: number; succeeded: number; failed: number; noOutput: number; cancelled: number; running: number };
}

export interface EvaluationTable {
  /** What computeMetrics gives (the CLI's and Output's table), for the same rollouts; its `shape` says which rows the lab has. */
  metrics: EvalMetrics;
  /** Succeeded of finished rollouts. */
  executionSuccess: RateStat;
  /** Finished rollouts whose graph gave no final output (failed, but scored). */
  noOutput: RateStat;
  /** Over every finished rollout with a reward, no-output ones included. */
  finalReward: MeanStat;
  /** Null when alignment does not apply (no yes/no/maybe labels, or no GO / NO-GO-like decisions). */
  decisionAlignment: RateStat | null;
  maybe: EvalMetrics['maybe'];
  turns: MeanStat;
  /** Judged rollouts whose judge answer could not be used (penalty applied); null without a judge. */
  judgeFailures: RateStat | null;
  /** Empty without a judge. */
  judge: Array<{ criterion: string; stat: MeanStat }>;
  /** Each part of the custom reward's breakdown; empty without one. */
  customReward: Array<{ part: string; stat: MeanStat }>;
}

export interface CriterionReport {
  name: string;
  description: string | null;
  /** The weight in the config; 0 for a criterion scored in this run but no longer configured. */
  weight: number;
  inConfig: boolean;
  /** weight / sum of weights. */
  normalisedWeight: number;
  stat: MeanStat;
  /** normalisedWeight × mean: what the criterion adds to a judged final reward. */
  contribution: number | null;
  /** This criterion's part of the sum of contributions, 0..1. */
  share: number | null;
}

export interface AgentReport {
  agent: string;
  /** Finished rollouts in which the agent ran. */
  rollouts: number;
  visits: number;
  llmCalls: number;
  toolCalls: number;
  errors: number;
  inputTokens: number;
  outputTokens: number;
  latencyMs: number;
  /** Mean over its rollouts of the agent's total latency in the rollout. */
  meanLatencyMs: number | null;
  rolloutsWithErrors: number;
  promptVersions: Array<{ version: string | null; rollouts: number }>;
  models: Array<{ model: string | null; version: string | null; rollouts: number }>;
  /** Final reward of rollouts where the agent had an error, and where it had none. */
  rewardWithErrors: MeanStat;
  rewardWithoutErrors: MeanStat;
}

/** A decision row: the decision as the graph emitted it (GO / NO-GO spellings merged when alignment applies), or NO_DECISION / OTHER_DECISIONS. */
export type DecisionLabel = string;
export type ExpectedLabel = 'yes' | 'no' | 'maybe' | 'unlabelled';

/** The row of rollouts without a decision. */
const NO_DECISION = '(none)';
/** The row the least frequent decisions share when a graph emits more than MAX_DECISION_ROWS kinds. */
const OTHER_DECISIONS = '(other)';
export const MAX_DECISION_ROWS = 12;

export interface DecisionCell {
  decision: DecisionLabel;
  expected: ExpectedLabel;
  count: number;
  meanReward: number | null;
}

export interface DecisionReport {
  /** Over scored rollouts (those the graph finished; a rollout that threw has no decision). */
  rollouts: number;
  /** GO / NO-GO against yes / no / maybe labels: the table is the decision alignment's. */
  alignment: boolean;
  /** The decisions emitted, most frequent first; NO_DECISION and OTHER_DECISIONS last when present. */
  decisions: DecisionLabel[];
  /** The expected labels the tasks carry; empty when no task is labelled (then the table has no expected columns). */
  expected: ExpectedLabel[];
  /** One per decision × expected label (none when `expected` is empty). */
  cells: DecisionCell[];
  byDecision: Array<{ decision: DecisionLabel; count: number; reward: MeanStat }>;
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

export interface LowRollout {
  rolloutId: string;
  taskId: string;
  sample: number;
  status: RolloutRecord['status'];
  /** Why it failed (a no-output rollout still has its reward); null when it succeeded. */
  failure: FailureKind | null;
  finalReward: number;
  decision: string | null;
  expectedDecision: string | null;
  judgeFailed: boolean;
  turns: number | null;
  /** The custom reward's breakdown; null without one. */
  rewardBreakdown: Record<string, number> | null;
  /** The custom reward's `info` text, when it gave one and the rollout's spans were read. */
  rewardInfo: string | null;
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

export interface EvaluationReportOptions {
  runId: string;
  criteria: Record<string, { weight: number; description?: string }>;
  /** The lab's reward runs the judge (no custom reward, or mode "combine"). Default true. */
  judge?: boolean;
  /** A custom reward (reward.module) scores the rollouts. Default: whether customFailurePenalty is given. */
  customReward?: boolean;
  now?: number;
  /** runner.maxTurns: succeeded rollouts that used every turn count under "max turns reached". */
  maxTurns?: number;
  /** With a custom reward (reward.module): rollouts whose reward equals its failure penalty are checked for a failed reward. */
  customFailurePenalty?: number;
  /** At most this many rollouts' spans are read (failed rollouts first). Default 200. */
  maxSpanReads?: number;
  /** How many lowest-reward rollouts to list. Default 10. */
  lowest?: number;
  /** Examples per failure category. Default 5. */
  examples?: number;
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
    ...(config.reward.module ? { customFailurePenalty: config.reward.customFailurePenalty } : {}),
  };
}

export function buildEvaluationReport(store: TraceStore, opts: EvaluationReportOptions): EvaluationReport {
  const run = store.getRun(opts.runId);
  if (!run) throw new UsageError(`run "${opts.runId}" is not in the trace store`);
  const all = store.listRollouts({ runId: run.id, sort: 'startTime', order: 'asc', limit: Number.MAX_SAFE_INTEGER }).rollouts;
  const finished = all.filter((r) => r.status !== 'running');
  const succeeded = finished.filter((r) => r.status === 'succeeded');
  const setup: RewardSetup = { criteria: Object.keys(opts.criteria), judge: opts.judge ?? true, custom: opts.customReward ?? opts.customFailurePenalty !== undefined };
  const done = finished.filter((r) => r.status !== 'cancelled');
  const table = evaluationTable(done, setup);
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
  };
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

  const budget = { left: Math.max(0, opts.maxSpanReads ?? 200), read: 0, unread: 0 };
  const failures = failureReport(store, finished, opts, budget);
  const lowest = lowestRollouts(store, done, Math.max(0, opts.lowest ?? 10), shape.customReward, budget);

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
    decisions: decisionReport(done.filter(isScored), shape.alignment),
    failures: { ...failures, spansRead: budget.read, unread: budget.unread },
    lowest,
    rewardParts: breakdownKeys(done),
    notes,
    turnLimit: opts.maxTurns === undefined ? null : { maxTurns: opts.maxTurns, over },
  };
}

// ---- statistics helpers --------------------------------------------------

/** Mean with its interval: with `bounds` (scores and rewards lie in 0..1) one that stays inside them (boundedMeanInterval), else Student t. */
export function meanStat(xs: readonly number[], bounds?: readonly [number, number]): MeanStat {
  return {
    n: xs.length,
    mean: mean(xs),
    ci: bounds ? boundedMeanInterval(xs, REPORT_CONFIDENCE, bounds) : meanConfidenceInterval(xs, REPORT_CONFIDENCE),
    std: sampleStd(xs),
    min: xs.length ? Math.min(...xs) : null,
    max: xs.length ? Math.max(...xs) : null,
  };
}

export function rateStat(count: number, n: number): RateStat {
  const ci = wilsonInterval(count, n, REPORT_CONFIDENCE);
  return { count, n, rate: n ? (100 * count) / n : null, ci: ci ? [100 * ci[0], 100 * ci[1]] : null };
}


// ---- sections ------------------------------------------------------------

/** `done`: succeeded and failed rollouts (cancelled ones are not finished). */
function evaluationTable(done: readonly RolloutRecord[], setup: RewardSetup): EvaluationTable {
  // computeMetrics is the definition of the table; the intervals are computed on the very sets it uses.
  const metrics = computeMetrics(done, setup);
  const { shape } = metrics;
  const scored = done.filter(isScored);
  const judged = done.filter((r) => r.criteria !== null);
  const clean = judged.filter((r) => !r.judgeFailed);
  return {
    metrics,
    executionSuccess: rateStat(metrics.succeeded, metrics.rollouts),
    noOutput: rateStat(metrics.noOutput, metrics.rollouts),
    finalReward: meanStat(finiteNumbers(scored.map((r) => r.finalReward)), UNIT_RANGE),
    decisionAlignment: shape.alignment ? rateStat(metrics.alignedCount, metrics.alignmentDenominator) : null,
    maybe: metrics.maybe,
    turns: meanStat(finiteNumbers(scored.map((r) => r.turns)), [0, Infinity]),
    judgeFailures: shape.judge ? rateStat(metrics.judgeFailures, judged.length) : null,
    judge: Object.keys(metrics.judge).map((c) => ({ criterion: c, stat: meanStat(finiteNumbers(clean.map((r) => r.criteria![c])), UNIT_RANGE) })),
    customReward: Object.keys(metrics.customReward).map((part) => ({ part, stat: meanStat(finiteNumbers(done.map((r) => r.rewardBreakdown?.[part])), UNIT_RANGE) })),
  };
}

function criterionReports(done: readonly RolloutRecord[], names: readonly string[], config: EvaluationReportOptions['criteria']): CriterionReport[] {
  const scored = done.filter((r) => r.criteria && !r.judgeFailed);
  const totalWeight = names.reduce((s, n) => s + Math.max(0, config[n]?.weight ?? 0), 0);
  const rows = names.map((name) => {
    const weight = Math.max(0, config[name]?.weight ?? 0);
    const normalisedWeight = totalWeight > 0 ? weight / totalWeight : 0;
    const stat = meanStat(finiteNumbers(scored.map((r) => r.criteria![name])), UNIT_RANGE);
    return {
      name,
      description: config[name]?.description ?? null,
      weight,
      inConfig: name in config,
      normalisedWeight,
      stat,
      contribution: stat.mean === null ? null : normalisedWeight * stat.mean,
      share: null as number | null,
    };
  });
  const sum = rows.reduce((s, r) => s + (r.contribution ?? 0), 0);
  for (const r of rows) r.share = r.contribution === null || sum <= 0 ? null : r.contribution / sum;
  return rows;
}

function agentReports(finished: readonly RolloutRecord[]): AgentReport[] {
  interface Acc {
    report: AgentReport;
    prompts: Map<string | null, number>;
    models: Map<string, { model: string | null; version: string | null; rollouts: number }>;
    withErrors: number[];
    withoutErrors: number[];
  }
  const byAgent = new Map<string, Acc>();
  for (const r of finished) {
    for (const a of r.agents) {
      let acc = byAgent.get(a.agent);
      if (!acc) {
        acc = {
          report: {
            agent: a.agent,
            rollouts: 0,
            visits: 0,
            llmCalls: 0,
            toolCalls: 0,
            errors: 0,
            inputTokens: 0,
            outputTokens: 0,
            latencyMs: 0,
            meanLatencyMs: null,
            rolloutsWithErrors: 0,
            promptVersions: [],
            models: [],
            rewardWithErrors: meanStat([]),
            rewardWithoutErrors: meanStat([]),
          },
          prompts: new Map(),
          models: new Map(),
          withErrors: [],
          withoutErrors: [],
        };
        byAgent.set(a.agent, acc);
      }
      const rep = acc.report;
      rep.rollouts++;
      rep.visits += a.visits;
      rep.llmCalls += a.llmCalls;
      rep.toolCalls += a.toolCalls;
      rep.errors += a.errors;
      rep.inputTokens += a.inputTokens;
      rep.outputTokens += a.outputTokens;
      rep.latencyMs += a.latencyMs;
      if (a.errors > 0) rep.rolloutsWithErrors++;
      acc.prompts.set(a.promptVersion, (acc.prompts.get(a.promptVersion) ?? 0) + 1);
      const mk = JSON.stringify([a.model, a.modelVersion]);
      const m = acc.models.get(mk) ?? { model: a.model, version: a.modelVersion, rollouts: 0 };
      m.rollouts++;
      acc.models.set(mk, m);
      if (r.finalReward !== null) (a.errors > 0 ? acc.withErrors : acc.withoutErrors).push(r.finalReward);
    }
  }
  return [...byAgent.values()]
    .map(({ report, prompts, models, withErrors, withoutErrors }) => ({
      ...report,
      meanLatencyMs: report.rollouts ? report.latencyMs / report.rollouts : null,
      promptVersions: [...prompts].map(([version, rollouts]) => ({ version, rollouts })).sort((a, b) => b.rollouts - a.rollouts),
      models: [...models.values()].sort((a, b) => b.rollouts - a.rollouts),
      rewardWithErrors: meanStat(withErrors, UNIT_RANGE),
      rewardWithoutErrors: meanStat(withoutErrors, UNIT_RANGE),
    }))
    .sort((a, b) => a.agent.localeCompare(b.agent));
}

export function expectedLabel(expected: string | null): ExpectedLabel {
  return expertLabel(expected) ?? 'unlabelled';
}

/**
 * The decisions the graph emitted (rows) against the expected answers
 * (columns, only when tasks are labelled), with the mean reward of each cell.
 * Over scored rollouts: a rollout that threw made no decision.
 */
function decisionReport(scored: readonly RolloutRecord[], alignment: boolean): DecisionReport {
  const rows = scored.map((r) => ({ r, d: decisionKey(r.decision, alignment) ?? NO_DECISION, e: expectedLabel(r.expectedDecision) }));
  const frequency = new Map<string, number>();
  for (const x of rows) if (x.d !== NO_DECISION) frequency.set(x.d, (frequency.get(x.d) ?? 0) + 1);
  let emitted = [...frequency].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([d]) => d);
  if (alignment) emitted = [...new Set(['GO', 'NO-GO', ...emitted])];
  const decisions: DecisionLabel[] = emitted.slice(0, emitted.length > MAX_DECISION_ROWS ? MAX_DECISION_ROWS - 1 : MAX_DECISION_ROWS);
  if (emitted.length > decisions.length) {
    const kept = new Set(decisions);
    for (const x of rows) if (x.d !== NO_DECISION && !kept.has(x.d)) x.d = OTHER_DECISIONS;
    decisions.push(OTHER_DECISIONS);
  }
  if (alignment || rows.some((x) => x.d === NO_DECISION)) decisions.push(NO_DECISION);

  const labelled = rows.some((x) => x.e !== 'unlabelled');
  const expected: ExpectedLabel[] = labelled ? (['yes', 'no', 'maybe'] as ExpectedLabel[]).filter((e) => alignment || rows.some((x) => x.e === e)) : [];
  if (labelled && rows.some((x) => x.e === 'unlabelled')) expected.push('unlabelled');
  const cells: DecisionCell[] = [];
  for (const d of decisions) {
    for (const e of expected) {
      const here = rows.filter((x) => x.d === d && x.e === e);
      cells.push({ decision: d, expected: e, count: here.length, meanReward: mean(finiteNumbers(here.map((x) => x.r.finalReward))) });
    }
  }
  return {
    rollouts: scored.length,
    alignment,
    decisions,
    expected,
    cells,
    byDecision: decisions.map((d) => {
      const here = rows.filter((x) => x.d === d);
      return { decision: d, count: here.length, reward: meanStat(finiteNumbers(here.map((x) => x.r.finalReward)), UNIT_RANGE) };
    }),
  };
}

// ---- failure categories --------------------------------------------------

interface SpanBudget {
  left: number;
  read: number;
  unread: number;
}

function readSpans(store: TraceStore, r: RolloutRecord, budget: SpanBudget): SpanRecord[] | null {
  if (budget.left <= 0) {
    budget.unread++;
    return null;
  }
  budget.left--;
  budget.read++;
  try {
    return store.getSpans(r.id);
  } catch {
    // A rollout whose spans cannot be read still counts by its record.
    return null;
  }
}

function failureReport(store: TraceStore, finished: readonly RolloutRecord[], opts: EvaluationReportOptions, budget: SpanBudget): Omit<FailureReport, 'spansRead' | 'unread'> {
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

/** The scored rollouts with the lowest reward (no-output ones included), with the custom reward's info read from their spans while the budget lasts. */
function lowestRollouts(store: TraceStore, done: readonly RolloutRecord[], count: number, custom: boolean, budget: SpanBudget): LowRollout[] {
  return done
    .filter(isScored)
    .sort((a, b) => a.finalReward! - b.finalReward! || a.startTime - b.startTime)
    .slice(0, count)
    .map((r) => {
      let info: string | null = null;
      // Only while the budget lasts, and never counted as unread: the info is a nicety, not part of the explanation.
      if (custom && r.rewardBreakdown && budget.left > 0) {
        const span = readSpans(store, r, budget)?.find((s) => s.kind === 'reward' && s.attributes[Attr.rewardKind] === 'custom');
        const v = span?.attributes[Attr.rewardInfo];
        info = typeof v === 'string' && v ? clip(v) : null;
      }
      return {
        rolloutId: r.id,
        taskId: r.taskId,
        sample: r.sample,
        status: r.status,
        failure: r.failure ?? null,
        finalReward: r.finalReward!,
        decision: r.decision,
        expectedDecision: r.expectedDecision,
        judgeFailed: r.judgeFailed,
        turns: r.turns,
        rewardBreakdown: r.rewardBreakdown ?? null,
        rewardInfo: info,
      };
    });
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function clip(s: string, max = 300): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}
