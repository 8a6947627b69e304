import type { DatasetFieldsInput } from '../config/schema';
import { DECISIONS } from './tasks';

/** Column names, most telling first, that usually hold each part of a task (compared without case). */
const GOAL_NAMES = ['goal', 'question', 'prompt', 'input', 'instruction', 'problem', 'query_text', 'text'];
const CONTEXT_NAMES = ['context', 'contexts', 'passage', 'passages', 'document', 'documents', 'abstract', 'background', 'article', 'paragraph', 'evidence'];
const EXPECTED_NAMES = ['expected', 'answer', 'answers', 'output', 'target', 'gold', 'solution', 'reference', 'label', 'final_decision', 'query', 'sql'];
const DECISION_NAMES = ['expected_decision', 'final_decision', 'decision', 'label', 'answer'];
const ID_NAMES = ['id', 'uid', 'qid', 'question_id', 'example_id', 'pubid', 'pmid', '_id'];

/** How many rows are looked at: enough to see every column of a regular file, cheap for a large one. */
const SAMPLED_ROWS = 50;

export interface FieldProposal {
  /** The columns of the rows looked at, in the order they first appear. */
  columns: string[];
  /** A mapping for datasets.<name>.fields, or null when no column looks like the goal. */
  fields: DatasetFieldsInput | null;
}

const isText = (v: unknown): boolean => typeof v === 'string' && v.trim() !== '';
const isTextOrList = (v: unknown): boolean => isText(v) || (Array.isArray(v) && v.every((x) => typeof x === 'string'));
const isId = (v: unknown): boolean => isText(v) || typeof v === 'number';
const isDecision = (v: unknown): boolean => v === null || (typeof v === 'string' && (DECISIONS as readonly string[]).includes(v.trim().toLowerCase()));

/**
 * A field mapping guessed from the columns of rows in the user's own shape:
 * the first column by a usual name (question, prompt, input... → goal;
 * context, passage, document... → context; answer, label, final_decision...
 * → expected; a column of yes/no/maybe → decision; an id column → id) whose
 * values on every row looked at have the kind the task needs.
 */
export function proposeFieldMapping(rows: readonly unknown[]): FieldProposal {
  const sample = rows.slice(0, SAMPLED_ROWS).filter((r): r is Record<string, unknown> => r !== null && typeof r === 'object' && !Array.isArray(r));
  const columns = [...new Set(sample.flatMap((r) => Object.keys(r)))];
  const taken = new Set<string>();
  const pick = (names: readonly string[], fits: (v: unknown) => boolean): string | undefined => {
    for (const name of names) {
      const column = columns.find((c) => c.toLowerCase() === name && !taken.has(c));
      if (column && sample.every((r) => fits(r[column]))) {
        taken.add(column);
        return column;
      }
    }
    return undefined;
  };
  const goal = pick(GOAL_NAMES, isText);
  if (!goal) return { columns, fields: null };
  const context = pick(CONTEXT_NAMES, (v) => v === undefined || v === null || isTextOrList(v));
  const id = pick(ID_NAMES, isId);
  const expected = pick(EXPECTED_NAMES, () => true);
  // A yes/no/maybe column is also the decision: the decision-alignment metrics then count it.
  const decisionColumn = expected && DECISION_NAMES.includes(expected.toLowerCase()) && sample.every((r) => isDecision(r[expected])) ? expected : pick(DECISION_NAMES, isDecision);
  const fields: DatasetFieldsInput = { goal };
  if (context) fields.context = context;
  // A column named "id" is what an unmapped id reads already; naming it would make it required on every row.
  if (id && id !== 'id') fields.id = id;
  if (expected) fields.expected = expected;
  if (decisionColumn) fields.decision = decisionColumn;
  return { columns, fields };
}
