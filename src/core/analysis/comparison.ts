import { z } from 'zod';
import type { Task } from '../data/tasks';
import { UsageError } from '../errors';
import { alignmentApplies, decisionAlignment } from './alignment';
import { judgeMessages } from '../reward/judge';
import { boundedMeanInterval, clipInterval, mean, pairedTTest, wilcoxonSignedRank } from './statistics';
import { isScored } from '../reward/scoredRollouts';
import type { TraceStore } from '../store/traceStore';
import type { RolloutRecord, RunRecord } from '../store/types';
import { newTraceId } from '../trace/ids';
import { Attr, type SpanRecord } from '../trace/span';
import type { Lab } from '../lab/lab';
import { runRollouts, type PlannedTask, type RunProgress, type RunResult } from '../rollout/runner';
import type { RunWarning } from '../rollout/runWarnings';
import { variantSpec, type Variant } from '../lab/variant';

export type ComparisonSideName = 'a' | 'b';

/** What each run of a comparison records in its params, so the pair can be found again. */
export interface ComparisonRunParams {
  id: string;
  side: ComparisonSideName;
  label: string;
  variant: Variant;
}

const PromptSourceSchema = z.union([
  z.object({ version: z.string() }),
  z.object({ file: z.string() }),
  z.object({ text: z.string() }),
]);
const VariantSchema = z.object({
  label: z.string(),
  models: z.record(z.string(), z.string()).optional(),
  prompts: z.record(z.string(), PromptSourceSchema).optional(),
});
// Run params come from the store, which other versions or other tools may have written: read them defensively.
const ComparisonRunParamsSchema = z.object({ id: z.string().min(1), side: z.enum(['a', 'b']), label: z.string(), variant: VariantSchema });

/** The comparison a run belongs to, or null for an ordinary run. */
export function comparisonOfRun(run: RunRecord): ComparisonRunParams | null {
  const parsed = ComparisonRunParamsSchema.safeParse(run.params.comparison);
  return parsed.success ? (parsed.data as ComparisonRunParams) : null;
}

export interface ComparisonRequest {
  a: Variant;
  b: Variant;
  /** The same tasks run on both sides. */
  tasks: readonly PlannedTask[];
  /** Every task of the dataset, for the search tool's index (as Lab.environment takes it); default `tasks`. */
  allTasks?: readonly Task[];
  samples: number;
  concurrency: number;
  /** One seed for both sides: a task's sample gets the same model-call seed in A and in B. */
  seed: number;
  /** Recorded with both runs (dataset, split, limit...). */
  params?: Record<string, unknown>;
  signal?: AbortSignal;
  onProgress?: (side: ComparisonSideName, p: RunProgress) => void;
  onStart?: (side: ComparisonSideName, info: { runId: string; total: number }) => void;
  /** Each side's run reports each kind of warning once (see RunRequest.onWarning). */
  onWarning?: (side: ComparisonSideName, w: RunWarning) => void;
}

export interface ComparisonRun {
  id: string;
  runA: string;
  /** null when the comparison was cancelled before side B started. */
  runB: string | null;
  cancelled: boolean;
  a: RunResult;
  b: RunResult | null;
}

/**
 * Runs two configurations on the same tasks with the same seeds: side A to
 * the end, then side B. Both variants are checked (models, agents, prompt
 * versions) before the first rollout, so a mistake in B wastes no run of A.
 */
