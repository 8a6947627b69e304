/**
 * Trace store benchmarks, each beside a better-sqlite3 baseline run on the
 * same data in the same run:
 * - store.ingest: spans/s of whole rollouts (start, ~100 spans, finish, close)
 *   vs better-sqlite3 (file, WAL, synchronous NORMAL, one transaction per rollout).
 * - store.query: span tree of a 200-span rollout in a 1,000,000-span store vs an
 *   indexed SELECT by rollout id + JSON.parse of the attributes.
 * - store.open / store.rss: open time and resident memory after open + one query,
 *   each measured in a fresh process.
 * The 1M-span stores are generated once into .bench/store-1m and reused.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { TraceStore } from '../src/core/store/traceStore';
import type { RolloutRecord } from '../src/core/store/types';
import type { SpanKind, SpanRecord } from '../src/core/trace/span';
import { median, result, type Bench, type BenchResult } from './harness';
import { seededRandom } from '../src/core/data/seededRandom';

const BIG_DIR = join(__dirname, '..', '.bench', 'store-1m');
/** Bump when the generated data or the on-disk format changes, to regenerate. */
const BIG_VERSION = 3;
const BIG_ROLLOUTS = 10_000;
const BIG_LONG_EVERY = 100; // every 100th rollout has 200 spans: 100 of them to query
const INGEST_ROLLOUTS = 300;
const AGENTS = ['Geneticist', 'Pharmacologist', 'Neurologist', 'Supervisor', 'HypothesisRefiner', 'ProtocolDesigner', 'PeerReviewer', 'SafetyOfficer', 'PrincipalInvestigator'];

// ---- workload -----------------------------------------------------------------


const WORDS = (
  'amyloid tau apoe4 trem2 glp-1 microglia synaptic neuron receptor agonist trial cohort randomized placebo dose ' +
  'biomarker plasma cerebrospinal imaging pet mri hippocampus cortex inflammation oxidative mitochondrial pathway ' +
  'expression variant allele knockout mouse model assay protocol control blinded endpoint efficacy safety adverse ' +
  'hypothesis novel feasible impact clarity grounded efficient budget timeline sample power statistical analysis'
).split(' ');

const PARAGRAPHS: string[] = (() => {
  const r = seededRandom(7);
  return Array.from({ length: 256 }, () => Array.from({ length: 60 + Math.floor(r() * 60) }, () => WORDS[Math.floor(r() * WORDS.length)]).join(' ') + '.');
})();

function hex(r: () => number, chars: number): string {
  let s = '';
  while (s.length < chars) s += Math.floor(r() * 0x100000000).toString(16).padStart(8, '0');
  return s.slice(0, chars);
}

