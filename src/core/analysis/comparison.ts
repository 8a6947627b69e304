import { UsageError } from '../errors';
import { variantSpec, type Variant } from '../config/variantSpec';
import { isScored } from '../reward/scoredRollouts';
import type { TraceStore } from '../store/traceStore';
import type { RolloutRecord } from '../store/types';
import { RESEARCH_LAB_DECISIONS, alignmentApplies, decisionAlignment, expertLabel, type DecisionLabels } from '../data/decisionAlignment';
import { comparisonOfRun, type ComparisonRunParams, type ComparisonSideName } from './comparisonRunParams';
import { boundedMeanInterval, clipInterval, mean, pairedTTest, wilcoxonSignedRank } from './statistics';

/** Two stored runs compared task by task: the paired statistics of B − A. */

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
  const all = store.listRollouts({ runId, superseded: false, limit: Number.MAX_SAFE_INTEGER }).rollouts;
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

function alignedFraction(rs: readonly RolloutRecord[], expected: string | null, labels: DecisionLabels): number | null {
  const exp = expertLabel(expected);
  if (exp !== 'yes' && exp !== 'no') return null;
  if (rs.length === 0) return null;
  return rs.filter((r) => decisionAlignment(r.decision, r.expectedDecision, labels) === 'aligned').length / rs.length;
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
/** `labels`: the decision mapping the lab's graph declares (decisionLabelsOf). */
export function compareRuns(store: TraceStore, runA: string, runB: string, criteria: readonly string[], labels: DecisionLabels = RESEARCH_LAB_DECISIONS): ComparisonResult {
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
  const aligns = alignmentApplies([...A.rollouts, ...B.rollouts].filter(isScored), labels);
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
      const exp = expertLabel(expected);
      if (!aligns || (exp !== 'yes' && exp !== 'no')) continue;
      alignment[side].total += rs.length;
      alignment[side].aligned += rs.filter((r) => decisionAlignment(r.decision, r.expectedDecision, labels) === 'aligned').length;
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
      alignedA: aligns ? alignedFraction(ra, expected, labels) : null,
      alignedB: aligns ? alignedFraction(rb, expected, labels) : null,
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
