import { randomBytes } from 'node:crypto';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { applyEdits, findNodeAtLocation, getNodeValue, modify, type FormattingOptions, type JSONPath } from 'jsonc-parser';
import { isDeepStrictEqual } from 'node:util';
import { ConfigError } from '../errors';
import { formatConfigPath } from './configIssues';
import { parseLabConfigText } from './loader';
import { parseJsonDocument } from './jsonText';
import { AirRuleSchema, CriterionSchema, type AirRule, type LabConfig } from './schema';

/** What the reward-weight editor changes in lab.json. */
export interface LabJsonChanges {
  /** The full set of criteria: criteria left out are removed, new ones are added after the others. */
  criteria?: Record<string, { weight: number; description: string }>;
  /** The full list of AIR rules, in order. */
  air?: readonly unknown[];
}

/**
 * Applies the editor's changes to lab.json text with jsonc-parser edits, so
 * comments, key order and formatting around what did not change survive: an
 * unchanged criterion or rule is not touched at all, a changed weight is one
 * replaced number. The changes are checked against the config schema first
 * and the resulting file as a whole after; either failing throws a
 * ConfigError that names the field, and nothing is written.
 */
export function editLabJsonText(text: string, changes: LabJsonChanges, file: string): { text: string; config: LabConfig } {
  const label = path.basename(file);
  const criteria = changes.criteria === undefined ? undefined : checkCriteria(changes.criteria, file, label);
  const air = changes.air === undefined ? undefined : checkAir(changes.air, file, label);

  const bom = text.startsWith('\uFEFF') ? '\uFEFF' : '';
  const doc = parseJsonDocument(text.slice(bom.length));
  if (doc.syntaxErrors.length || !doc.root || doc.root.type !== 'object') {
    // Report the file's own problem (with its line) rather than editing a file that does not parse.
    parseLabConfigText(text, file, label);
    throw new ConfigError(`\`${label}\` is not a JSON object — fix it before saving weights`, file);
  }
  const fmt = formattingOf(text);
  let out = text.slice(bom.length);
  const set = (at: JSONPath, value: unknown, insert = false): void => {
    out = applyEdits(out, modify(out, at, value, { formattingOptions: fmt, isArrayInsertion: insert }));
  };
  const valueAt = (at: JSONPath): unknown => {
    const root = parseJsonDocument(out).root;
    const node = root ? findNodeAtLocation(root, at) : undefined;
    return node ? getNodeValue(node) : undefined;
  };

  if (criteria) {
    const current = valueAt(['reward', 'criteria']);
    if (!isRecord(current)) {
      set(['reward', 'criteria'], criteria);
    } else {
      for (const name of Object.keys(current)) if (!(name in criteria)) set(['reward', 'criteria', name], undefined);
      for (const [name, c] of Object.entries(criteria)) {
        const old = current[name];
        if (!isRecord(old)) {
          set(['reward', 'criteria', name], c);
          continue;
        }
        if (old.weight !== c.weight) set(['reward', 'criteria', name, 'weight'], c.weight);
        if (old.description !== c.description) set(['reward', 'criteria', name, 'description'], c.description);
      }
    }
  }

  if (air) {
    const current = valueAt(['air']);
    if (!Array.isArray(current)) {
      if (air.length || current !== undefined) set(['air'], air);
    } else {
      for (let i = current.length - 1; i >= air.length; i--) set(['air', i], undefined);
      air.forEach((rule, i) => {
        if (i >= current.length) set(['air', i], rule, true);
        else if (!isDeepStrictEqual(canonicalRule(current[i]), rule)) set(['air', i], rule);
      });
    }
  }

  // The whole file must still be a valid lab config (the schema's cross-checks included).
  const config = parseLabConfigText(out, file, label);
  return { text: bom + out, config };
}

/** Reads lab.json, applies the changes and replaces the file atomically (a crash never leaves half a config). */
export async function writeLabJsonChanges(file: string, changes: LabJsonChanges): Promise<{ config: LabConfig; changed: boolean }> {
  const before = await readFile(file, 'utf8');
  const { text, config } = editLabJsonText(before, changes, file);
  if (text === before) return { config, changed: false };
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await writeFile(tmp, text, 'utf8');
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  return { config, changed: true };
}

function checkCriteria(criteria: Record<string, { weight: number; description: string }>, file: string, label: string): Record<string, { weight: number; description: string }> {
  const names = Object.keys(criteria);
  if (names.length === 0) throw new ConfigError(`\`${label}\`: reward.criteria: keep at least one criterion — the judge needs something to score`, file);
  const out: Record<string, { weight: number; description: string }> = {};
  for (const name of names) {
    const where = formatConfigPath(['reward', 'criteria', name]);
    if (!/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(name)) {
      throw new ConfigError(`\`${label}\`: ${where}: the name "${name}" is not allowed — use letters, digits, "_", "-" or "." and start with a letter`, file);
    }
    const c = criteria[name]!;
    if (typeof c.description === 'string' && c.description.trim() === '') {
      throw new ConfigError(`\`${label}\`: ${where}.description: describe what the judge scores under "${name}"`, file);
    }
    const parsed = CriterionSchema.safeParse(c);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new ConfigError(`\`${label}\`: ${formatConfigPath(['reward', 'criteria', name, ...issue.path])}: ${issue.message}`, file);
    }
    if (!Number.isFinite(parsed.data.weight)) throw new ConfigError(`\`${label}\`: ${where}.weight: give a finite number of 0 or more`, file);
    out[name] = { weight: parsed.data.weight, description: parsed.data.description };
  }
  if (!Object.values(out).some((c) => c.weight > 0)) {
    throw new ConfigError(`\`${label}\`: reward.criteria: every weight is 0 — give at least one criterion a weight above 0`, file);
  }
  return out;
}

function checkAir(rules: readonly unknown[], file: string, label: string): AirRule[] {
  const seen = new Set<string>();
  return rules.map((raw, i) => {
    const parsed = AirRuleSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new ConfigError(`\`${label}\`: ${formatConfigPath(['air', i, ...issue.path])}: ${issue.message}`, file);
    }
    if (seen.has(parsed.data.name)) throw new ConfigError(`\`${label}\`: air[${i}].name: another rule is already called "${parsed.data.name}" — give each rule its own name`, file);
    seen.add(parsed.data.name);
    return canonicalRule(parsed.data) as AirRule;
  });
}

/** A rule with its keys in the schema's order and empty agent/tool lists left out ("all"), as the editor writes it. */
function canonicalRule(rule: unknown): unknown {
  if (!isRecord(rule)) return rule;
  const out: Record<string, unknown> = { name: rule.name, when: rule.when };
  if (Array.isArray(rule.agents) && rule.agents.length) out.agents = rule.agents;
  if (Array.isArray(rule.tools) && rule.tools.length) out.tools = rule.tools;
  out.reward = rule.reward;
  for (const [k, v] of Object.entries(rule)) if (!(k in out) && k !== 'agents' && k !== 'tools') out[k] = v;
  return out;
}

/** Indentation and line ends as the file already uses them, so new entries look like their neighbours. */
function formattingOf(text: string): FormattingOptions {
  const indent = /^([ \t]+)\S/m.exec(text)?.[1] ?? '  ';
  const tabs = indent.startsWith('\t');
  return { insertSpaces: !tabs, tabSize: tabs ? 1 : indent.length, eol: text.includes('\r\n') ? '\r\n' : '\n' };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