export async function runComparison(lab: Lab, req: ComparisonRequest): Promise<ComparisonRun> {
  if (req.tasks.length === 0) throw new UsageError('nothing to compare: the task selection is empty — pick another split or a larger --limit');
  const allTasks = req.allTasks ?? req.tasks;
  const envA = await lab.environment(allTasks, req.a);
  const envB = await lab.environment(allTasks, req.b);
  const id = `cmp-${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '')}-${newTraceId().slice(0, 6)}`;
  const run = async (side: ComparisonSideName, env: typeof envA, variant: Variant): Promise<RunResult> =>
    runRollouts(env, {
      tasks: req.tasks,
      samples: req.samples,
      concurrency: req.concurrency,
      seed: req.seed,
      params: {
        command: 'compare',
        ...req.params,
        samples: req.samples,
        seed: req.seed,
        comparison: { id, side, label: variant.label, variant } satisfies ComparisonRunParams,
      },
      signal: req.signal,
      onStart: ({ runId, total }) => req.onStart?.(side, { runId, total }),
      onProgress: (p) => req.onProgress?.(side, p),
      onWarning: (w) => req.onWarning?.(side, w),
    });
  const a = await run('a', envA, req.a);
  if (a.cancelled || req.signal?.aborted) return { id, runA: a.runId, runB: null, cancelled: true, a, b: null };
  const b = await run('b', envB, req.b);
  return { id, runA: a.runId, runB: b.runId, cancelled: b.cancelled, a, b };
}

// ---- comparing two stored runs --------------------------------------------

export interface ComparisonSide {
  runId: string;
  label: string;
  /** The variant's spec string (see parseVariantSpec); null for a run that was not made by a comparison. */
  spec: string | null;
  variant: Variant | null;
  /** Finished rollouts (succeeded and failed). */
  rollouts: number;
  succeeded: number;
  failed: number;
  simulated: boolean;
  startTime: number;
}

/** One task run on both sides; samples of a side are averaged. Differences are B − A. */
export interface TaskComparison {
  taskId: string;
  expectedDecision: string | null;
  rewardA: number;
  rewardB: number;
  difference: number;
  samplesA: number;
  samplesB: number;
  /** The decision of each scored sample, in sample order. */
  decisionsA: Array<string | null>;
  decisionsB: Array<string | null>;
  /** Fraction of samples whose decision matches a yes/no expected decision; null when the task is not labelled yes or no. */
  alignedA: number | null;
  alignedB: number | null;
  /** Mean judge score per criterion over samples whose judge did not fail; null where none has it. */
  criteriaA: Record<string, number | null>;
  criteriaB: Record<string, number | null>;
  rolloutIdsA: string[];
  rolloutIdsB: string[];
}

export interface UnpairedTask {
  taskId: string;
  /** The side that has a scored rollout of the task, or null when neither does. */
  scoredIn: ComparisonSideName | null;
  reason: string;
}

export interface CriterionDifference {
  criterion: string;
  /** Tasks with a score on both sides. */
  n: number;
  meanA: number | null;
  meanB: number | null;
  /** Mean of B − A over those tasks. */
  difference: number | null;
  ci: [number, number] | null;
  /** Paired t-test, two-sided; null below two pairs. */
  pValue: number | null;
}

export interface AlignmentSide {
  /** Scored samples of yes/no tasks whose decision matches. */
  aligned: number;
  total: number;
  /** Percent; null when no paired task is labelled yes or no. */
  percent: number | null;
}

export type ComparisonVerdict = 'b-better' | 'a-better' | 'no-significant-difference' | 'too-few-pairs';

export interface ComparisonAggregate {
  pairs: number;
  meanA: number | null;
  meanB: number | null;
  ciA: [number, number] | null;
  ciB: [number, number] | null;
  /** Mean of B − A over the paired tasks, with the paired t interval. */
  meanDifference: number | null;
  ciDifference: [number, number] | null;
  pairedT: { t: number; df: number; pValue: number } | null;
  wilcoxon: { wPlus: number; n: number; zeros: number; method: 'exact' | 'normal'; pValue: number } | null;
  /** Paired t p-value below `alpha`. */
  significant: boolean;
  verdict: ComparisonVerdict;
  /** The result in one sentence. */
  summary: string;
  criteria: CriterionDifference[];
  alignment: { a: AlignmentSide; b: AlignmentSide };
  /** Paired tasks where B scored higher, equal, lower. */
  wins: number;
  ties: number;
  losses: number;
}

