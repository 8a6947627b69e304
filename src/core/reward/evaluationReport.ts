import type { LabConfig } from '../config/schema';
import { UsageError } from '../errors';
import type { TraceStore } from '../store/traceStore';
import type { RolloutRecord, RunRecord } from '../store/types';
import { Attr, type SpanRecord } from '../trace/span';
import { computeMetrics, type EvalMetrics } from './metrics';
import { mean, meanConfidenceInterval, sampleStd, wilsonInterval } from './statistics';

/*
 * The evaluation report of one run: the evaluation table of the reference
 * study with confidence intervals, and the breakdowns that explain it (per
 * criterion, agent, decision), the failure categories and the worst
 * rollouts. Plain data (JSON-serialisable) so the panel, the Markdown and
 * HTML exports and `rollout-lab report --format json` all show the same
 * numbers. Rollout records carry almost everything; spans are read only for
 * the few rollouts whose failures need explaining, and at most
 * `maxSpanReads` of them, so a large run stays fast.
 */

export const REPORT_CONFIDENCE = 0.95;
/** Judge scores and final rewards lie in 0..1, and so do their intervals. */
const UNIT: [number, number] = [0, 1];

/** A mean with its Student-t interval. */
export interface MeanStat {
  n: number;
  mean: number | null;
  /** 95 % interval; null below two values. */
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
  counts: { total: number; succeeded: number; failed: number; cancelled: number; running: number };
}

export interface EvaluationTable {
  /** What computeMetrics gives (the CLI's and Output's table), for the same rollouts. */
  metrics: EvalMetrics;
  executionSuccess: RateStat;
  finalReward: MeanStat;
  decisionAlignment: RateStat;
  maybe: EvalMetrics['maybe'];
  turns: MeanStat;
  /** Succeeded rollouts whose judge answer could not be used (penalty applied). */
  judgeFailures: RateStat;
  judge: Array<{ criterion: string; stat: MeanStat }>;
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

export type DecisionLabel = 'GO' | 'NO-GO' | 'none' | 'other';
export type ExpectedLabel = 'yes' | 'no' | 'maybe' | 'unlabelled';

export interface DecisionCell {
  decision: DecisionLabel;
  expected: ExpectedLabel;
  count: number;
  meanReward: number | null;
}

export interface DecisionReport {
  /** Over succeeded rollouts (a failed rollout has no decision). */
  rollouts: number;
  decisions: DecisionLabel[];
  expected: ExpectedLabel[];
  cells: DecisionCell[];
  byDecision: Array<{ decision: DecisionLabel; count: number; reward: MeanStat }>;
}

export type FailureKind =
  | 'rate_limit'
  | 'server_error'
  | 'client_error'
  | 'timeout'
  | 'connection'
  | 'invalid_output'
  | 'tool_error'
  | 'max_turns'
  | 'judge_failed'
  | 'custom_reward_failed'
  | 'cancelled'
  | 'other';

export const FAILURE_LABELS: Record<FailureKind, string> = {
  rate_limit: 'Rate limited (HTTP 429)',
  server_error: 'Server error (HTTP 5xx)',
  client_error: 'Request rejected (HTTP 4xx)',
  timeout: 'Timeout',
  connection: 'Connection failed',
  invalid_output: 'Invalid model output (JSON)',
  tool_error: 'Tool error',
  max_turns: 'Max turns reached',
  judge_failed: 'Judge failed',
  custom_reward_failed: 'Custom reward failed',
  cancelled: 'Cancelled',
  other: 'Other error',
};

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
  /** Of those, rollouts that failed (or were cancelled) because of it; the rest finished with a reward. */
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
  finalReward: number;
  decision: string | null;
  expectedDecision: string | null;
  judgeFailed: boolean;
  turns: number | null;
}

