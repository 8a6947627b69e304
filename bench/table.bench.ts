/**
 * table.query: one page of the rollouts table over 100,000 rollouts — filters
 * (split, status, reward range), full-text search (two words, the last as a
 * prefix) and a sort by reward — through the store (sql.js) vs the same SQL
 * on the same catalog file (same schema, same FTS4 index) in better-sqlite3.
 * Both count the matches and read the page with its agents and span counts.
 * The store is generated once into .bench/table-100k and reused.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { seededRandom } from '../src/core/data/seededRandom';
import { agentRowsSql, tableQuerySql, type RolloutTableQuery } from '../src/core/store/tableQuery';
import { TraceStore } from '../src/core/store/traceStore';
import type { RolloutRecord } from '../src/core/store/types';
import type { SpanRecord } from '../src/core/trace/span';
import { median, result, type Bench, type BenchResult } from './harness';

const DIR = join(__dirname, '..', '.bench', 'table-100k');
/** Bump when the generated data or the catalog format changes, to regenerate. */
const VERSION = 3;
const ROLLOUTS = 100_000;
const REPEATS = 15;
const AGENTS = ['Geneticist', 'Pharmacologist', 'Neurologist', 'Supervisor', 'ProtocolDesigner'];
const WORDS = (
  'amyloid tau apoe4 trem2 microglia synaptic neuron receptor agonist trial cohort randomized placebo dose biomarker plasma ' +
  'cerebrospinal imaging hippocampus cortex inflammation oxidative mitochondrial pathway expression variant allele knockout mouse ' +
  'model assay protocol control blinded endpoint efficacy safety adverse hypothesis novel feasible impact clarity grounded budget ' +
  'timeline sample power statistical analysis lipid kinase phosphorylation aggregation clearance autophagy lysosome'
).split(' ');

/** The query measured: what a user narrowing the table down does. */
export const TABLE_BENCH_QUERY: RolloutTableQuery = {
  splits: ['train'],
  statuses: ['succeeded'],
  reward: { min: 0.3 },
  text: 'amyloid path',
  sort: 'reward',
  order: 'desc',
  offset: 0,
  limit: 200,
};

function hex(r: () => number, chars: number): string {
  let s = '';
  while (s.length < chars) s += Math.floor(r() * 0x100000000).toString(16).padStart(8, '0');
  return s.slice(0, chars);
}

async function generate(): Promise<void> {
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
  const store = await TraceStore.open(DIR, { checkpointEvery: 20_000 });
  const r = seededRandom(11);
  const runs = Array.from({ length: 20 }, (_, i) => `run-bench-${String(i).padStart(2, '0')}`);
  for (const id of runs) store.startRun({ id, startTime: 1, endTime: 2, status: 'done', params: {}, simulated: true, planned: ROLLOUTS / runs.length });
  const words = (n: number): string => Array.from({ length: n }, () => WORDS[Math.floor(r() * WORDS.length)]).join(' ');
  for (let i = 0; i < ROLLOUTS; i++) {
    const id = hex(r, 32);
    const t0 = 1_700_000_000_000 + i * 1000;
    const failed = r() < 0.08;
    const rec: RolloutRecord = {
      id,
      runId: runs[i % runs.length]!,
      taskId: `pqa-${i % 2000}`,
      split: r() < 0.8 ? 'train' : 'val',
      sample: 0,
      status: failed ? 'failed' : 'succeeded',
      failure: failed ? 'timeout' : null,
      finalReward: failed ? null : r(),
      criteria: failed ? null : { novelty: r(), feasibility: r(), clarity: r() },
      judgeFailed: false,
      decision: r() < 0.5 ? 'yes' : 'no',
      expectedDecision: 'yes',
      turns: 5 + Math.floor(r() * 10),
      error: null,
      simulated: true,
      startTime: t0,
      endTime: t0 + 500 + Math.floor(r() * 5000),
      spanCount: 3,
      agents: AGENTS.map((agent) => ({
        agent,
        promptVersion: `pv${agent.length}`,
        model: 'small',
        modelVersion: 'v1',
        visits: 1,
        llmCalls: 1,
        toolCalls: 0,
        errors: 0,
        inputTokens: 500 + Math.floor(r() * 1000),
        outputTokens: 100 + Math.floor(r() * 300),
        latencyMs: 100,
      })),
    };
    store.startRollout(rec);
    const base = { traceId: id, parentSpanId: null, startTime: t0, endTime: t0 + 10, status: 'ok' as const };
    const spans: SpanRecord[] = [
      { ...base, spanId: hex(r, 16), name: AGENTS[i % AGENTS.length]!, kind: 'node', attributes: {} },
      {
        ...base,
        spanId: hex(r, 16),
        name: 'chat small',
        kind: 'llm',
        attributes: {
          'gen_ai.input.messages': JSON.stringify([{ role: 'user', content: words(25) }]),
          'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', content: words(25) }]),
        },
      },
      { ...base, spanId: hex(r, 16), name: 'pubmed_search', kind: 'tool', attributes: { 'gen_ai.tool.name': 'pubmed_search', 'gen_ai.tool.call.arguments': JSON.stringify({ query: words(3) }) } },
    ];
    for (const s of spans) store.writeSpan(s);
    store.finishRollout(rec);
  }
  await store.close();
  writeFileSync(join(DIR, 'VERSION'), String(VERSION));
}

