import { readFile } from 'node:fs/promises';
import { getNodeValue } from 'jsonc-parser';
import { describeZodIssue, formatConfigPath } from '../../config/configIssues';
import { parseJsonDocument } from '../../config/jsonText';
import { ConfigError } from '../../errors';
import {
  LookupTableFileSchema,
  type GeneOntologyEntry,
  type LookupKind,
  type LookupTableFile,
  type LookupTableFileInput,
  type ProteinEntry,
} from './lookupTableSchema';

export type LookupEntry = ProteinEntry | GeneOntologyEntry;

export type LookupResult =
  | { found: true; query: string; match: 'exact' | 'partial'; entries: LookupEntry[] }
  | { found: false; query: string; message: string };

export interface LookupTable {
  readonly kind: LookupKind;
  /** File the table was read from; null for a table built in memory. */
  readonly file: string | null;
  readonly entries: ReadonlyArray<LookupEntry>;
  lookup(query: string): LookupResult;
}

const GREEK: Record<string, string> = {
  α: 'alpha',
  β: 'beta',
  // Abstracts often print the German sharp s for a beta ("Aß42").
  ß: 'beta',
  γ: 'gamma',
  δ: 'delta',
  ε: 'epsilon',
  κ: 'kappa',
};

/**
 * Key for matching names: case, Greek letters and punctuation are ignored, so
 * "Aβ", "Abeta" and "A-beta" meet, as do "amyloid beta" and "amyloid-beta".
 */
export function lookupKey(name: string): string {
  return lookupWords(name).join('');
}

function lookupWords(text: string): string[] {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[αβßγδεκ]/g, (c) => GREEK[c] ?? c)
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/** Longest run of query words tried as a name ("tumor necrosis factor alpha" has four). */
const MAX_NAME_WORDS = 5;

/** Builds a table from already validated data (the defaults, or a file's contents). */
export function createLookupTable(data: LookupTableFileInput, file: string | null = null): LookupTable {
  const parsed: LookupTableFile = LookupTableFileSchema.parse(data);
  const entries: LookupEntry[] = parsed.entries;
  const byKey = new Map<string, LookupEntry[]>();
  const add = (name: string | undefined, entry: LookupEntry): void => {
    if (!name) return;
    const key = lookupKey(name);
    if (!key) return;
    const list = byKey.get(key) ?? [];
    if (!list.includes(entry)) list.push(entry);
    byKey.set(key, list);
  };
  for (const entry of entries) {
    add(entry.name, entry);
    for (const alias of entry.aliases) add(alias, entry);
    if ('symbol' in entry) add(entry.symbol as string | undefined, entry);
    if ('id' in entry) add(entry.id as string, entry);
    // A gene symbol finds every GO term annotated with it.
    if ('genes' in entry) for (const gene of entry.genes as string[]) add(gene, entry);
  }
  const known = entries.map((e) => e.name).join(', ');
  const what = parsed.kind === 'protein' ? 'protein' : 'GO term';
  return {
    kind: parsed.kind,
    file,
    entries,
    lookup(query: string): LookupResult {
      const key = lookupKey(query);
      if (!key) return { found: false, query, message: `empty ${what} name; known entries: ${known}` };
      const exact = byKey.get(key);
      if (exact) return { found: true, query, match: 'exact', entries: exact };
      // Agents often ask for more than a name ("tau hyperphosphorylation in AD"): look for a known
      // name made of whole words of the query, so "APP" is not found inside "applied".
      const words = lookupWords(query);
      const partial: LookupEntry[] = [];
      for (let i = 0; i < words.length; i++) {
        for (let n = 1; n <= MAX_NAME_WORDS && i + n <= words.length; n++) {
          for (const e of byKey.get(words.slice(i, i + n).join('')) ?? []) if (!partial.includes(e)) partial.push(e);
        }
      }
      if (partial.length) return { found: true, query, match: 'partial', entries: partial };
      return { found: false, query, message: `${what} "${query}" not found; known entries: ${known}` };
    },
  };
}

/**
 * Reads a lookup table file (JSON, comments allowed) and checks it; a bad file
 * gives a ConfigError naming the file, the entry path and its line.
 * With `kind`, a table of the other kind is rejected too.
 */
export async function loadLookupTable(file: string, kind?: LookupKind): Promise<LookupTable> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : (err as Error).message;
    throw new ConfigError(`lookup table ${file} ${why} — run \`rollout-lab init\` to write the default tables, or fix the path under "tools" in lab.json`, file);
  }
  const doc = parseJsonDocument(text.replace(/^\uFEFF/, ''));
  const syntax = doc.syntaxErrors[0];
  if (syntax) {
    throw new ConfigError(`${file} line ${syntax.position.line}, column ${syntax.position.column}: ${syntax.message}`, file);
  }
  const result = LookupTableFileSchema.safeParse(doc.root ? getNodeValue(doc.root) : undefined, { reportInput: true });
  if (!result.success) {
    const issue = describeZodIssue(result.error.issues[0], {});
    const where = formatConfigPath(issue.path) || 'top level';
    const line = doc.positionOf(issue.path as Array<string | number>)?.line;
    const more = result.error.issues.length > 1 ? ` (and ${result.error.issues.length - 1} more problem(s))` : '';
    throw new ConfigError(
      `${file}${line ? ` line ${line}` : ''}: ${where}: ${issue.message}${more}; fix the table (format: {"kind": "protein" | "gene_ontology", "entries": [...]}) or run \`rollout-lab init --force\` to restore the defaults`,
      file,
    );
  }
  if (kind && result.data.kind !== kind) {
    throw new ConfigError(`${file} is a "${result.data.kind}" table, expected "${kind}" — check the table paths under "tools" in lab.json`, file);
  }
  return createLookupTable(result.data, file);
}