export interface ComparisonResult {
  /** The comparison id when both runs were made by one; null for two runs compared after the fact. */
  id: string | null;
  a: ComparisonSide;
  b: ComparisonSide;
  criteria: string[];
  /** Confidence level of every interval (0.95). */
  level: number;
  alpha: number;
  tasks: TaskComparison[];
  unpaired: UnpairedTask[];
  aggregate: ComparisonAggregate;
  simulated: boolean;
}

const LEVEL = 0.95;
const ALPHA = 0.05;

/** A difference of two 0..1 rewards lies in −1..1, and so does its interval. */
const DIFFERENCE_RANGE: readonly [number, number] = [-1, 1];

/** Mean of values summed in sorted order, so the same values give the same float whatever their order. */
function stableMean(xs: readonly number[]): number | null {
  return mean([...xs].sort((x, y) => x - y));
}

function sideOf(store: TraceStore, runId: string, what: string): { side: ComparisonSide; rollouts: RolloutRecord[]; cmp: ComparisonRunParams | null } {
  const run = store.getRun(runId);
  if (!run) throw new UsageError(`${what} run "${runId}" is not in this workspace's store — list runs with \`rollout-lab traces\``);
  const all = store.listRollouts({ runId, limit: Number.MAX_SAFE_INTEGER }).rollouts;
  const finished = all.filter((r) => r.status === 'succeeded' || r.status === 'failed');
  const cmp = comparisonOfRun(run);
  return {
    cmp,
    rollouts: finished,
    side: {
      runId,
      label: cmp?.label ?? runId,
      spec: cmp ? variantSpec(cmp.variant) : null,
      variant: cmp?.variant ?? null,
      rollouts: finished.length,
      succeeded: finished.filter((r) => r.status === 'succeeded').length,
      failed: finished.filter((r) => r.status === 'failed').length,
      simulated: run.simulated,
      startTime: run.startTime,
    },
  };
}

function groupByTask(rollouts: readonly RolloutRecord[]): Map<string, RolloutRecord[]> {
  const m = new Map<string, RolloutRecord[]>();
  for (const r of rollouts) {
    const list = m.get(r.taskId) ?? [];
    list.push(r);
    m.set(r.taskId, list);
  }
  for (const list of m.values()) list.sort((x, y) => x.sample - y.sample || x.startTime - y.startTime);
  return m;
}

function criterionMeans(rs: readonly RolloutRecord[], criteria: readonly string[]): Record<string, number | null> {
  const judged = rs.filter((r) => r.criteria && !r.judgeFailed);
  const out: Record<string, number | null> = {};
  for (const c of criteria) out[c] = stableMean(judged.map((r) => r.criteria![c]).filter((x): x is number => typeof x === 'number'));
  return out;
}

function alignedFraction(rs: readonly RolloutRecord[], expected: string | null): number | null {
  const exp = expected?.toLowerCase();
  if (exp !== 'yes' && exp !== 'no') return null;
  if (rs.length === 0) return null;
  return rs.filter((r) => decisionAlignment(r.decision, r.expectedDecision) === 'aligned').length / rs.length;
}

function fmt(x: number): string {
  return x.toFixed(3);
}

function pText(p: number): string {
  return p < 0.001 ? 'p < 0.001' : `p = ${p.toFixed(3)}`;
}

/**
 * Compares two stored runs task by task. Tasks are paired by task id; a
 * task's samples are averaged on each side; every rollout with a reward
 * counts (isScored: a rollout whose graph gave no output counts with the
 * reward it was given). A task with no scored rollout on one side is listed apart
 * (`unpaired`) and left out of the statistics. Differences are B − A.
 */