export interface EvaluationReport {
  generatedAt: number;
  confidenceLevel: number;
  run: ReportRunFacts;
  table: EvaluationTable;
  criteria: CriterionReport[];
  agents: AgentReport[];
  decisions: DecisionReport;
  failures: FailureReport;
  lowest: LowRollout[];
  /** Things a reader should know about the numbers (a run still running, criteria no longer configured...). */
  notes: string[];
}

export interface EvaluationReportOptions {
  runId: string;
  criteria: Record<string, { weight: number; description?: string }>;
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

/** The report options a lab config gives for a run: its criteria, turn limit and custom-reward penalty. */
export function reportOptionsFromConfig(config: LabConfig, runId: string): EvaluationReportOptions {
  return {
    runId,
    criteria: config.reward.criteria,
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
  const configured = Object.keys(opts.criteria);
  const seen = new Set<string>();
  for (const r of succeeded) for (const k of Object.keys(r.criteria ?? {})) seen.add(k);
  const criteriaNames = [...configured, ...[...seen].filter((k) => !configured.includes(k)).sort()];
  const notes: string[] = [];

  const counts = {
    total: all.length,
    succeeded: succeeded.length,
    failed: all.filter((r) => r.status === 'failed').length,
    cancelled: all.filter((r) => r.status === 'cancelled').length,
    running: all.filter((r) => r.status === 'running').length,
  };
  if (counts.running) notes.push(`${counts.running} rollouts were still running when the report was made; they are left out`);
  if (run.status === 'running') notes.push('the run is still in progress');
  if (counts.cancelled) notes.push(`${counts.cancelled} cancelled rollouts are not in the evaluation table (they appear under failure categories)`);
  const unconfigured = criteriaNames.filter((c) => !configured.includes(c));
  if (unconfigured.length) notes.push(`scored criteria no longer in the config (weight 0 here): ${unconfigured.join(', ')}`);

  const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
  const report: EvaluationReport = {
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
    table: evaluationTable(finished, criteriaNames),
    criteria: criterionReports(succeeded, criteriaNames, opts.criteria),
    agents: agentReports(finished),
    decisions: decisionReport(succeeded),
    failures: failureReport(store, finished, opts),
    lowest: succeeded
      .filter((r): r is RolloutRecord & { finalReward: number } => r.finalReward !== null)
      .sort((a, b) => a.finalReward - b.finalReward || a.startTime - b.startTime)
      .slice(0, Math.max(0, opts.lowest ?? 10))
      .map((r) => ({
        rolloutId: r.id,
        taskId: r.taskId,
        sample: r.sample,
        finalReward: r.finalReward,
        decision: r.decision,
        expectedDecision: r.expectedDecision,
        judgeFailed: r.judgeFailed,
        turns: r.turns,
      })),
    notes,
  };
  return report;
}

// ---- statistics helpers --------------------------------------------------

/** Mean with its Student-t interval; `bounds` clips the interval to the range the values can take (scores and rewards are 0..1). */
export function meanStat(xs: readonly number[], bounds?: [number, number]): MeanStat {
  const m = mean(xs);
  const std = sampleStd(xs);
  const ci = meanConfidenceInterval(xs, REPORT_CONFIDENCE);
  return {
    n: xs.length,
    mean: m,
    ci: ci && bounds ? [Math.max(bounds[0], ci[0]), Math.min(bounds[1], ci[1])] : ci,
    std,
    min: xs.length ? Math.min(...xs) : null,
    max: xs.length ? Math.max(...xs) : null,
  };
}

export function rateStat(count: number, n: number): RateStat {
  const ci = wilsonInterval(count, n, REPORT_CONFIDENCE);
  return { count, n, rate: n ? (100 * count) / n : null, ci: ci ? [100 * ci[0], 100 * ci[1]] : null };
}

const numbers = (xs: ReadonlyArray<number | null | undefined>): number[] => xs.filter((x): x is number => typeof x === 'number' && Number.isFinite(x));

// ---- sections ------------------------------------------------------------

function evaluationTable(finished: readonly RolloutRecord[], criteria: readonly string[]): EvaluationTable {
  // computeMetrics is the definition of the table; the intervals are computed on the very sets it uses.
  const metrics = computeMetrics(finished, criteria);
  const done = finished.filter((r) => r.status === 'succeeded' || r.status === 'failed');
  const ok = done.filter((r) => r.status === 'succeeded');
  const scored = ok.filter((r) => r.criteria && !r.judgeFailed);
  return {
    metrics,
    executionSuccess: rateStat(ok.length, done.length),
    finalReward: meanStat(numbers(ok.map((r) => r.finalReward)), UNIT),
    decisionAlignment: rateStat(metrics.alignedCount, metrics.alignmentDenominator),
    maybe: metrics.maybe,
    turns: meanStat(numbers(ok.map((r) => r.turns)), [0, Infinity]),
    judgeFailures: rateStat(metrics.judgeFailures, ok.length),
    judge: criteria.map((c) => ({ criterion: c, stat: meanStat(numbers(scored.map((r) => r.criteria![c])), UNIT) })),
  };
}

function criterionReports(
  succeeded: readonly RolloutRecord[],
  names: readonly string[],
  config: EvaluationReportOptions['criteria'],
): CriterionReport[] {
  const scored = succeeded.filter((r) => r.criteria && !r.judgeFailed);
  const totalWeight = names.reduce((s, n) => s + Math.max(0, config[n]?.weight ?? 0), 0);
  const rows = names.map((name) => {
    const weight = Math.max(0, config[name]?.weight ?? 0);
    const normalisedWeight = totalWeight > 0 ? weight / totalWeight : 0;
    const stat = meanStat(numbers(scored.map((r) => r.criteria![name])), UNIT);
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
      rewardWithErrors: meanStat(withErrors),
      rewardWithoutErrors: meanStat(withoutErrors),
    }))
    .sort((a, b) => a.agent.localeCompare(b.agent));
}

/** GO / NO-GO as the alignment metric reads them (YES and NO count too); anything else is "other". */
export function decisionLabel(decision: string | null): DecisionLabel {
  if (!decision || !decision.trim()) return 'none';
  const d = decision.toUpperCase().trim().replace(/[\s_]/g, '-');
  if (d === 'GO' || d === 'YES') return 'GO';
  if (d === 'NO-GO' || d === 'NOGO' || d === 'NO') return 'NO-GO';
  return 'other';
}

export function expectedLabel(expected: string | null): ExpectedLabel {
  const e = expected?.toLowerCase().trim();
  return e === 'yes' || e === 'no' || e === 'maybe' ? e : 'unlabelled';
}

function decisionReport(succeeded: readonly RolloutRecord[]): DecisionReport {
  const decisions: DecisionLabel[] = ['GO', 'NO-GO', 'none'];
  const expected: ExpectedLabel[] = ['yes', 'no', 'maybe'];
  const labelled = succeeded.map((r) => ({ r, d: decisionLabel(r.decision), e: expectedLabel(r.expectedDecision) }));
  if (labelled.some((x) => x.d === 'other')) decisions.push('other');
  if (labelled.some((x) => x.e === 'unlabelled')) expected.push('unlabelled');
  const cells: DecisionCell[] = [];
  for (const d of decisions) {
    for (const e of expected) {
      const here = labelled.filter((x) => x.d === d && x.e === e);
      cells.push({ decision: d, expected: e, count: here.length, meanReward: mean(numbers(here.map((x) => x.r.finalReward))) });
    }
  }
  return {
    rollouts: succeeded.length,
    decisions,
    expected,
    cells,
    byDecision: decisions.map((d) => {
      const here = labelled.filter((x) => x.d === d);
      return { decision: d, count: here.length, reward: meanStat(numbers(here.map((x) => x.r.finalReward))) };
    }),
  };
}

// ---- failure categories --------------------------------------------------

/**
 * The category of one error from its message and, when a span gives one, its
 * `error.type` (an HTTP status, an exception name, or Rollout Lab's own
 * judge_failed / custom_reward_failed).
 */
export function classifyFailure(message: string | null | undefined, errorType?: string | null): FailureKind {
  const t = (errorType ?? '').trim();
  if (t === 'judge_failed') return 'judge_failed';
  if (t === 'custom_reward_failed') return 'custom_reward_failed';
  if (t === '429') return 'rate_limit';
  if (/^5\d\d$/.test(t)) return 'server_error';
  if (t === 'AbortError') return 'cancelled';
  if (t === 'GraphRecursionError') return 'max_turns';
  if (t === 'JsonExtractError' || t === 'SyntaxError' || t === 'ZodError') return 'invalid_output';
  const m = message ?? '';
  if (/^cancel|\bcancell?ed\b|\baborted\b/i.test(m)) return 'cancelled';
  if (/\b(HTTP|status) 429\b|rate.?limit|too many requests/i.test(m)) return 'rate_limit';
  if (/\b(HTTP|status) 5\d\d\b|internal server error|bad gateway|service unavailable/i.test(m)) return 'server_error';
  if (/timed out|\btime-?out\b|ETIMEDOUT/i.test(m)) return 'timeout';
  if (/\b(HTTP|status) 4\d\d\b/i.test(m) || /^4\d\d$/.test(t)) return 'client_error';
  if (/connection (failed|refused|reset)|ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|socket hang up|fetch failed/i.test(m)) return 'connection';
  if (/recursion limit|max(imum)?[ _-]?turns|turn limit/i.test(m)) return 'max_turns';
  if (/\bjudge\b/i.test(m)) return 'judge_failed';
  if (/JSON|not a chat completion|unreadable response|could not be (parsed|used)|schema|invalid output|parse/i.test(m)) return 'invalid_output';
  return 'other';
}

interface Issue {
  kind: FailureKind;
  agent: string | null;
  message: string;
}

/** The failures one rollout's spans show (the rollout span itself is left to rollout.error). */
export function spanIssues(spans: readonly SpanRecord[]): Issue[] {
  const issues: Issue[] = [];
  const root = spans.find((s) => s.parentSpanId === null && s.kind === 'rollout');
  const ofAgent = (s: SpanRecord): string | null => (typeof s.attributes[Attr.agentName] === 'string' ? (s.attributes[Attr.agentName] as string) : null);
  for (const s of spans) {
    if (s.kind === 'rollout') continue;
    const type = typeof s.attributes[Attr.errorType] === 'string' ? (s.attributes[Attr.errorType] as string) : null;
    const outputBad = s.kind === 'node' && s.attributes['rollout_lab.output.ok'] === false;
    if (s.status !== 'error' && !type && !outputBad) continue;
    const message = s.statusMessage ?? (typeof s.attributes[Attr.parseError] === 'string' ? (s.attributes[Attr.parseError] as string) : '') ?? '';
    if (type === 'custom_reward_failed') {
      const why = root && typeof root.attributes['rollout_lab.reward.error'] === 'string' ? (root.attributes['rollout_lab.reward.error'] as string) : message;
      issues.push({ kind: 'custom_reward_failed', agent: null, message: why || 'the custom reward failed' });
    } else if (outputBad) {
      const why = typeof s.attributes[Attr.parseError] === 'string' ? (s.attributes[Attr.parseError] as string) : message;
      issues.push({ kind: 'invalid_output', agent: ofAgent(s), message: why || `${s.name} gave output that could not be used` });
    } else if (s.kind === 'tool') {
      issues.push({ kind: 'tool_error', agent: ofAgent(s), message: message || `tool ${s.name} failed` });
    } else if (s.kind !== 'node') {
      // Node spans that errored repeat the error of the call inside them; the call says more.
      issues.push({ kind: classifyFailure(message, type), agent: ofAgent(s), message: message || type || `${s.name} failed` });
    }
  }
  return issues;
}

function failureReport(store: TraceStore, finished: readonly RolloutRecord[], opts: EvaluationReportOptions): FailureReport {
  const budget = Math.max(0, opts.maxSpanReads ?? 200);
  const perCategory = Math.max(0, opts.examples ?? 5);
  const byKind = new Map<FailureKind, { rollouts: Set<string>; fatal: Set<string>; examples: FailureExample[] }>();
  const add = (r: RolloutRecord, issue: Issue, fatal: boolean): void => {
    let c = byKind.get(issue.kind);
    if (!c) byKind.set(issue.kind, (c = { rollouts: new Set(), fatal: new Set(), examples: [] }));
    if (c.rollouts.has(r.id)) return;
    c.rollouts.add(r.id);
    if (fatal) c.fatal.add(r.id);
    if (c.examples.length < perCategory) c.examples.push({ rolloutId: r.id, taskId: r.taskId, agent: issue.agent, message: clip(issue.message) });
  };

  let spansRead = 0;
  let unread = 0;
  const readSpans = (r: RolloutRecord): SpanRecord[] | null => {
    if (spansRead >= budget) {
      unread++;
      return null;
    }
    spansRead++;
    try {
      return store.getSpans(r.id);
    } catch {
      // A rollout whose spans cannot be read still counts by its record.
      return null;
    }
  };

  // Failed rollouts first: they are what the report must explain, so they get the span budget first.
  const failed = finished.filter((r) => r.status !== 'succeeded');
  for (const r of failed) {
    if (r.status === 'cancelled') {
      add(r, { kind: 'cancelled', agent: null, message: r.error ?? 'cancelled' }, true);
      continue;
    }
    let kind = classifyFailure(r.error);
    let agent: string | null = null;
    let message = r.error ?? 'failed without an error message';
    if (kind === 'other') {
      const spans = readSpans(r);
      const cause = spans ? spanIssues(spans).find((i) => i.kind !== 'other') : undefined;
      if (cause) {
        kind = cause.kind;
        agent = cause.agent;
        message = r.error ? `${r.error} (${cause.message})` : cause.message;
      }
    }
    add(r, { kind, agent, message }, true);
  }

  for (const r of finished) {
    if (r.status !== 'succeeded') continue;
    const suspect =
      r.judgeFailed ||
      r.agents.some((a) => a.errors > 0) ||
      (opts.customFailurePenalty !== undefined && r.finalReward === opts.customFailurePenalty);
    const issues: Issue[] = [];
    if (suspect) {
      const spans = readSpans(r);
      if (spans) issues.push(...spanIssues(spans));
    }
    if (r.judgeFailed && !issues.some((i) => i.kind === 'judge_failed')) {
      issues.push({ kind: 'judge_failed', agent: null, message: "the judge's answer could not be used; the failure penalty was applied" });
    }
    if (opts.maxTurns !== undefined && r.turns !== null && r.turns >= opts.maxTurns) {
      issues.push({ kind: 'max_turns', agent: null, message: `reached the turn limit (${r.turns} turns; runner.maxTurns is ${opts.maxTurns})` });
    }
    for (const i of issues) add(r, i, false);
  }

  const order = Object.keys(FAILURE_LABELS) as FailureKind[];
  const categories = [...byKind]
    .map(([kind, c]) => ({ kind, label: FAILURE_LABELS[kind], rollouts: c.rollouts.size, fatal: c.fatal.size, examples: c.examples }))
    .sort((a, b) => b.fatal - a.fatal || b.rollouts - a.rollouts || order.indexOf(a.kind) - order.indexOf(b.kind));
  const withIssues = new Set<string>();
  for (const c of byKind.values()) for (const id of c.rollouts) withIssues.add(id);
  return { categories, failedRollouts: failed.length, rolloutsWithIssues: withIssues.size, spansRead, unread };
}

function clip(s: string, max = 300): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}
