import type { DatasetFields } from '../config/schema';
import type { Task } from './tasks';
import { rowHashId } from './rowHashId';
import { DecisionSchema, describeValue, joinParagraphs, type RowResult } from './taskFormats';

/** The value at a field name or dotted path ("meta.db_id"); a key that itself holds the dots wins. */
export function fieldValue(row: unknown, path: string): unknown {
  if (row === null || typeof row !== 'object') return undefined;
  const obj = row as Record<string, unknown>;
  if (Object.hasOwn(obj, path)) return obj[path];
  let value: unknown = obj;
  for (const seg of path.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, seg)) return undefined;
    value = (value as Record<string, unknown>)[seg];
  }
  return value;
}

/**
 * A row of the user's own shape turned into a task by `datasets.<name>.fields`.
 * `key` is the row's key when the file is an object keyed by id. Problems
 * name the mapping and the field ("fields.goal → "question" is missing").
 */
export function taskFromMappedRow(row: unknown, fields: DatasetFields, key?: string): RowResult {
  if (row === null || typeof row !== 'object' || Array.isArray(row)) return { ok: false, problem: `expected a JSON object, got ${describeValue(row)}` };
  const at = (setting: keyof DatasetFields, path: string): string => `fields.${setting} → "${path}"`;
  const missing = (setting: keyof DatasetFields, path: string): RowResult => ({
    ok: false,
    problem: `${at(setting, path)} is missing — map "${setting}" to a field every row has (datasets.<name>.fields in lab.json)`,
  });

  const goal = fieldValue(row, fields.goal);
  if (goal === undefined) return missing('goal', fields.goal);
  if (typeof goal !== 'string' || !goal.trim()) return { ok: false, problem: `${at('goal', fields.goal)} must be a non-empty string, got ${describeValue(goal)}` };

  let context = '';
  if (fields.context !== undefined) {
    const value = fieldValue(row, fields.context);
    if (value === undefined) return missing('context', fields.context);
    if (typeof value === 'string') context = value;
    else if (Array.isArray(value) && value.every((v) => typeof v === 'string')) context = joinParagraphs(value, undefined, false);
    else if (value !== null) return { ok: false, problem: `${at('context', fields.context)} must be a string or an array of strings, got ${describeValue(value)}` };
  }

  let id: string;
  let generatedId = false;
  const idPath = fields.id ?? 'id';
  const rawId = fieldValue(row, idPath);
  if (rawId === undefined && fields.id !== undefined) return missing('id', fields.id);
  if (rawId === undefined) {
    generatedId = key === undefined;
    id = key ?? rowHashId(row);
  } else if ((typeof rawId === 'string' && rawId.trim()) || typeof rawId === 'number') {
    id = String(rawId).trim();
  } else {
    return { ok: false, problem: `${at('id', idPath)} must be a non-empty string or a number, got ${describeValue(rawId)}` };
  }

  let expectedDecision: Task['expectedDecision'] = null;
  if (fields.decision !== undefined) {
    const parsed = DecisionSchema.nullish().safeParse(fieldValue(row, fields.decision));
    if (!parsed.success) {
      return { ok: false, problem: `${at('decision', fields.decision)} must be "yes", "no", "maybe" or null, got ${describeValue(fieldValue(row, fields.decision))}` };
    }
    expectedDecision = parsed.data ?? null;
  }

  const task: Task = { id, goal, context, expectedDecision };
  if (fields.expected !== undefined) task.expected = fieldValue(row, fields.expected) ?? null;
  if (fields.visible.length) task.visible = Object.fromEntries(fields.visible.map((path) => [path, fieldValue(row, path) ?? null]));
  const mapped = new Set([fields.goal, fields.context, idPath, fields.expected, fields.decision]);
  const meta = Object.fromEntries(Object.entries(row).filter(([k]) => !mapped.has(k)));
  if (Object.keys(meta).length) task.meta = meta;
  return generatedId ? { ok: true, task, generatedId } : { ok: true, task };
}

/**
 * The optional fields (expected, decision, visible) that no row has: a typo
 * in the mapping would otherwise pass silently as "no gold answer anywhere".
 */
export function unmatchedFields(rows: readonly unknown[], fields: DatasetFields): string[] {
  const optional: Array<[string, string | undefined]> = [
    ['expected', fields.expected],
    ['decision', fields.decision],
    ...fields.visible.map((v, i): [string, string] => [`visible[${i}]`, v]),
  ];
  return optional
    .filter((entry): entry is [string, string] => entry[1] !== undefined && !rows.some((r) => fieldValue(r, entry[1]!) !== undefined))
    .map(([setting, path]) => `fields.${setting} → "${path}"`);
}