export function compareRuns(store: TraceStore, runA: string, runB: string, criteria: readonly string[]): ComparisonResult {
  if (runA === runB) throw new UsageError(`compare needs two different runs (got ${runA} twice)`);
  const A = sideOf(store, runA, 'side A');
  const B = sideOf(store, runB, 'side B');
  const names = criteria.length ? [...criteria] : [...new Set([...A.rollouts, ...B.rollouts].flatMap((r) => Object.keys(r.criteria ?? {})))].sort();
  const byA = groupByTask(A.rollouts);
  const byB = groupByTask(B.rollouts);
  const taskIds = [...new Set([...byA.keys(), ...byB.keys()])];

  const tasks: TaskComparison[] = [];
  const unpaired: UnpairedTask[] = [];
  const alignment = { a: { aligned: 0, total: 0, percent: null as number | null }, b: { aligned: 0, total: 0, percent: null as number | null } };
  // As in the evaluation table: no alignment for a graph whose decisions are not GO / NO-GO (CORRECT / INCORRECT...).
  const aligns = alignmentApplies([...A.rollouts, ...B.rollouts].filter(isScored));
  for (const taskId of taskIds) {
    const ra = (byA.get(taskId) ?? []).filter(isScored);
    const rb = (byB.get(taskId) ?? []).filter(isScored);
    if (ra.length === 0 || rb.length === 0) {
      const why = (side: string, all: RolloutRecord[] | undefined): string =>
        !all || all.length === 0 ? `not run in ${side}` : `no scored rollout in ${side} (${all.length} failed)`;
      const reasons = [ra.length ? null : why('A', byA.get(taskId)), rb.length ? null : why('B', byB.get(taskId))].filter(Boolean);
      unpaired.push({ taskId, scoredIn: ra.length ? 'a' : rb.length ? 'b' : null, reason: reasons.join('; ') });
      continue;
    }
    const expected = ra[0]!.expectedDecision ?? rb[0]!.expectedDecision;
    const rewardA = stableMean(ra.map((r) => r.finalReward!))!;
    const rewardB = stableMean(rb.map((r) => r.finalReward!))!;
    for (const [side, rs] of [['a', ra], ['b', rb]] as const) {
      const exp = expected?.toLowerCase();
      if (!aligns || (exp !== 'yes' && exp !== 'no')) continue;
      alignment[side].total += rs.length;
      alignment[side].aligned += rs.filter((r) => decisionAlignment(r.decision, r.expectedDecision) === 'aligned').length;
    }
    tasks.push({
      taskId,
      expectedDecision: expected,
      rewardA,
      rewardB,
      difference: rewardB - rewardA,
      samplesA: ra.length,
      samplesB: rb.length,
      decisionsA: ra.map((r) => r.decision),
      decisionsB: rb.map((r) => r.decision),
      alignedA: aligns ? alignedFraction(ra, expected) : null,
      alignedB: aligns ? alignedFraction(rb, expected) : null,
      criteriaA: criterionMeans(ra, names),
      criteriaB: criterionMeans(rb, names),
      rolloutIdsA: ra.map((r) => r.id),
      rolloutIdsB: rb.map((r) => r.id),
    });
  }
  for (const s of [alignment.a, alignment.b]) s.percent = s.total ? (100 * s.aligned) / s.total : null;
  // Largest improvement first: the order a reader scans for "where did B help".
  tasks.sort((x, y) => y.difference - x.difference || x.taskId.localeCompare(y.taskId));
  unpaired.sort((x, y) => x.taskId.localeCompare(y.taskId));

  const a = tasks.map((t) => t.rewardA);
  const b = tasks.map((t) => t.rewardB);
  const t = pairedTTest(a, b, LEVEL);
  const w = wilcoxonSignedRank(a, b);
  const criteriaDiffs: CriterionDifference[] = names.map((criterion) => {
    const pairs = tasks.filter((x) => typeof x.criteriaA[criterion] === 'number' && typeof x.criteriaB[criterion] === 'number');
    const ca = pairs.map((x) => x.criteriaA[criterion]!);
    const cb = pairs.map((x) => x.criteriaB[criterion]!);
    const ct = pairedTTest(ca, cb, LEVEL);
    const inUnit = [...ca, ...cb].every((x) => x >= 0 && x <= 1);
    return {
      criterion,
      n: pairs.length,
      meanA: mean(ca),
      meanB: mean(cb),
      difference: pairs.length ? mean(cb.map((v, i) => v - ca[i]!)) : null,
      ci: inUnit ? clipInterval(ct?.ci ?? null, DIFFERENCE_RANGE) : (ct?.ci ?? null),
      pValue: ct?.pValue ?? null,
    };
  });
  const meanDifference = tasks.length ? mean(tasks.map((x) => x.difference)) : null;
  // Rewards lie in 0..1 (a custom reward is checked to), so no interval may reach past what they can take.
  const ciDifference = [...a, ...b].every((x) => x >= 0 && x <= 1) ? clipInterval(t?.ci ?? null, DIFFERENCE_RANGE) : (t?.ci ?? null);
  const significant = t !== null && t.pValue < ALPHA;
  const verdict: ComparisonVerdict = !t ? 'too-few-pairs' : !significant ? 'no-significant-difference' : t.delta > 0 ? 'b-better' : 'a-better';
  const aggregate: ComparisonAggregate = {
    pairs: tasks.length,
    meanA: mean(a),
    meanB: mean(b),
    ciA: boundedMeanInterval(a, LEVEL),
    ciB: boundedMeanInterval(b, LEVEL),
    meanDifference,
    ciDifference,
    pairedT: t ? { t: t.t, df: t.df, pValue: t.pValue } : null,
    wilcoxon: w ? { wPlus: w.wPlus, n: w.n, zeros: w.zeros, method: w.method, pValue: w.pValue } : null,
    significant,
    verdict,
    summary: summarise(A.side.label, B.side.label, tasks.length, meanDifference, ciDifference, t?.pValue ?? null, w?.pValue ?? null, significant),
    criteria: criteriaDiffs,
    alignment,
    wins: tasks.filter((x) => x.difference > 0).length,
    ties: tasks.filter((x) => x.difference === 0).length,
    losses: tasks.filter((x) => x.difference < 0).length,
  };
  const id = A.cmp && B.cmp && A.cmp.id === B.cmp.id ? A.cmp.id : null;
  return { id, a: A.side, b: B.side, criteria: names, level: LEVEL, alpha: ALPHA, tasks, unpaired, aggregate, simulated: A.side.simulated || B.side.simulated };
}

