import type { z } from 'zod';
import { AirRuleSchema, RESEARCH_LAB_TOOLS, type AirRule, type LabConfig } from '../config/schema';
import type { SpanRecord } from '../trace/span';
import { airTotalsByAgent, applyAirRules, type AirReward } from './air';

/** One problem with the AIR rules, located like "air[2].reward". Errors stop the rules from being used; warnings do not. */
export interface AirRuleIssue {
  path: string;
  message: string;
  severity: 'error' | 'warning';
}

/** What a set of AIR rules would give on one rollout. */
export interface AirPreview {
  /** Every firing, in span start order. */
  rewards: Array<AirReward & { spanName: string; startTime: number }>;
  /** Every rule, also those that never fired (count 0). */
  byRule: Record<string, { count: number; total: number }>;
  /** Sum per agent ("(graph)" for spans without one). */
  byAgent: Record<string, number>;
  total: number;
  /** Spans looked at (all of the rollout's). */
  spansChecked: number;
}

const TOOL_EVENTS: ReadonlySet<AirRule['when']> = new Set(['tool.ok', 'tool.error']);
const RULE_FIELDS = 'name, when, agents, tools and reward';
const EXAMPLE = '{ "name": "search-ok", "when": "tool.ok", "reward": 0.1 }';

/** How to fix each field, for messages that say more than the schema's own. */
const FIELD_HINTS: Record<string, string> = {
  name: 'a label such as "search-ok" (letters, digits, "_", "-" or ".", starting with a letter)',
  when: 'one of "tool.ok", "tool.error", "output.valid", "output.invalid"',
  agents: 'a list of agent names such as ["Geneticist"]',
  tools: 'a list of tool names such as ["pubmed_search"]',
  reward: 'a number from -1 to 1, such as 0.1 or -0.2',
};

/** The names AIR rules can match in a lab. */
export interface AirTargets {
  agents: readonly string[];
  tools: readonly string[];
  /**
   * A module graph brings its own tools, which lab.json need not list: an
   * unlisted tool name may still run, so a rule naming one is only flagged
   * as unchecked.
   */
  toolsMayBeUnlisted?: boolean;
}

/**
 * Agent and tool names AIR rules can match in this lab: the configured agents,
 * and the tools they may call (for the built-in graph, only its own tools can
 * ever run, whatever an agent lists).
 */
export function knownAirTargets(config: LabConfig): { agents: string[]; tools: string[]; toolsMayBeUnlisted: boolean } {
  const agents = Object.keys(config.agents).sort();
  const listed = new Set(Object.values(config.agents).flatMap((a) => a.tools));
  const builtIn = config.graph.kind === 'research-lab' ? new Set<string>(RESEARCH_LAB_TOOLS) : null;
  const tools = [...listed].filter((t) => !builtIn || builtIn.has(t)).sort();
  return { agents, tools, toolsMayBeUnlisted: builtIn === null };
}

/**
 * Checks AIR rules as a user wrote them (lab.json's "air", or the editor's
 * form). Errors: not a list, a rule that breaks the schema, a name used twice.
 * Warnings flag rules that are valid but can never fire or change nothing:
 * unknown agent or tool names, a tool filter on an output event, an empty
 * filter, a reward of 0. `rules` is null when there is any error.
 */
