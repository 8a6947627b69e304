import type { AirRule } from '../../src/core/config/schema';
import type { CriterionInfo } from '../../src/shared/weightsProtocol';

/*
 * The form as the user edits it: text as typed (a weight field may hold "0."
 * for a moment), checked here before anything is sent, and kept with
 * setState so a reload brings back unsaved edits.
 */

export interface DraftCriterion {
  /** Stable id of the row while its name is edited. */
  key: string;
  name: string;
  description: string;
  weight: string;
}

export interface DraftRule {
  key: string;
  name: string;
  when: string;
  /** Comma-separated; empty means every agent (or tool). */
  agents: string;
  tools: string;
  reward: string;
}

export interface Draft {
  criteria: DraftCriterion[];
  air: DraftRule[];
}

export const AIR_EVENTS = ['tool.ok', 'tool.error', 'output.valid', 'output.invalid'] as const;

const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

let counter = 0;
export function newKey(prefix: string): string {
  counter += 1;
  return `${prefix}${Date.now().toString(36)}${counter}`;
}

/** Weights as text: short, without float noise (0.30000000000000004 → "0.3"). */
export function weightText(w: number): string {
  return String(Number(w.toPrecision(10)));
}

export function draftFromConfig(criteria: readonly CriterionInfo[], air: readonly AirRule[]): Draft {
  return {
    criteria: criteria.map((c, i) => ({ key: `c${i}`, name: c.name, description: c.description, weight: weightText(c.weight) })),
    air: air.map((r, i) => ({
      key: `r${i}`,
      name: r.name,
      when: r.when,
      agents: (r.agents ?? []).join(', '),
      tools: (r.tools ?? []).join(', '),
      reward: String(r.reward),
    })),
  };
}

/** A weight field's number, or null when it is not a finite number of 0 or more. */
export function parseWeight(text: string): number | null {
  if (text.trim() === '') return null;
  const n = Number(text);
  return Number.isFinite(n) && n >= 0 ? n : null;
}

export interface CriteriaCheck {
  /** Problem per row key ('' for the form as a whole). */
  problems: Map<string, string>;
  /** The weights to score with; null while some row has a problem. */
  weights: Record<string, { weight: number }> | null;
  sum: number;
}

export function checkCriteria(rows: readonly DraftCriterion[]): CriteriaCheck {
  const problems = new Map<string, string>();
  const seen = new Map<string, string>();
  let sum = 0;
  for (const r of rows) {
    const name = r.name.trim();
    const w = parseWeight(r.weight);
    if (!name) problems.set(r.key, 'Give the criterion a name.');
    else if (!NAME.test(name)) problems.set(r.key, `"${name}": use letters, digits, "_", "-" or "." and start with a letter.`);
    else if (seen.has(name)) problems.set(r.key, `Another criterion is already called "${name}".`);
    else if (w === null) problems.set(r.key, 'The weight must be a number of 0 or more.');
    else if (!r.description.trim()) problems.set(r.key, 'Describe what the judge scores under this criterion.');
    seen.set(name, r.key);
    if (w !== null) sum += w;
  }
  if (rows.length === 0) problems.set('', 'Keep at least one criterion: the judge needs something to score.');
  else if (problems.size === 0 && sum <= 0) problems.set('', 'Every weight is 0: give at least one criterion a weight above 0.');
  const weights = problems.size === 0 ? Object.fromEntries(rows.map((r) => [r.name.trim(), { weight: parseWeight(r.weight)! }])) : null;
  return { problems, weights, sum };
}

/** The criteria as the host saves them. */
export function criteriaForSave(rows: readonly DraftCriterion[]): Record<string, { weight: number; description: string }> {
  return Object.fromEntries(rows.map((r) => [r.name.trim(), { weight: parseWeight(r.weight) ?? Number.NaN, description: r.description.trim() }]));
}

function list(text: string): string[] | undefined {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return items.length ? items : undefined;
}

/** Rules as the host validates them: fields that do not parse go as typed, so the host's message names them. */
export function rulesForHost(rules: readonly DraftRule[]): unknown[] {
  return rules.map((r) => {
    const reward = r.reward.trim() === '' ? r.reward : Number(r.reward);
    const out: Record<string, unknown> = { name: r.name.trim(), when: r.when };
    const agents = list(r.agents);
    const tools = list(r.tools);
    if (agents) out.agents = agents;
    if (tools) out.tools = tools;
    out.reward = typeof reward === 'number' && Number.isNaN(reward) ? r.reward : reward;
    return out;
  });
}

/** Whether the form differs from what lab.json holds. */
export function isDirty(draft: Draft, saved: Draft): boolean {
  const c = (d: Draft): string =>
    JSON.stringify({
      criteria: d.criteria.map((r) => [r.name.trim(), r.description.trim(), parseWeight(r.weight) ?? r.weight]),
      air: rulesForHost(d.air),
    });
  return c(draft) !== c(saved);
}

/** The row a validation issue concerns, from its path ("[2].agents[0]", "air[2].when", "2.reward"); null for the list as a whole. */
export function ruleIndexOf(path: string): number | null {
  const m = /^(?:air)?\[?(\d+)\]?/.exec(path);
  return m ? Number(m[1]) : null;
}