function summarise(
  labelA: string,
  labelB: string,
  n: number,
  delta: number | null,
  ci: [number, number] | null,
  pT: number | null,
  pW: number | null,
  significant: boolean,
): string {
  if (n === 0 || delta === null) return 'no task has a scored rollout on both sides: nothing to compare';
  const dir = delta > 0 ? `B (${labelB}) scores ${fmt(delta)} higher than A (${labelA})` : delta < 0 ? `B (${labelB}) scores ${fmt(-delta)} lower than A (${labelA})` : `B (${labelB}) and A (${labelA}) score the same on average`;
  const tasks = `on ${n} paired task${n === 1 ? '' : 's'}`;
  if (pT === null || !ci) return `${dir} ${tasks}; fewer than two paired tasks, so no significance test`;
  const tests = `paired t ${pText(pT)}${pW === null ? '' : `, Wilcoxon ${pText(pW)}`}`;
  const interval = `95 % CI ${fmt(ci[0])} to ${fmt(ci[1])}`;
  return significant
    ? `${dir} ${tasks} (${interval}); ${tests}: significant at the 5 % level`
    : `${dir} ${tasks} (${interval}); ${tests}: not significant at the 5 % level (the difference may be chance)`;
}

// ---- stored comparisons -----------------------------------------------------

