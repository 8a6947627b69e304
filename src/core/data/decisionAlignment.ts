import type { LabConfig } from '../config/schema';
import type { Decision } from './tasks';

/*
 * Decision alignment: whether the graph's decision agrees with the task's
 * expert answer. The one definition every surface reads (the rollouts table
 * and its filter, the evaluation report, the CLI, the comparison, the prompt
 * statistics, the trace diff); the table's filter runs it as SQL, built here
 * from the same mapping, so the two cannot drift apart.
 */

export type Alignment = 'aligned' | 'misaligned' | 'maybe' | 'unknown';

/** Which expert answer each decision of the graph stands for (lab.json `graph.decisions`), keys in any spelling. */
export type DecisionLabels = Readonly<Record<string, Decision>>;

/** The research lab decides GO or NO-GO on a yes / no question. */
export const RESEARCH_LAB_DECISIONS: DecisionLabels = { GO: 'yes', 'NO-GO': 'no', NOGO: 'no' };

const EXPERT_LABELS: readonly Decision[] = ['yes', 'no', 'maybe'];

/**
 * The mapping a lab's graph declares: `graph.decisions` when given (`{}`: none,
 * decisions are read as the labels themselves), else the research lab's GO /
 * NO-GO for the built-in graph and none for the user's own.
 */
export function decisionLabelsOf(config: Pick<LabConfig, 'graph'>): DecisionLabels {
  return config.graph.decisions ?? (config.graph.kind === 'research-lab' ? RESEARCH_LAB_DECISIONS : {});
}

// ASCII-only case folding and trimming: exactly what SQLite's upper(), lower() and trim() do, so the SQL below agrees.
const upper = (s: string): string => s.replace(/[a-z]+/g, (m) => m.toUpperCase());
const lower = (s: string): string => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
const trim = (s: string): string => s.replace(/^[ \t\n\r]+|[ \t\n\r]+$/g, '');

/** A decision's spelling as the mapping compares it: "no go", "No_Go" and "NO-GO" are one. */
export function decisionSpelling(decision: string): string {
  return trim(upper(decision)).replace(/[ \t\n\r_]/g, '-');
}

/** An expert label alignment knows: yes, no or maybe (any case); null for none or anything else. */
export function expertLabel(expected: string | null | undefined): Decision | null {
  if (expected === null || expected === undefined) return null;
  const e = lower(trim(expected));
  return (EXPERT_LABELS as readonly string[]).includes(e) ? (e as Decision) : null;
}

/** The mapping in the order it is applied: the declared spellings first, then each label read as itself. */
function mappingEntries(labels: DecisionLabels): Array<[string, Decision]> {
  const out = new Map<string, Decision>();
  for (const [k, v] of Object.entries(labels)) if (!out.has(decisionSpelling(k))) out.set(decisionSpelling(k), v);
  for (const l of EXPERT_LABELS) if (!out.has(upper(l))) out.set(upper(l), l);
  return [...out];
}

/** The expert answer a decision stands for under the graph's mapping; null for no decision or one the mapping does not know. */
export function decisionLabel(decision: string | null | undefined, labels: DecisionLabels = RESEARCH_LAB_DECISIONS): Decision | null {
  if (!decision) return null;
  const key = decisionSpelling(decision);
  return mappingEntries(labels).find(([k]) => k === key)?.[1] ?? null;
}

/**
 * A decision against the expert answer: aligned when the decision stands for
 * the task's "yes" or "no"; tasks answered "maybe" are reported apart; no
 * decision, a decision the mapping does not know, or no label: unknown.
 */
export function decisionAlignment(decision: string | null | undefined, expected: string | null | undefined, labels: DecisionLabels = RESEARCH_LAB_DECISIONS): Alignment {
  const exp = expertLabel(expected);
  if (!exp) return 'unknown';
  if (exp === 'maybe') return 'maybe';
  const d = decisionLabel(decision, labels);
  if (!d) return 'unknown';
  return d === exp ? 'aligned' : 'misaligned';
}

/**
 * Whether decision alignment means anything for these rollouts: some task is
 * labelled yes / no / maybe and the graph emits decisions its mapping reads. A
 * graph deciding CORRECT / INCORRECT without a mapping, or tasks without
 * expert labels, have no alignment to report.
 */
export function alignmentApplies(
  rollouts: ReadonlyArray<{ decision: string | null; expectedDecision: string | null }>,
  labels: DecisionLabels = RESEARCH_LAB_DECISIONS,
): boolean {
  return rollouts.some((r) => expertLabel(r.expectedDecision) !== null) && rollouts.some((r) => decisionLabel(r.decision, labels) !== null);
}

const sqlString = (s: string): string => `'${s.replace(/'/g, "''")}'`;
const SQL_BLANKS = "' ' || char(9) || char(10) || char(13)";

/** decisionLabel as SQL over a column: the same spelling rules and the same mapping, NULL where it gives null. */
function labelSql(column: string, labels: DecisionLabels): string {
  let spelled = `trim(upper(${column}), ${SQL_BLANKS})`;
  for (const c of ["' '", 'char(9)', 'char(10)', 'char(13)', "'_'"]) spelled = `replace(${spelled}, ${c}, '-')`;
  return `(CASE ${spelled} ${mappingEntries(labels).map(([k, v]) => `WHEN ${sqlString(k)} THEN ${sqlString(v)}`).join(' ')} END)`;
}

/**
 * A condition that holds where decisionAlignment(decision, expected, labels) is
 * `alignment` ('other': neither aligned nor misaligned — maybe or unknown).
 */
export function decisionAlignmentSql(alignment: 'aligned' | 'misaligned' | 'other', decisionColumn: string, expectedColumn: string, labels: DecisionLabels): string {
  const exp = `lower(trim(${expectedColumn}, ${SQL_BLANKS}))`;
  const label = labelSql(decisionColumn, labels);
  const decided = `(${exp} IN ('yes', 'no') AND ${label} IS NOT NULL)`;
  if (alignment === 'aligned') return `(${decided} AND ${label} = ${exp})`;
  if (alignment === 'misaligned') return `(${decided} AND ${label} <> ${exp})`;
  return `NOT COALESCE(${decided}, 0)`;
}