/** One rollout shaped like the research lab: root, graph nodes, model calls carrying KBs of messages, tool calls, reward. */
function makeRollout(index: number, spanCount: number, runId: string): { record: RolloutRecord; spans: SpanRecord[] } {
  const r = seededRandom(index + 1);
  const id = hex(r, 32);
  const t0 = 1_700_000_000_000 + index * 60_000;
  const root: SpanRecord = {
    traceId: id,
    spanId: hex(r, 16),
    parentSpanId: null,
    name: 'rollout',
    kind: 'rollout',
    startTime: t0,
    endTime: t0 + spanCount * 100,
    status: 'ok',
    attributes: { 'rollout_lab.run.id': runId, 'rollout_lab.task.id': `pqa-${index % 1000}`, 'rollout_lab.sample': 0 },
  };
  const spans: SpanRecord[] = [];
  let node = root;
  for (let i = 1; i < spanCount - 1; i++) {
    const roll = i % 8;
    const kind: SpanKind = roll === 0 ? 'node' : roll <= 3 ? 'llm' : roll <= 5 ? 'tool' : 'node';
    const agent = AGENTS[i % AGENTS.length]!;
    const start = t0 + i * 100;
    const parent = kind === 'node' ? root : node;
    let attributes: SpanRecord['attributes'];
    if (kind === 'llm') {
      const para = (): string => PARAGRAPHS[Math.floor(r() * PARAGRAPHS.length)]!;
      // A few KB of messages, as a small model's chat with the task context gets.
      const input = [
        { role: 'system', content: `You are the ${agent}. ${para()}` },
        { role: 'user', content: `${para()} ${para()}` },
      ];
      attributes = {
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'qwen2.5-1.5b-instruct',
        'gen_ai.request.temperature': 0.7,
        'gen_ai.agent.name': agent,
        'gen_ai.input.messages': JSON.stringify(input),
        'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', content: JSON.stringify({ hypothesis: para(), supporting_papers: ['PMID:1', 'PMID:2'] }) }]),
        'gen_ai.usage.input_tokens': 800 + Math.floor(r() * 400),
        'gen_ai.usage.output_tokens': 100 + Math.floor(r() * 200),
        'gen_ai.response.finish_reasons': ['stop'],
        'rollout_lab.prompt.version': hex(r, 12),
        'rollout_lab.latency_ms': Math.floor(r() * 2000),
      };
    } else if (kind === 'tool') {
      attributes = {
        'gen_ai.tool.name': 'pubmed_search',
        'gen_ai.tool.call.id': hex(r, 12),
        'gen_ai.tool.call.arguments': JSON.stringify({ query: PARAGRAPHS[i % PARAGRAPHS.length]!.slice(0, 60) }),
        'gen_ai.tool.call.result': PARAGRAPHS[Math.floor(r() * PARAGRAPHS.length)]!,
      };
    } else {
      attributes = { 'rollout_lab.node.name': agent, 'rollout_lab.node.step': i, 'gen_ai.agent.name': agent };
    }
    const s: SpanRecord = { traceId: id, spanId: hex(r, 16), parentSpanId: parent.spanId, name: `${kind} ${agent}`, kind, startTime: start, endTime: start + 90, status: 'ok', attributes };
    if (kind === 'node') node = s;
    spans.push(s);
  }
  spans.push({
    traceId: id,
    spanId: hex(r, 16),
    parentSpanId: root.spanId,
    name: 'reward judge',
    kind: 'reward',
    startTime: t0 + spanCount * 100 - 50,
    endTime: t0 + spanCount * 100 - 10,
    status: 'ok',
    attributes: { 'rollout_lab.reward.value': r(), 'rollout_lab.reward.breakdown': JSON.stringify({ novelty: r(), feasibility: r(), impact: r() }) },
  });
  spans.push(root); // the root ends last
  const record: RolloutRecord = {
    id,
    runId,
    taskId: `pqa-${index % 1000}`,
    split: index % 5 === 0 ? 'val' : 'train',
    sample: Math.floor(index / 1000),
    status: 'succeeded',
    finalReward: Math.round(r() * 1000) / 1000,
    criteria: { novelty: r(), feasibility: r(), impact: r(), clarity: r(), groundedness: r(), efficiency: r() },
    judgeFailed: false,
    decision: r() > 0.5 ? 'GO' : 'NO-GO',
    expectedDecision: 'yes',
    turns: 5 + Math.floor(r() * 10),
    error: null,
    simulated: true,
    startTime: t0,
    endTime: t0 + spanCount * 100,
    spanCount,
    agents: AGENTS.map((agent, k) => ({
      agent,
      promptVersion: `pv-${agent}-${index % 3}`,
      model: k < 4 ? 'small' : 'strong',
      modelVersion: 'v1',
      visits: 1 + (k % 2),
      llmCalls: 2,
      toolCalls: k < 6 ? 1 : 0,
      errors: 0,
      inputTokens: 1500,
      outputTokens: 300,
      latencyMs: 1000 + k,
    })),
  };
  return { record, spans };
}

// ---- the two stores -----------------------------------------------------------

interface Sink {
  rollout(record: RolloutRecord, spans: SpanRecord[]): void;
  close(): Promise<void>;
}

async function ourSink(workspace: string): Promise<Sink> {
  const store = await TraceStore.open(workspace);
  store.startRun({ id: 'bench', startTime: 0, endTime: null, status: 'running', params: {}, simulated: true, planned: 0 });
  return {
    rollout(record, spans) {
      store.startRollout({ ...record, status: 'running', endTime: null, finalReward: null, agents: [] });
      for (const s of spans) store.writeSpan(s);
      store.finishRollout(record);
    },
    close: () => store.close(),
  };
}

const BASELINE_SCHEMA = `
  CREATE TABLE IF NOT EXISTS rollouts(id TEXT PRIMARY KEY, run_id TEXT, task_id TEXT, split TEXT, sample INTEGER, status TEXT,
    final_reward REAL, criteria TEXT, decision TEXT, start_time REAL, end_time REAL, span_count INTEGER, agents TEXT);
  CREATE TABLE IF NOT EXISTS spans(trace_id TEXT NOT NULL, span_id TEXT NOT NULL, parent_span_id TEXT, name TEXT, kind TEXT,
    start_time REAL, end_time REAL, status TEXT, status_message TEXT, attributes TEXT);
  CREATE INDEX IF NOT EXISTS spans_trace ON spans(trace_id);`;