export interface ComparisonSummary {
  id: string;
  runA: string | null;
  runB: string | null;
  labelA: string;
  labelB: string;
  specA: string | null;
  specB: string | null;
  startTime: number;
  /** 'done' when both runs finished; otherwise the state of the pair. */
  status: 'done' | 'running' | 'cancelled' | 'incomplete';
  simulated: boolean;
}

/** Comparisons found in the runs' params, newest first. */
export function listComparisons(store: TraceStore): ComparisonSummary[] {
  const byId = new Map<string, { a?: RunRecord & { cmp: ComparisonRunParams }; b?: RunRecord & { cmp: ComparisonRunParams } }>();
  for (const run of store.listRuns()) {
    const cmp = comparisonOfRun(run);
    if (!cmp) continue;
    const entry = byId.get(cmp.id) ?? {};
    const prev = entry[cmp.side];
    // A side run twice (resumed elsewhere, say) keeps its latest run.
    if (!prev || prev.startTime < run.startTime) entry[cmp.side] = { ...run, cmp };
    byId.set(cmp.id, entry);
  }
  const out: ComparisonSummary[] = [];
  for (const [id, { a, b }] of byId) {
    const runs = [a, b].filter((r): r is NonNullable<typeof r> => r !== undefined);
    const status: ComparisonSummary['status'] = runs.some((r) => r.status === 'running')
      ? 'running'
      : runs.some((r) => r.status === 'cancelled')
        ? 'cancelled'
        : a && b && a.status === 'done' && b.status === 'done'
          ? 'done'
          : 'incomplete';
    out.push({
      id,
      runA: a?.id ?? null,
      runB: b?.id ?? null,
      labelA: a?.cmp.label ?? 'A',
      labelB: b?.cmp.label ?? 'B',
      specA: a ? variantSpec(a.cmp.variant) : null,
      specB: b ? variantSpec(b.cmp.variant) : null,
      startTime: Math.min(...runs.map((r) => r.startTime)),
      status,
      simulated: runs.some((r) => r.simulated),
    });
  }
  return out.sort((x, y) => y.startTime - x.startTime);
}

// ---- one task's protocols -------------------------------------------------

/** One sample of a task on one side, with the protocol the judge scored. */
export interface ProtocolSample {
  rolloutId: string;
  sample: number;
  status: RolloutRecord['status'];
  finalReward: number | null;
  decision: string | null;
  criteria: Record<string, number> | null;
  judgeFailed: boolean;
  rationale: string | null;
  /** The text the judge scored; null when the rollout produced none. */
  protocol: string | null;
  /** Where `protocol` was read: the root span (rollouts stored since it is recorded there) or the judge's input (older ones). */
  protocolSource: 'output' | 'judge-input' | null;
  error: string | null;
}

export interface ComparisonTaskSide {
  runId: string;
  label: string;
  samples: ProtocolSample[];
}

export interface ComparisonTaskDetail {
  taskId: string;
  goal: string | null;
  expectedDecision: string | null;
  a: ComparisonTaskSide;
  b: ComparisonTaskSide;
}

/**
 * Both sides' protocols for one task with their judge scores and rationale.
 * Loaded per task on demand: protocols are the large part of a trace.
 */
