import type { Task } from '../../data/tasks';
import { Bm25Index } from './bm25';
import { tokenize } from './textTokens';

export interface SearchHit {
  id: string;
  title: string;
  snippet: string;
  score: number;
  source: string;
}

export type SearchKind = 'pubmed' | 'clinical_trials';

/** What the search tools call; the built-in one searches the dataset, a user module can replace it. */
export interface SearchProvider {
  readonly name: string;
  search(query: string, opts: { topK: number; kind: SearchKind; excludeIds?: string[] }): Promise<SearchHit[]>;
}

/** Longest snippet returned to the agent, in characters. */
const SNIPPET_CHARS = 300;

/**
 * Words that mark a clinical study. The clinical-trials search multiplies a
 * document's BM25 score by 1 + TRIAL_BOOST × (markers found / 3, at most 1),
 * so trial-like abstracts rise without hiding a strong topical match.
 */
const TRIAL_MARKERS = [
  /\brandomi[sz]ed\b/,
  /\btrials?\b/,
  /\bplacebo\b/,
  /\bdouble[- ]blind(?:ed)?\b/,
  /\bcohorts?\b/,
  /\bprospective(?:ly)?\b/,
  /\benrol(?:l|led|ment)\b/,
  /\bcontrol group\b/,
  /\bphase (?:i{1,3}|iv|[1-4])\b/,
  /\bparticipants\b/,
  /\ballocated\b/,
  /\bfollow-up\b/,
];
const TRIAL_BOOST = 0.5;
/** Candidates re-ranked by the trial boost, as a multiple of the results asked for. */
const RERANK_POOL = 5;

function trialSignal(text: string): number {
  const lower = text.toLowerCase();
  const found = TRIAL_MARKERS.filter((re) => re.test(lower)).length;
  return Math.min(1, found / 3);
}

/** The sentence sharing most words with the query (first one on ties), cut to SNIPPET_CHARS. */
function bestSnippet(text: string, query: string): string {
  const wanted = new Set(tokenize(query));
  let best = '';
  let bestHits = -1;
  for (const sentence of text.split(/(?<=[.!?])\s+|\n+/)) {
    const s = sentence.trim();
    if (!s) continue;
    const hits = new Set(tokenize(s).filter((t) => wanted.has(t))).size;
    if (hits > bestHits) {
      best = s;
      bestHits = hits;
    }
  }
  return best.length > SNIPPET_CHARS ? `${best.slice(0, SNIPPET_CHARS - 1)}…` : best;
}

function round(score: number): number {
  return Math.round(score * 1000) / 1000;
}

/**
 * Ranked literature search over the dataset's own abstracts (BM25): the
 * offline stand-in for PubMed and ClinicalTrials.gov. Titles are the tasks'
 * questions; hit ids are the task ids (PubMed ids for PubMedQA).
 */
export function datasetSearchProvider(tasks: ReadonlyArray<Task>): SearchProvider {
  // Built at the first search: a graph that never searches (and each worker thread that runs one) pays nothing for it.
  let built: { index: Bm25Index; trial: Map<string, number> } | null = null;
  return {
    name: 'dataset',
    async search(query, { topK, kind, excludeIds }) {
      built ??= {
        index: Bm25Index.build(tasks.map((t) => ({ id: t.id, title: t.goal, text: t.context }))),
        trial: new Map(tasks.map((t) => [t.id, trialSignal(`${t.goal}\n${t.context}`)])),
      };
      const { index, trial } = built;
      const excluded = new Set(excludeIds ?? []);
      const filter = excluded.size ? (id: string) => !excluded.has(id) : undefined;
      let ranked = index.search(query, kind === 'clinical_trials' ? topK * RERANK_POOL : topK, filter);
      if (kind === 'clinical_trials') {
        ranked = ranked
          .map((r, i) => ({ ...r, i, score: r.score * (1 + TRIAL_BOOST * (trial.get(r.id) ?? 0)) }))
          .sort((a, b) => b.score - a.score || a.i - b.i)
          .slice(0, topK);
      }
      return ranked.map((r) => {
        const doc = index.document(r.id)!;
        return { id: doc.id, title: doc.title, snippet: bestSnippet(doc.text, query), score: round(r.score), source: 'dataset' };
      });
    },
  };
}
