import type { RolloutRecord } from '../store/types';
import { RESEARCH_LAB_DECISIONS, expertLabel, type DecisionLabels } from '../data/decisionAlignment';
import { decisionKey } from './metrics';
import { meanStat, type MeanStat } from './reportStats';
import { UNIT_RANGE, finiteNumbers, mean } from './statistics';

/*
 * The breakdowns that explain an evaluation table: per judge criterion (its
 * weight and what it adds to the reward), per agent (calls, errors, tokens,
 * latency, versions) and per decision against the expected answers.
 */

/** The judge's criteria as the lab configures them. */
export type ReportCriteria = Record<string, { weight: number; description?: string }>;

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

/** One row per judge criterion over the cleanly judged rollouts, with its weight and its share of the judged reward. */
export function criterionReports(done: readonly RolloutRecord[], names: readonly string[], config: ReportCriteria): CriterionReport[] {
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

/** One row per agent over the finished rollouts it ran in, by name. */
export function agentReports(finished: readonly RolloutRecord[]): AgentReport[] {
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
export function decisionReport(scored: readonly RolloutRecord[], alignment: boolean, labels: DecisionLabels = RESEARCH_LAB_DECISIONS): DecisionReport {
  const rows = scored.map((r) => ({ r, d: decisionKey(r.decision, alignment, labels) ?? NO_DECISION, e: expectedLabel(r.expectedDecision) }));
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