export function validateAirRules(raw: unknown, known: AirTargets): { rules: AirRule[] | null; issues: AirRuleIssue[] } {
  const issues: AirRuleIssue[] = [];
  const error = (path: string, message: string): void => void issues.push({ path, message, severity: 'error' });
  const warn = (path: string, message: string): void => void issues.push({ path, message, severity: 'warning' });
  if (!Array.isArray(raw)) {
    error('air', `"air" must be a list of rules such as [${EXAMPLE}], not ${kindOf(raw)}`);
    return { rules: null, issues };
  }
  const rules: AirRule[] = [];
  const firstByName = new Map<string, number>();
  raw.forEach((item, i) => {
    const at = `air[${i}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      error(at, `a rule must be an object such as ${EXAMPLE}, not ${kindOf(item)}`);
      return;
    }
    const parsed = AirRuleSchema.safeParse(item);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) issues.push(...schemaIssues(at, issue, item as Record<string, unknown>));
      const name = (item as { name?: unknown }).name;
      if (typeof name === 'string') checkDuplicate(name, i, at, firstByName, error);
      return;
    }
    const rule = parsed.data;
    checkDuplicate(rule.name, i, at, firstByName, error);
    rules.push(rule);
    const isToolEvent = TOOL_EVENTS.has(rule.when);
    if (rule.agents?.length === 0) warn(`${at}.agents`, `an empty "agents" list matches no agent, so the rule never fires; remove "agents" to match every agent`);
    rule.agents?.forEach((agent, k) => {
      if (!known.agents.includes(agent)) {
        warn(`${at}.agents[${k}]`, `agent "${agent}" is not in this lab, so the rule never fires for it; known agents: ${listOrNone(known.agents)}`);
      }
    });
    if (rule.tools && !isToolEvent) {
      warn(`${at}.tools`, `"tools" only matches tool calls, so this "${rule.when}" rule can never fire; remove "tools" or use "when": "tool.ok" or "tool.error"`);
    } else if (rule.tools?.length === 0) {
      warn(`${at}.tools`, `an empty "tools" list matches no tool, so the rule never fires; remove "tools" to match every tool`);
    } else {
      rule.tools?.forEach((tool, k) => {
        if (known.tools.includes(tool)) return;
        if (known.toolsMayBeUnlisted) {
          warn(
            `${at}.tools[${k}]`,
            `tool "${tool}" is not listed under any agent's "tools" in lab.json, so it cannot be checked: the rule fires only if your graph runs a tool of exactly that name; list it under the agent's "tools" (listed: ${listOrNone(known.tools)})`,
          );
        } else {
          warn(`${at}.tools[${k}]`, `tool "${tool}" is not one the agents may call, so the rule never fires for it; known tools: ${listOrNone(known.tools)}`);
        }
      });
    }
    if (rule.reward === 0) warn(`${at}.reward`, `a reward of 0 changes nothing; give it a positive or negative reward, or remove the rule`);
  });
  return { rules: issues.some((x) => x.severity === 'error') ? null : rules, issues };
}

/**
 * The intermediate rewards `rules` give on a rollout's spans, with totals per
 * rule and per agent: what the rules would have added to that rollout. Reads
 * only the spans; no model is called.
 */
export function previewAirRules(rules: readonly AirRule[], spans: readonly SpanRecord[]): AirPreview {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const rewards = applyAirRules(rules, spans)
    .map((r) => {
      const span = byId.get(r.spanId)!;
      return { ...r, spanName: span.name, startTime: span.startTime };
    })
    .sort((a, b) => a.startTime - b.startTime);
  const byRule: Record<string, { count: number; total: number }> = {};
  for (const rule of rules) byRule[rule.name] ??= { count: 0, total: 0 };
  for (const r of rewards) {
    const entry = (byRule[r.rule] ??= { count: 0, total: 0 });
    entry.count++;
    entry.total += r.reward;
  }
  return {
    rewards,
    byRule,
    byAgent: airTotalsByAgent(rewards),
    total: rewards.reduce((sum, r) => sum + r.reward, 0),
    spansChecked: spans.length,
  };
}

function checkDuplicate(name: string, i: number, at: string, firstByName: Map<string, number>, error: (path: string, message: string) => void): void {
  const first = firstByName.get(name);
  if (first === undefined) firstByName.set(name, i);
  else error(`${at}.name`, `the name "${name}" is already used by air[${first}]; give each rule its own name, so its rewards can be told apart in traces`);
}

/** One schema violation as a located message that says how to fix it. */
function schemaIssues(at: string, issue: z.core.$ZodIssue, item: Record<string, unknown>): AirRuleIssue[] {
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => ({
      path: `${at}.${key}`,
      message: `unknown field "${key}"; a rule has only ${RULE_FIELDS} — remove it or fix its spelling`,
      severity: 'error' as const,
    }));
  }
  const path = at + issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
  const field = typeof issue.path[0] === 'string' ? issue.path[0] : '';
  const hint = FIELD_HINTS[field];
  if (issue.path.length === 1 && item[field] === undefined) {
    return [{ path, message: `"${field}" is missing; add ${hint ?? 'it'}`, severity: 'error' }];
  }
  const what =
    issue.code === 'invalid_value' && issue.path.length === 1
      ? `${JSON.stringify(item[field])} is not a valid "${field}"`
      : issue.message.charAt(0).toLowerCase() + issue.message.slice(1);
  const fix = issue.path.length > 1 && (field === 'agents' || field === 'tools') ? `each entry of "${field}" must be a name (a string)` : hint ? `"${field}" must be ${hint}` : `see ${EXAMPLE}`;
  return [{ path, message: `${what}; ${fix}`, severity: 'error' }];
}

function kindOf(v: unknown): string {
  if (v === null || v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v)}`;
}

function listOrNone(names: readonly string[]): string {
  return names.length ? names.join(', ') : '(none)';
}