export function comparisonTask(store: TraceStore, comparison: { runA: string; runB: string }, taskId: string): ComparisonTaskDetail {
  const task: { goal: string | null; expected: string | null } = { goal: null, expected: null };
  const side = (runId: string, what: string): ComparisonTaskSide => {
    const run = store.getRun(runId);
    if (!run) throw new UsageError(`${what} run "${runId}" is not in this workspace's store`);
    const rollouts = store
      .listRollouts({ runId, taskId, limit: Number.MAX_SAFE_INTEGER })
      .rollouts.filter((r) => r.status === 'succeeded' || r.status === 'failed')
      .sort((x, y) => x.sample - y.sample || x.startTime - y.startTime);
    const samples = rollouts.map((r): ProtocolSample => {
      const spans = store.getSpans(r.id);
      const root = spans.find((s) => s.parentSpanId === null && s.kind === 'rollout');
      const g = root?.attributes[Attr.taskGoal];
      if (task.goal === null && typeof g === 'string') task.goal = g;
      task.expected ??= r.expectedDecision;
      const { text, source } = protocolOf(spans, root);
      const judge = judgeSpan(spans);
      const rationale = judge?.attributes[Attr.judgeRationale];
      return {
        rolloutId: r.id,
        sample: r.sample,
        status: r.status,
        finalReward: r.finalReward,
        decision: r.decision,
        criteria: r.criteria,
        judgeFailed: r.judgeFailed,
        rationale: typeof rationale === 'string' && rationale ? rationale : null,
        protocol: text,
        protocolSource: source,
        error: r.error,
      };
    });
    return { runId, label: comparisonOfRun(run)?.label ?? runId, samples };
  };
  const a = side(comparison.runA, 'side A');
  const b = side(comparison.runB, 'side B');
  if (a.samples.length === 0 && b.samples.length === 0) {
    throw new UsageError(`task "${taskId}" has no finished rollout in ${comparison.runA} or ${comparison.runB}`);
  }
  return { taskId, goal: task.goal, expectedDecision: task.expected, a, b };
}

function judgeSpan(spans: readonly SpanRecord[]): SpanRecord | undefined {
  return spans.find((s) => s.kind === 'reward' && s.attributes[Attr.rewardKind] === 'judge');
}

function protocolOf(spans: readonly SpanRecord[], root: SpanRecord | undefined): { text: string | null; source: ProtocolSample['protocolSource'] } {
  const own = root?.attributes[Attr.finalOutput];
  if (typeof own === 'string') return { text: own, source: 'output' };
  if (root && Attr.finalOutput in root.attributes) return { text: null, source: null };
  // Rollouts stored before the root kept the output: read what the judge was shown.
  const judge = judgeSpan(spans);
  if (!judge) return { text: null, source: null };
  const call = spans.filter((s) => s.kind === 'llm' && s.parentSpanId === judge.spanId).sort((x, y) => x.startTime - y.startTime)[0];
  const raw = call?.attributes[Attr.inputMessages];
  if (typeof raw !== 'string') return { text: null, source: null };
  let messages: Array<{ role?: unknown; content?: unknown }>;
  try {
    messages = JSON.parse(raw) as typeof messages;
  } catch {
    return { text: null, source: null };
  }
  for (const m of Array.isArray(messages) ? messages : []) {
    if (m.role !== 'user' || typeof m.content !== 'string') continue;
    const text = protocolInJudgeMessage(m.content);
    if (text !== null) return { text, source: 'judge-input' };
  }
  return { text: null, source: null };
}

const SENTINEL = '\u0000protocol\u0000';
let markers: { before: string; after: string } | null = null;

/**
 * The protocol inside the judge's user message. The markers around it are
 * taken from judgeMessages itself (built once around a sentinel), so they
 * follow any change to the judge's wording.
 */
export function protocolInJudgeMessage(content: string): string | null {
  if (!markers) {
    const human = judgeMessages({ goal: '', context: '', output: SENTINEL, criteria: {} })[1]!.content as string;
    const at = human.indexOf(SENTINEL);
    const head = human.slice(0, at);
    const tail = human.slice(at + SENTINEL.length);
    const afterEnd = tail.indexOf('\n', tail.search(/[^\n]/));
    markers = { before: head.slice(head.lastIndexOf('\n\n')), after: tail.slice(0, afterEnd + 1) };
  }
  const start = content.indexOf(markers.before);
  const end = content.lastIndexOf(markers.after);
  if (start < 0 || end < start + markers.before.length) return null;
  return content.slice(start + markers.before.length, end);
}
