import { tokenize } from './textTokens';

export interface Bm25Document {
  id: string;
  title: string;
  text: string;
  meta?: Record<string, unknown>;
}

/** Term saturation and length normalisation: the usual Okapi values. */
const K1 = 1.2;
const B = 0.75;

interface Postings {
  docs: number[];
  freqs: number[];
}

/**
 * Okapi BM25 over titles and texts, in memory. The title is indexed with the
 * text so a question-like title counts as content. Scores use the
 * non-negative idf ln(1 + (N - df + 0.5) / (df + 0.5)), so a term found in
 * most documents still counts a little instead of subtracting.
 */
export class Bm25Index {
  private constructor(
    private readonly docs: readonly Bm25Document[],
    private readonly postings: ReadonlyMap<string, Postings>,
    private readonly lengths: Float64Array,
    private readonly avgLength: number,
    private readonly byId: ReadonlyMap<string, number>,
  ) {}

  static build(docs: ReadonlyArray<Bm25Document>): Bm25Index {
    const postings = new Map<string, Postings>();
    const lengths = new Float64Array(docs.length);
    const byId = new Map<string, number>();
    docs.forEach((doc, i) => {
      byId.set(doc.id, i);
      const tokens = tokenize(`${doc.title}\n${doc.text}`);
      lengths[i] = tokens.length;
      const counts = new Map<string, number>();
      for (const t of tokens) counts.set(t, (counts.get(t) ?? 0) + 1);
      for (const [term, tf] of counts) {
        let p = postings.get(term);
        if (!p) postings.set(term, (p = { docs: [], freqs: [] }));
        p.docs.push(i);
        p.freqs.push(tf);
      }
    });
    const total = lengths.reduce((a, b) => a + b, 0);
    return new Bm25Index([...docs], postings, lengths, docs.length ? total / docs.length : 0, byId);
  }

  get size(): number {
    return this.docs.length;
  }

  document(id: string): Bm25Document | undefined {
    const i = this.byId.get(id);
    return i === undefined ? undefined : this.docs[i];
  }

  /**
   * The `topK` best documents for a free-text query, best first; documents
   * that share no term with the query are left out. Equal scores keep the
   * documents' order, so results are deterministic.
   */
  search(query: string, topK: number, filter?: (docId: string) => boolean): Array<{ id: string; score: number }> {
    const n = this.docs.length;
    if (n === 0 || topK <= 0) return [];
    const scores = new Float64Array(n);
    const touched: number[] = [];
    for (const term of new Set(tokenize(query))) {
      const p = this.postings.get(term);
      if (!p) continue;
      const df = p.docs.length;
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      for (let j = 0; j < df; j++) {
        const d = p.docs[j];
        const tf = p.freqs[j];
        const norm = K1 * (1 - B + (B * this.lengths[d]) / this.avgLength);
        if (scores[d] === 0) touched.push(d);
        scores[d] += (idf * tf * (K1 + 1)) / (tf + norm);
      }
    }
    return touched
      .filter((d) => !filter || filter(this.docs[d].id))
      .sort((a, b) => scores[b] - scores[a] || a - b)
      .slice(0, topK)
      .map((d) => ({ id: this.docs[d].id, score: scores[d] }));
  }
}
