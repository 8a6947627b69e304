import { getNodeValue } from 'jsonc-parser';
import { parseJsonDocument } from '../config/jsonText';
import { DatasetError } from '../errors';

/** One item of a dataset file before it is checked, with the line it starts on. */
export interface DatasetRecord {
  value: unknown;
  line: number;
  /** The property name when the file is an object keyed by id (PubMedQA's ori_pqal.json). */
  key?: string;
  /** Its size in the file, in UTF-8 bytes (for the row size limit). */
  bytes: number;
}

/** How the items sit in the file. */
export type RecordLayout = 'lines' | 'array' | 'keyed-object' | 'columns';

export interface DatasetRecords {
  layout: RecordLayout;
  records: DatasetRecord[];
}

/** Reads JSON Lines: one JSON value per non-blank line. */
export function jsonLinesRecords(text: string, label: string, file: string): DatasetRecord[] {
  const records: DatasetRecord[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i].trim();
    if (!raw) continue;
    try {
      records.push({ value: JSON.parse(raw), line: i + 1, bytes: Buffer.byteLength(raw) });
    } catch (err) {
      const syntax = parseJsonDocument(raw).syntaxErrors[0];
      const why = syntax ? `column ${syntax.position.column}: ${syntax.message}` : (err as Error).message;
      throw new DatasetError(`${label} line ${i + 1}: not valid JSON (${why}) — each line must hold one JSON object`, file, i + 1);
    }
  }
  return records;
}

/** Pandas `to_json()` writes columns: {"pubid": {"0": ...}, "question": {"0": ...}}. */
function isColumnLayout(value: Record<string, unknown>): boolean {
  const columns = Object.values(value);
  return 'pubid' in value && 'question' in value && columns.every((c) => c !== null && typeof c === 'object' && !Array.isArray(c));
}

/**
 * Reads a JSON document (array of rows, object keyed by id, or columns),
 * keeping file order and the line of every item. JSON.parse would reorder
 * integer-like keys such as PubMed ids, which would change the train split.
 */
export function jsonDocumentRecords(text: string, label: string, file: string): DatasetRecords {
  const doc = parseJsonDocument(text);
  const syntax = doc.syntaxErrors[0];
  if (syntax) {
    const { line, column } = syntax.position;
    throw new DatasetError(`${label} line ${line}, column ${column}: ${syntax.message} — the file is not valid JSON`, file, line);
  }
  const root = doc.root;
  const bytes = (node: { offset: number; length: number }): number => Buffer.byteLength(text.slice(node.offset, node.offset + node.length));
  if (root?.type === 'array') {
    const records = (root.children ?? []).map((node) => ({ value: getNodeValue(node), line: doc.positionAt(node.offset).line, bytes: bytes(node) }));
    return { layout: 'array', records };
  }
  if (root?.type === 'object') {
    const value = getNodeValue(root) as Record<string, unknown>;
    if (isColumnLayout(value)) {
      const pubids = value.pubid as Record<string, unknown>;
      const records = Object.keys(pubids).map((row) => {
        const item: Record<string, unknown> = {};
        for (const [column, cells] of Object.entries(value)) item[column] = (cells as Record<string, unknown>)[row];
        return { value: item, line: doc.positionOf(['pubid', row])?.line ?? 1, key: row, bytes: Buffer.byteLength(JSON.stringify(item)) };
      });
      return { layout: 'columns', records };
    }
    const records = (root.children ?? []).flatMap((prop) => {
      const [keyNode, valueNode] = prop.children ?? [];
      if (!keyNode || !valueNode) return [];
      return [{ key: String(keyNode.value), value: getNodeValue(valueNode), line: doc.positionAt(prop.offset).line, bytes: bytes(prop) }];
    });
    return { layout: 'keyed-object', records };
  }
  throw new DatasetError(
    `${label}: expected a JSON array of tasks or an object keyed by id, got ${root ? root.type : 'nothing'} — see the dataset formats in the README`,
    file,
  );
}
