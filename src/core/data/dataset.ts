import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { DatasetError } from '../errors';
import { jsonDocumentRecords, jsonLinesRecords, type DatasetRecord, type DatasetRecords } from './datasetRecords';
import type { DatasetFields } from '../config/schema';
import { taskFromMappedRow, unmatchedFields } from './fieldMapping';
import { proposeFieldMapping, type FieldProposal } from './fieldInference';
import type { Task } from './tasks';
import { looksLikeHfRow, looksLikePubMedQaItem, taskFromHfPubMedQa, taskFromPubMedQa, taskFromRow, type RowResult } from './taskFormats';

export type DatasetFormat = 'auto' | 'jsonl' | 'pubmedqa' | 'hf-pubmedqa';

export interface LoadDatasetOptions {
  /** Prefix each PubMedQA abstract section with its label (BACKGROUND: ...). Default true. */
  sectionHeadings?: boolean;
  /** datasets.<name>.fields: which field of the user's own rows is the goal, the gold answer... */
  fields?: DatasetFields;
  /** datasets.<name>.maxRowBytes: the largest row loaded; default DEFAULT_MAX_ROW_BYTES. */
  maxRowBytes?: number;
}

/**
 * 4 MiB, about a million tokens: more than any model's context, and under
 * what the simulated endpoint and the gateway take in one request, so a row
 * that loads never fails its rollouts in transport.
 */
export const DEFAULT_MAX_ROW_BYTES = 4 * 1024 * 1024;

/** A size as a person reads it, with the exact bytes: "50.0 MiB (52428931 bytes)". */
function size(bytes: number): string {
  const unit = bytes >= 1024 * 1024 ? `${(bytes / (1024 * 1024)).toFixed(1)} MiB` : bytes >= 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : null;
  return unit ? `${unit} (${bytes} bytes)` : `${bytes} bytes`;
}

/**
 * The first row over the size limit stops the load, named: loaded, it would
 * go into every model call of its rollouts and fail each as a transport error
 * far from its cause. Refusing the file (rather than skipping the row) keeps
 * the train/val split, which follows the file order, what the file says.
 */
function checkRowSizes(records: readonly DatasetRecord[], limit: number, label: string, file: string): void {
  const big = records.find((r) => r.bytes > limit);
  if (!big) return;
  const rawId = big.key ?? (big.value !== null && typeof big.value === 'object' ? (big.value as Record<string, unknown>).id : undefined);
  const id = typeof rawId === 'string' || typeof rawId === 'number' ? ` (id "${rawId}")` : '';
  throw new DatasetError(
    `${label} line ${big.line}${id}: the row is ${size(big.bytes)}, over the limit of ${size(limit)} per row — every model call of its rollouts would carry it; shorten the row, or raise "maxRowBytes" of this dataset under "datasets" in lab.json`,
    file,
    big.line,
  );
}

const LINE_EXTENSIONS = new Set(['.jsonl', '.ndjson']);

/** How a file is named in messages: relative to the working folder when inside it. */
function displayName(file: string): string {
  const rel = path.relative(process.cwd(), file);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : file;
}

/**
 * Reads the records of a file. JSON Lines by extension; a `.json` file that is
 * really JSON Lines (one object per line) is read as such too.
 */
function readRecords(text: string, ext: string, label: string, file: string): DatasetRecords {
  if (LINE_EXTENSIONS.has(ext)) return { layout: 'lines', records: jsonLinesRecords(text, label, file) };
  try {
    return jsonDocumentRecords(text, label, file);
  } catch (err) {
    const lines = text.split('\n').filter((l) => l.trim());
    if (lines.length > 1 && isJsonObject(lines[0])) return { layout: 'lines', records: jsonLinesRecords(text, label, file) };
    throw err;
  }
}

function isJsonObject(line: string): boolean {
  try {
    const v: unknown = JSON.parse(line);
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  } catch {
    return false;
  }
}

type Converter = (record: DatasetRecord) => RowResult;

/** The format a file is read in without a field mapping: "auto" told apart by the layout and the first item. */
function resolveFormat(format: DatasetFormat, data: DatasetRecords): Exclude<DatasetFormat, 'auto'> {
  if (format !== 'auto') return format;
  const first = data.records[0]?.value;
  const keyed = data.layout === 'keyed-object';
  return keyed && looksLikePubMedQaItem(first) ? 'pubmedqa' : looksLikeHfRow(first) ? 'hf-pubmedqa' : keyed ? 'pubmedqa' : 'jsonl';
}

/**
 * The rows when they would be read as the project's own (JSON Lines or a JSON
 * array, no mapping) but none has a "goal": rows of another shape, which need
 * a field mapping. Null when the file reads as it is.
 */
function rowsOfAnotherShape(format: DatasetFormat, data: DatasetRecords): unknown[] | null {
  if (resolveFormat(format, data) !== 'jsonl' || (data.layout !== 'lines' && data.layout !== 'array')) return null;
  const rows = data.records.map((r) => r.value);
  const isObject = (r: unknown): r is Record<string, unknown> => r !== null && typeof r === 'object' && !Array.isArray(r);
  if (!isObject(rows[0]) || rows.some((r) => isObject(r) && 'goal' in r)) return null;
  return rows;
}

/** The error for rows of another shape: which task fields are missing, the columns the file has, and the mapping to add. */
function unmappedRowsError(rows: readonly unknown[], label: string, file: string): DatasetError {
  const { columns, fields } = proposeFieldMapping(rows);
  const missing = ['goal', 'context'].filter((f) => !columns.includes(f));
  const what = `no row has ${missing.map((f) => `"${f}"`).join(' or ')} (its columns: ${columns.join(', ') || 'none'})`;
  const fix = fields
    ? `map them in lab.json with "fields": ${JSON.stringify(fields)} under this dataset in "datasets" (rollout-lab init --dataset ${label} writes that mapping in a new lab)`
    : 'name the column that holds the question in lab.json with "fields": {"goal": "COLUMN"} under this dataset in "datasets" ("context", "expected", "decision", "id" and "visible" map the others)';
  return new DatasetError(`${label}: the rows are not in the project's own shape (goal, context; id optional) — ${what}; ${fix}`, file);
}