function time(fn: () => unknown): number {
  const t = performance.now();
  fn();
  return performance.now() - t;
}

export const bench: Bench = {
  names: ['table.query'],
  async run(): Promise<BenchResult[]> {
    if (!existsSync(join(DIR, 'VERSION')) || readFileSync(join(DIR, 'VERSION'), 'utf8') !== String(VERSION)) await generate();
    const store = await TraceStore.open(DIR, { readOnly: true });
    const db = new Database(join(DIR, '.rollout-lab', 'store', 'catalog.sqlite'), { readonly: true });
    try {
      const sql = tableQuerySql(TABLE_BENCH_QUERY);
      const count = db.prepare(sql.countSql);
      const page = db.prepare(sql.pageSql);
      // The same reads of the page's agents and span counts as the store makes (one chunk: the page is 200 rows).
      const baseline = (): number => {
        const n = (count.get(...sql.countParams) as { n: number }).n;
        const rows = page.all(...sql.pageParams) as Array<{ rid: number; id: string; criteria: string | null }>;
        const rids = rows.map((x) => x.rid);
        const ids = rows.map((x) => x.id);
        const list = (k: number): string => new Array<string>(k).fill('?').join(', ');
        if (rids.length) {
          db.prepare(agentRowsSql(rids.length)).all(...rids);
          db.prepare(`SELECT trace_id, spans FROM trace_locs WHERE trace_id IN (${list(ids.length)})`).all(...ids);
        }
        for (const x of rows) if (x.criteria) JSON.parse(x.criteria);
        return n + rows.length;
      };
      const ours = (): number => {
        const p = store.queryTable(TABLE_BENCH_QUERY);
        return p.total + p.rows.length;
      };
      const a = ours();
      const b = baseline();
      if (a !== b) throw new Error(`table.query: the store found ${a} (matches + page rows), better-sqlite3 ${b}; the two must run the same query`);
      if (store.queryTable(TABLE_BENCH_QUERY).rows.length === 0) throw new Error('table.query: the benchmark query matches nothing; change the data or the query');
      const oursMs: number[] = [];
      const baseMs: number[] = [];
      for (let i = 0; i < REPEATS; i++) {
        oursMs.push(time(ours));
        baseMs.push(time(baseline));
      }
      return [
        result('table.query', 'ms', median(oursMs), median(baseMs), `filter + sort + full-text search, count and a 200-row page over ${ROLLOUTS.toLocaleString('en-US')} rollouts vs the same SQL on the same catalog in better-sqlite3 (target ≤ 1.5×)`),
      ];
    } finally {
      db.close();
      await store.close();
    }
  },
};
