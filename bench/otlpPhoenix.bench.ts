import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { TraceStore } from '../src/core/store/traceStore';
import { phoenixProjects, startPhoenix } from '../test/peers/peerServers';
import { median, result, type Bench } from './harness';
import { ingestRequests, sendAll } from './otlp.bench';

/**
 * otlp.ingest.phoenix: spans/s that `rollout-lab collect` (the CLI's OTLP
 * receiver, in its own process) takes in, beside Arize Phoenix (`phoenix
 * serve` from .venv-phoenix, SQLite in a temp folder) taking in the same
 * OTLP/HTTP protobuf requests: ROLLOUTS of otlp.bench.ts's agent traces of 100
 * spans (5,000 spans with KBs of messages: Phoenix takes minutes for
 * otlp.ingest's 20,000 on a 2-core machine), in bodies of 512 spans, POSTed by
 * the same worker over two keep-alive connections, two in flight.
 *
 * Each is timed from the first POST until the last span is persisted and
 * queryable there:
 * - collect answers a request only once its spans are in the store (written
 *   to the store's journal), so its time ends with the last answer;
 * - Phoenix answers at once and inserts in the background (not in the order
 *   received), so its time ends when its GraphQL API counts every span in its
 *   projects, polled every 50 ms after the last answer.
 * Afterwards (untimed) each is checked to hold every span (Phoenix's through
 * its REST API, paged). Each
 * server is started fresh for each repeat, its start-up untimed; the median
 * of the repeats is reported. Target ratio (ours / Phoenix) ≥ 1.0.
 */

const REPO = resolve(__dirname, '..');
const CLI = join(REPO, 'dist/cli.js');
const ROLLOUTS = 50;
const REPEATS = 2;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

class MissingBuild extends Error {
  readonly missingPrerequisite = true;
}

/** `rollout-lab collect` on a fresh workspace; its port once it listens. */
async function startCollect(ws: string): Promise<{ port: number; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [CLI, 'collect', '--port', '0', '--grpc-port', 'off', '--workspace', ws], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const port = await new Promise<number>((done, fail) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /receiver on http:\/\/[0-9.]+:(\d+)\/v1\/traces/.exec(out);
      if (m) done(Number(m[1]));
    });
    child.once('exit', (code) => fail(new Error(`collect exited (${code}) before listening: ${out.slice(-2000)}`)));
  });
  child.stdout.removeAllListeners('data');
  child.stdout.resume();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    port,
    stop: async () => {
      child.kill('SIGINT');
      await exited;
    },
  };
}

async function spanCount(ws: string): Promise<number> {
  const store = await TraceStore.open(ws, { readOnly: true });
  try {
    return store.listRollouts({}).rollouts.reduce((n, r) => n + store.getSpans(r.id).length, 0);
  } finally {
    await store.close();
  }
}

/** The spans Phoenix's GraphQL API counts in its projects (what its UI shows as the project's span count). */
async function phoenixRecordCount(url: string): Promise<number> {
  return (await phoenixProjects(url)).reduce((n, p) => n + p.recordCount, 0);
}

/** Every span of a Phoenix project, paged through its REST API. */
async function phoenixSpanCount(url: string): Promise<number> {
  let n = 0;
  let cursor: string | null = null;
  do {
    const res = await fetch(`${url}/v1/projects/default/spans?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    const page = (await res.json()) as { data: unknown[]; next_cursor: string | null };
    n += page.data.length;
    cursor = page.next_cursor;
  } while (cursor);
  return n;
}

export const bench: Bench = {
  names: ['otlp.ingest.phoenix'],
  async run() {
    if (!existsSync(CLI)) throw new MissingBuild('dist/cli.js is missing: build the CLI with `node esbuild.mjs`');
    const { all, bodies } = ingestRequests(ROLLOUTS);
    const ours: number[] = [];
    const theirs: number[] = [];
    let version = '';
    for (let rep = 0; rep < REPEATS; rep++) {
      const ws = mkdtempSync(join(tmpdir(), 'rl-otlp-collect-'));
      try {
        const collect = await startCollect(ws);
        let secs: number;
        try {
          secs = await sendAll(collect.port, bodies);
        } finally {
          await collect.stop();
        }
        const stored = await spanCount(ws);
        if (stored !== all.length) throw new Error(`collect stored ${stored} of ${all.length} spans`);
        ours.push(all.length / secs);
      } finally {
        rmSync(ws, { recursive: true, force: true });
      }

      const phoenix = await startPhoenix();
      version = phoenix.version;
      try {
        // The worker's time from the first POST to the last answer, as for collect, then until the last trace is queryable.
        const sendSecs = await sendAll(Number(new URL(phoenix.url).port), bodies);
        const answered = performance.now();
        while ((await phoenixRecordCount(phoenix.url)) < all.length) await sleep(50);
        const secs = sendSecs + (performance.now() - answered) / 1000;
        const stored = await phoenixSpanCount(phoenix.url);
        if (stored !== all.length) throw new Error(`Phoenix holds ${stored} of ${all.length} spans once the last trace is queryable`);
        theirs.push(all.length / secs);
      } finally {
        await phoenix.stop();
      }
    }
    return [result('otlp.ingest.phoenix', 'spans/s', median(ours), median(theirs), `baseline: Arize Phoenix ${version} taking the same OTLP/HTTP requests, until queryable; target ratio ≥ 1.0`)];
  },
};
