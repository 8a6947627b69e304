import { z } from 'zod';
import { rowHashId } from './rowHashId';
import type { Task } from './tasks';

/**
 * A row turned into a task, or the reason it cannot be (without file and line;
 * the caller adds them). `generatedId`: the id is a hash of the row, which the
 * loader suffixes for exact duplicates.
 */
export type RowResult = { ok: true; task: Task; generatedId?: boolean } | { ok: false; problem: string };

export const DecisionSchema = z.preprocess(
  (v) => (typeof v === 'string' ? v.trim().toLowerCase() : v),
  z.enum(['yes', 'no', 'maybe']),
);

const IdSchema = z.union([z.string().trim().min(1), z.number()]).transform(String);

/** A value as a problem message shows it: short strings quoted, others by kind. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 30 ? `${value.slice(0, 27)}...` : value);
  return typeof value === 'object' ? 'an object' : String(value);
}

/** "missing "goal"" or ""context" must be ..., got 3", from the first zod issue of a row. */
function rowProblem(error: z.ZodError, row: unknown, required: string, expectations: Record<string, string>, hint = ''): string {
  const issue = error.issues[0];
  const field = issue.path.map(String).join('.');
  if (issue.path.length === 0) return `expected a JSON object, got ${describeValue(row)}`;
  let value: unknown = row;
  for (const seg of issue.path) value = (value as Record<PropertyKey, unknown> | undefined)?.[seg as PropertyKey];
  if (value === undefined) return `missing "${field}" — every row needs ${required}${hint}`;
  const expected = expectations[field] ?? expectations[String(issue.path[0])] ?? issue.message;
  return `"${field}" must be ${expected}, got ${describeValue(value)}`;
}

/** Paragraphs joined by a blank line, each optionally headed by its label (BACKGROUND: ...). */
export function joinParagraphs(texts: string[], headings: string[] | undefined, withHeadings: boolean): string {
  return texts
    .map((text, i) => {
      const heading = withHeadings ? headings?.[i]?.trim() : undefined;
      return heading ? `${heading}: ${text.trim()}` : text.trim();
    })
    .join('\n\n');
}

const TaskRowSchema = z.looseObject({
  id: IdSchema.optional(),
  goal: z.string().trim().min(1),
  context: z.union([z.string(), z.array(z.string())]),
  expected_decision: DecisionSchema.nullish(),
  expected: z.unknown().optional(),
});
const TASK_ROW_EXPECTATIONS = {
  id: 'a non-empty string or a number',
  goal: 'a non-empty string',
  context: 'a string or an array of strings',
  expected_decision: '"yes", "no", "maybe" or null',
};

/**
 * The project's own JSONL row: goal, context (string or list), and optionally
 * id (else a hash of the row, as a field mapping gives), expected_decision and
 * `expected` (a gold answer, any JSON value); other keys go to meta.
 */
export function taskFromRow(row: unknown): RowResult {
  const parsed = TaskRowSchema.safeParse(row);
  if (!parsed.success) {
    const hint = ' (id, expected_decision and expected are optional; rows of another shape: name their fields under "fields" of the dataset in lab.json, e.g. {"goal": "question"})';
    return { ok: false, problem: rowProblem(parsed.error, row, 'goal and context', TASK_ROW_EXPECTATIONS, hint) };
  }
  const { id, goal, context, expected_decision, expected, ...rest } = parsed.data;
  const task: Task = {
    id: id ?? rowHashId(row),
    goal,
    context: Array.isArray(context) ? joinParagraphs(context, undefined, false) : context,
    expectedDecision: expected_decision ?? null,
  };
  if (expected !== undefined) task.expected = expected;
  if (Object.keys(rest).length) task.meta = rest;
  return id === undefined ? { ok: true, task, generatedId: true } : { ok: true, task };
}

const PubMedQaItemSchema = z.looseObject({
  QUESTION: z.string().trim().min(1),
  CONTEXTS: z.array(z.string()).min(1),
  LABELS: z.array(z.string()).optional(),
  MESHES: z.array(z.string()).optional(),
  YEAR: z.union([z.string(), z.number()]).nullish(),
  final_decision: DecisionSchema.nullish(),
  LONG_ANSWER: z.string().nullish(),
});
const PUBMEDQA_EXPECTATIONS = {
  QUESTION: 'a non-empty string',
  CONTEXTS: 'a non-empty array of strings',
  LABELS: 'an array of strings',
  MESHES: 'an array of strings',
  final_decision: '"yes", "no" or "maybe"',
};

/** An item of PubMedQA's ori_pqal.json, keyed by PubMed id. */
export function taskFromPubMedQa(pmid: string, item: unknown, sectionHeadings: boolean): RowResult {
  const parsed = PubMedQaItemSchema.safeParse(item);
  if (!parsed.success) {
    return { ok: false, problem: rowProblem(parsed.error, item, 'QUESTION, CONTEXTS and final_decision', PUBMEDQA_EXPECTATIONS) };
  }
  const p = parsed.data;
  return {
    ok: true,
    task: {
      id: pmid,
      goal: p.QUESTION,
      context: joinParagraphs(p.CONTEXTS, p.LABELS, sectionHeadings),
      expectedDecision: p.final_decision ?? null,
      meta: {
        pmid,
        year: p.YEAR ?? null,
        meshes: p.MESHES ?? [],
        labels: p.LABELS ?? [],
        longAnswer: p.LONG_ANSWER ?? null,
      },
    },
  };
}

const HfRowSchema = z.looseObject({
  pubid: IdSchema,
  question: z.string().trim().min(1),
  context: z.looseObject({
    contexts: z.array(z.string()).min(1),
    labels: z.array(z.string()).optional(),
    meshes: z.array(z.string()).optional(),
  }),
  long_answer: z.string().nullish(),
  final_decision: DecisionSchema.nullish(),
});
const HF_EXPECTATIONS = {
  pubid: 'a number or a string',
  question: 'a non-empty string',
  context: 'an object with "contexts", "labels" and "meshes"',
  'context.contexts': 'a non-empty array of strings',
  final_decision: '"yes", "no" or "maybe"',
};

/** A row of the Hugging Face `pubmed_qa` `pqa_labeled` export. */
export function taskFromHfPubMedQa(row: unknown, sectionHeadings: boolean): RowResult {
  const parsed = HfRowSchema.safeParse(row);
  if (!parsed.success) return { ok: false, problem: rowProblem(parsed.error, row, 'pubid, question, context and final_decision', HF_EXPECTATIONS) };
  const r = parsed.data;
  return {
    ok: true,
    task: {
      id: r.pubid,
      goal: r.question,
      context: joinParagraphs(r.context.contexts, r.context.labels, sectionHeadings),
      expectedDecision: r.final_decision ?? null,
      meta: {
        pmid: r.pubid,
        meshes: r.context.meshes ?? [],
        labels: r.context.labels ?? [],
        longAnswer: r.long_answer ?? null,
      },
    },
  };
}

/** Whether a row looks like the Hugging Face export rather than the project's own task rows. */
export function looksLikeHfRow(row: unknown): boolean {
  return row !== null && typeof row === 'object' && 'pubid' in row && 'question' in row;
}

/** Whether a keyed item looks like PubMedQA's ori_pqal.json. */
export function looksLikePubMedQaItem(item: unknown): boolean {
  return item !== null && typeof item === 'object' && 'QUESTION' in item && 'CONTEXTS' in item;
}