function baselineSink(file: string): Sink {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(BASELINE_SCHEMA);
  const startR = db.prepare(`INSERT INTO rollouts(id, run_id, task_id, split, sample, status, start_time, span_count, agents) VALUES(?, ?, ?, ?, ?, 'running', ?, 0, '[]')`);
  const endR = db.prepare(`UPDATE rollouts SET status = ?, final_reward = ?, criteria = ?, decision = ?, end_time = ?, span_count = ?, agents = ? WHERE id = ?`);
  const span = db.prepare(`INSERT INTO spans VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const write = db.transaction((record: RolloutRecord, spans: SpanRecord[]) => {
    startR.run(record.id, record.runId, record.taskId, record.split, record.sample, record.startTime);
    for (const s of spans) {
      span.run(s.traceId, s.spanId, s.parentSpanId, s.name, s.kind, s.startTime, s.endTime, s.status, s.statusMessage ?? null, JSON.stringify(s.attributes));
    }
    endR.run(record.status, record.finalReward, JSON.stringify(record.criteria), record.decision, record.endTime, record.spanCount, JSON.stringify(record.agents), record.id);
  });
  return {
    rollout: (record, spans) => write(record, spans),
    close: async () => {
      db.close();
    },
  };
}

function baselineSpans(stmt: Database.Statement, id: string): SpanRecord[] {
  return (stmt.all(id) as Array<Record<string, unknown>>).map((row) => {
    const s: SpanRecord = {
      traceId: row['trace_id'] as string,
      spanId: row['span_id'] as string,
      parentSpanId: row['parent_span_id'] as string | null,
      name: row['name'] as string,
      kind: row['kind'] as SpanKind,
      startTime: row['start_time'] as number,
      endTime: row['end_time'] as number,
      status: row['status'] as SpanRecord['status'],
      attributes: JSON.parse(row['attributes'] as string) as SpanRecord['attributes'],
    };
    if (row['status_message'] !== null) s.statusMessage = row['status_message'] as string;
    return s;
  });
}

const BASELINE_QUERY = 'SELECT * FROM spans WHERE trace_id = ? ORDER BY start_time';

// ---- benches --------------------------------------------------------------------

async function benchIngest(): Promise<BenchResult> {
  const data = Array.from({ length: INGEST_ROLLOUTS }, (_x, i) => makeRollout(i, 100, 'bench'));
  const spans = data.reduce((n, d) => n + d.spans.length, 0);
  const ours: number[] = [];
  const base: number[] = [];
  for (let round = 0; round < 3; round++) {
    const dir = mkdtempSync(join(tmpdir(), 'rl-bench-'));
    try {
      const sink = await ourSink(join(dir, 'ws'));
      let t = performance.now();
      for (const d of data) sink.rollout(d.record, d.spans);
      await sink.close();
      ours.push(spans / ((performance.now() - t) / 1000));

      const b = baselineSink(join(dir, 'baseline.sqlite'));
      t = performance.now();
      for (const d of data) b.rollout(d.record, d.spans);
      await b.close();
      base.push(spans / ((performance.now() - t) / 1000));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return result('store.ingest', 'spans/s', median(ours), median(base), 'vs better-sqlite3 WAL/NORMAL, txn per rollout; need ratio >= 0.5');
}

interface BigInfo {
  version: number;
  spans: number;
  queryIds: string[];
}

/** The 1M-span stores, built once (both from the same generated rollouts) and reused by later runs. */
async function bigStores(): Promise<BigInfo> {
  const infoPath = join(BIG_DIR, 'ready.json');
  if (existsSync(infoPath)) {
    const info = JSON.parse(readFileSync(infoPath, 'utf8')) as BigInfo;
    if (info.version === BIG_VERSION) return info;
  }
  rmSync(BIG_DIR, { recursive: true, force: true });
  mkdirSync(BIG_DIR, { recursive: true });
  process.stderr.write(`store bench: generating ${BIG_ROLLOUTS} rollouts (~1M spans) into ${BIG_DIR} (once)...\n`);
  const ours = await ourSink(join(BIG_DIR, 'ws'));
  const base = baselineSink(join(BIG_DIR, 'baseline.sqlite'));
  const queryIds: string[] = [];
  let spans = 0;
  for (let i = 0; i < BIG_ROLLOUTS; i++) {
    const long = i % BIG_LONG_EVERY === BIG_LONG_EVERY - 1;
    const d = makeRollout(100_000 + i, long ? 200 : 100, 'bench');
    if (long) queryIds.push(d.record.id);
    ours.rollout(d.record, d.spans);
    base.rollout(d.record, d.spans);
    spans += d.spans.length;
  }
  await ours.close();
  await base.close();
  const info: BigInfo = { version: BIG_VERSION, spans, queryIds };
  writeFileSync(infoPath, JSON.stringify(info));
  return info;
}

async function benchQuery(info: BigInfo): Promise<BenchResult> {
  const store = await TraceStore.open(join(BIG_DIR, 'ws'), { readOnly: true });
  const db = new Database(join(BIG_DIR, 'baseline.sqlite'), { readonly: true });
  const stmt = db.prepare(BASELINE_QUERY);
  try {
    // Same answer from both, and a warm page cache for both.
    for (const id of info.queryIds) {
      const a = store.getSpans(id);
      const b = baselineSpans(stmt, id);
      if (a.length !== 200 || JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`store bench: span trees differ for ${id}`);
    }
    const ours: number[] = [];
    const base: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (const id of info.queryIds) {
        let t = performance.now();
        store.getSpans(id);
        ours.push(performance.now() - t);
        t = performance.now();
        baselineSpans(stmt, id);
        base.push(performance.now() - t);
      }
    }
    return result('store.query', 'ms', median(ours), median(base), `200-span tree in ${info.spans} spans vs indexed SELECT + JSON.parse; need ratio <= 2`);
  } finally {
    await store.close();
    db.close();
  }
}

interface ChildReport {
  openMs: number;
  rssDeltaMb: number;
}

/** Open and RSS in a fresh process each time: nothing cached or compiled beforehand. */
function measureInChild(which: 'ours' | 'baseline', id: string): ChildReport {
  const reports: ChildReport[] = [];
  for (let i = 0; i < 3; i++) {
    const out = spawnSync(process.execPath, ['--import', 'tsx', __filename, '--child', which, id], { encoding: 'utf8' });
    if (out.status !== 0) throw new Error(`store bench child (${which}) failed: ${out.stderr}`);
    reports.push(JSON.parse(out.stdout.trim().split('\n').at(-1)!) as ChildReport);
  }
  return { openMs: median(reports.map((r) => r.openMs)), rssDeltaMb: median(reports.map((r) => r.rssDeltaMb)) };
}

async function child(which: string, id: string): Promise<void> {
  global.gc?.();
  const rss0 = process.memoryUsage().rss;
  const t = performance.now();
  if (which === 'ours') {
    const store = await TraceStore.open(join(BIG_DIR, 'ws'), { readOnly: true });
    const openMs = performance.now() - t;
    if (store.getSpans(id).length !== 200) throw new Error('wrong span count');
    process.stdout.write(JSON.stringify({ openMs, rssDeltaMb: (process.memoryUsage().rss - rss0) / 2 ** 20 }) + '\n');
  } else {
    const db = new Database(join(BIG_DIR, 'baseline.sqlite'), { readonly: true });
    db.prepare('SELECT COUNT(*) AS n FROM spans').get();
    const openMs = performance.now() - t;
    if (baselineSpans(db.prepare(BASELINE_QUERY), id).length !== 200) throw new Error('wrong span count');
    process.stdout.write(JSON.stringify({ openMs, rssDeltaMb: (process.memoryUsage().rss - rss0) / 2 ** 20 }) + '\n');
  }
}

export const bench: Bench = {
  names: ['store.ingest', 'store.query', 'store.open', 'store.rss'],
  async run(): Promise<BenchResult[]> {
    const out: BenchResult[] = [await benchIngest()];
    const info = await bigStores();
    out.push(await benchQuery(info));
    const id = info.queryIds[Math.floor(info.queryIds.length / 2)]!;
    const ours = measureInChild('ours', id);
    const base = measureInChild('baseline', id);
    out.push(result('store.open', 'ms', ours.openMs, base.openMs, `fresh process, ${info.spans} spans; baseline: better-sqlite3 open + COUNT(*)`));
    out.push(result('store.rss', 'MiB', ours.rssDeltaMb, base.rssDeltaMb, 'rss growth over open + one query; baseline: better-sqlite3 process'));
    return out;
  },
};

if (process.argv[2] === '--child') {
  child(process.argv[3]!, process.argv[4]!).catch((err: unknown) => {
    process.stderr.write(String(err) + '\n');
    process.exitCode = 1;
  });
}