/**
 * What `init --dataset` writes for a file whose rows need a mapping: the
 * columns it has and a mapping guessed from them. Null when the file reads as
 * it is (the project's own rows, PubMedQA, a pubmed_qa export) or cannot be
 * read (loading it reports why).
 */
export async function fieldProposalFor(file: string, format: DatasetFormat = 'auto'): Promise<FieldProposal | null> {
  try {
    const text = (await readFile(file, 'utf8')).replace(/^\uFEFF/, '');
    const rows = rowsOfAnotherShape(format, readRecords(text, path.extname(file).toLowerCase(), displayName(file), file));
    return rows ? proposeFieldMapping(rows) : null;
  } catch {
    return null;
  }
}

function chooseConverter(format: DatasetFormat, data: DatasetRecords, label: string, file: string, opts: LoadDatasetOptions): Converter {
  const headings = opts.sectionHeadings ?? true;
  const keyed = data.layout === 'keyed-object';
  const { fields } = opts;
  if (fields) {
    if (format === 'pubmedqa' || format === 'hf-pubmedqa' || data.layout === 'columns') {
      throw new DatasetError(`${label}: "fields" maps rows of your own (JSON Lines, a JSON array, or an object keyed by id) — set "format" to "auto" or "jsonl", or remove "fields"`, file);
    }
    return (r) => taskFromMappedRow(r.value, fields, r.key);
  }
  const other = rowsOfAnotherShape(format, data);
  if (other) throw unmappedRowsError(other, label, file);
  const resolved = resolveFormat(format, data);
  const wrongLayout = (expected: string): never => {
    throw new DatasetError(`${label}: format "${resolved}" expects ${expected} — check the file or set "format" for this dataset in lab.json`, file);
  };
  switch (resolved) {
    case 'pubmedqa':
      if (!keyed) wrongLayout('an object keyed by PubMed id (ori_pqal.json)');
      return (r) => taskFromPubMedQa(r.key ?? '', r.value, headings);
    case 'hf-pubmedqa':
      if (keyed) wrongLayout('JSON Lines, a JSON array of rows, or pandas columns');
      return (r) => taskFromHfPubMedQa(r.value, headings);
    case 'jsonl':
      if (keyed || data.layout === 'columns') wrongLayout('one task object per line (or a JSON array of them)');
      return (r) => taskFromRow(r.value);
  }
}

/**
 * Loads the tasks of a dataset file, in file order. Formats: the project's
 * JSONL rows (id, goal, context, expected_decision, expected), PubMedQA's
 * ori_pqal.json, and the Hugging Face pubmed_qa pqa_labeled export (JSONL,
 * JSON array or pandas columns). "auto" tells them apart by extension and
 * shape. With `fields`, rows of any shape are mapped field by field, and a
 * row without an id gets one from a hash of its content.
 * A bad row, a duplicate id or an empty file gives a DatasetError with the line.
 */
export async function loadDataset(file: string, format: DatasetFormat = 'auto', opts: LoadDatasetOptions = {}): Promise<Task[]> {
  const label = displayName(file);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : `cannot be read: ${(err as Error).message}`;
    throw new DatasetError(`dataset ${label} ${why} — check the dataset path in lab.json (relative to the workspace)`, file);
  }
  text = text.replace(/^\uFEFF/, '');
  const data = readRecords(text, path.extname(file).toLowerCase(), label, file);
  if (data.records.length === 0) {
    throw new DatasetError(`dataset ${label} has no tasks — add at least one item (JSONL rows need id, goal, context)`, file);
  }
  checkRowSizes(data.records, opts.maxRowBytes ?? DEFAULT_MAX_ROW_BYTES, label, file);
  const convert = chooseConverter(format, data, label, file, opts);
  if (opts.fields) {
    const unmatched = unmatchedFields(data.records.map((r) => r.value), opts.fields);
    if (unmatched.length) {
      const have = Object.keys((data.records[0]?.value ?? {}) as object).join(', ') || 'none';
      throw new DatasetError(`${label}: ${unmatched.join(', ')} ${unmatched.length > 1 ? 'are' : 'is'} on no row (the first row has: ${have}) — fix "fields" of this dataset in lab.json`, file);
    }
  }
  const tasks: Task[] = [];
  const firstLine = new Map<string, number>();
  const copies = new Map<string, number>();
  for (const record of data.records) {
    const result = convert(record);
    if (!result.ok) throw new DatasetError(`${label} line ${record.line}: ${result.problem}`, file, record.line);
    if (result.generatedId) {
      // Exact duplicate rows hash alike: the later copies are told apart by their order among themselves only.
      const n = (copies.get(result.task.id) ?? 0) + 1;
      copies.set(result.task.id, n);
      if (n > 1) result.task.id = `${result.task.id}-${n}`;
    }
    const seen = firstLine.get(result.task.id);
    if (seen !== undefined) {
      throw new DatasetError(
        `${label} line ${record.line}: duplicate id "${result.task.id}" (first on line ${seen}) — ids must be unique`,
        file,
        record.line,
      );
    }
    firstLine.set(result.task.id, record.line);
    tasks.push(result.task);
  }
  return tasks;
}

// The dataset API in one import for callers that load and then select tasks.
export { selectTasks, splitTasks } from './taskSelection';
export type { Decision, Split, SplitTask, Task } from './tasks';
