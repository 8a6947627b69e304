import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { ConfigError } from '../../../src/core/errors';
import type { GraphOutcome } from '../../../src/core/graph/outcome';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts, type RolloutEnvironment } from '../../../src/core/rollout/runner';
import type { RolloutRecord } from '../../../src/core/store/types';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');
const EXAMPLES = resolve(__dirname, '../../../examples/rewards');

interface Ran {
  lab: Lab;
  dir: string;
  rollouts: RolloutRecord[];
  outcomes: Map<string, GraphOutcome>;
  env: RolloutEnvironment;
}

/** A workspace whose lab.json has `reward` merged with the given fields. */
async function workspace(reward: Record<string, unknown>, files: Record<string, string> = {}): Promise<{ dir: string; open: () => Promise<Lab> }> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-reward-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  const cfgFile = join(dir, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
  cfg.reward = { ...(cfg.reward ?? {}), ...reward };
  writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return { dir, open: () => Lab.open({ workspace: dir, env: {} }) };
}

/** Real rollouts on the simulated endpoint; the graph outcomes are kept by task id. */
async function run(reward: Record<string, unknown>, files: Record<string, string> = {}, limit = 3): Promise<Ran> {
  const { dir, open } = await workspace(reward, files);
  const lab = await open();
  const ds = await lab.loadDataset();
  const tasks = lab.selectTasks(ds, { split: 'train', limit, seed: 3 });
  const env = await lab.environment(ds.tasks);
  const outcomes = new Map<string, GraphOutcome>();
  const runGraph = env.runGraph;
  const wrapped: RolloutEnvironment = {
    ...env,
    runGraph: async (task, opts) => {
      const o = await runGraph(task, opts);
      outcomes.set(task.id, o);
      return o;
    },
  };
  const r = await runRollouts(wrapped, { tasks, samples: 1, concurrency: 3, params: {}, seed: 3 });
  assert.equal(r.rollouts.length, limit);
  return { lab, dir, rollouts: r.rollouts, outcomes, env };
}

async function done(ran: { lab: Lab; dir: string }): Promise<void> {
  await ran.lab.close();
  rmSync(ran.dir, { recursive: true, force: true });
}

function customSpan(spans: SpanRecord[]): SpanRecord {
  const s = spans.filter((x) => x.kind === 'reward' && x.name === 'custom');
  assert.equal(s.length, 1, 'one custom reward span');
  return s[0]!;
}

/** The judge's own llm calls: llm spans below a "judge" reward span. */
function judgeLlmSpans(spans: SpanRecord[]): SpanRecord[] {
  const judgeIds = new Set(spans.filter((s) => s.kind === 'reward' && s.name === 'judge').map((s) => s.spanId));
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const underJudge = (s: SpanRecord): boolean => {
    for (let p = s.parentSpanId; p; p = byId.get(p)?.parentSpanId ?? null) if (judgeIds.has(p)) return true;
    return false;
  };
  return spans.filter((s) => s.kind === 'llm' && underJudge(s));
}

test('binaryDecision: 1 exactly when GO/NO-GO matches the expert yes/no; the judge is never called', async () => {
  const ran = await run({ module: join(EXAMPLES, 'binaryDecision.ts') }, {}, 4);
  try {
    for (const x of ran.rollouts) {
      assert.equal(x.status, 'succeeded');
      const expected = (x.decision === 'GO' && x.expectedDecision === 'yes') || (x.decision === 'NO-GO' && x.expectedDecision === 'no') ? 1 : 0;
      assert.equal(x.finalReward, expected, `${x.decision} vs ${x.expectedDecision}`);
      const spans = ran.lab.store.getSpans(x.id);
      const span = customSpan(spans);
      assert.equal(span.status, 'ok');
      assert.equal(span.attributes[Attr.rewardKind], 'custom');
      assert.equal(span.attributes['rollout_lab.reward.module'], join(EXAMPLES, 'binaryDecision.ts'));
      assert.deepEqual(JSON.parse(String(span.attributes[Attr.rewardBreakdown])), { correct: expected });
      assert.equal(spans.filter((s) => s.name === 'judge').length, 0, 'no judge span');
      assert.equal(spans.filter((s) => s.kind === 'llm' && s.attributes[Attr.agentName] === 'Judge').length, 0, 'no judge llm call');
      assert.equal(x.criteria, null);
      const final = spans.find((s) => s.kind === 'reward' && s.name === 'final')!;
      assert.equal(final.attributes[Attr.rewardValue], expected);
    }
  } finally {
    await done(ran);
  }
});

function words(t: string): string[] {
  return t.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 0);
}

test('tokenF1: 0.1 × valid format + 0.9 × word F1 against the long answer', async () => {
  const ran = await run({ module: join(EXAMPLES, 'tokenF1.ts') });
  try {
    const ds = await ran.lab.loadDataset();
    for (const x of ran.rollouts) {
      assert.equal(x.status, 'succeeded');
      const outcome = ran.outcomes.get(x.taskId)!;
      const task = ds.tasks.find((t) => t.id === x.taskId)!;
      const reference = String(task.meta?.longAnswer ?? task.context);
      const out = outcome.finalOutput ?? '';
      let valid = out.trim().length > 0;
      if (valid && /^\s*[{[]/.test(out)) {
        try {
          JSON.parse(out);
        } catch {
          valid = false;
        }
      }
      // Independent F1: multiset overlap counted from both sides.
      const p = words(out);
      const r = words(reference);
      const bag = (ws: string[]): Map<string, number> => ws.reduce((m, w) => m.set(w, (m.get(w) ?? 0) + 1), new Map<string, number>());
      const pb = bag(p);
      const rb = bag(r);
      let common = 0;
      for (const [w, n] of pb) common += Math.min(n, rb.get(w) ?? 0);
      const f1 = valid && common ? (2 * common) / (p.length + r.length) : 0;
      const expected = 0.1 * (valid ? 1 : 0) + 0.9 * f1;
      assert.ok(Math.abs(x.finalReward! - expected) < 1e-12, `${x.finalReward} vs ${expected}`);
      assert.ok(f1 > 0, 'the simulated protocol shares words with the abstract');
      const span = customSpan(ran.lab.store.getSpans(x.id));
      assert.deepEqual(Object.keys(JSON.parse(String(span.attributes[Attr.rewardBreakdown]))).sort(), ['f1', 'format']);
    }
  } finally {
    await done(ran);
  }
});

test('composite: 0.7 × judge + 0.1 × format + 0.2 × efficiency, with one judge call', async () => {
  const ran = await run({ module: join(EXAMPLES, 'composite.ts') });
  try {
    for (const x of ran.rollouts) {
      assert.equal(x.status, 'succeeded');
      const spans = ran.lab.store.getSpans(x.id);
      const judge = spans.filter((s) => s.kind === 'reward' && s.name === 'judge');
      assert.equal(judge.length, 1);
      const judgeReward = Number(judge[0]!.attributes[Attr.rewardValue]);
      assert.ok(x.criteria && Object.keys(x.criteria).length === 6, 'the judge scores are stored');
      const judgeCalls = new Set(judgeLlmSpans(spans).map((s) => s.spanId));
      assert.ok(judgeCalls.size >= 1);
      const tokens = spans
        .filter((s) => s.kind === 'llm' && !judgeCalls.has(s.spanId))
        .reduce((n, s) => n + (Number(s.attributes[Attr.outputTokens]) || 0), 0);
      assert.ok(tokens > 0);
      const outcome = ran.outcomes.get(x.taskId)!;
      const clip = (v: number): number => Math.max(0, Math.min(1, v));
      const efficiency = 0.5 * clip(1 - outcome.turns / 15) + 0.5 * clip(1 - tokens / 20000);
      const expected = 0.7 * judgeReward + 0.1 * 1 + 0.2 * efficiency;
      assert.ok(Math.abs(x.finalReward! - expected) < 1e-9, `${x.finalReward} vs ${expected}`);
    }
  } finally {
    await done(ran);
  }
});

const THROWING = `// a reward with a bug
type Input = { outcome: { decision: string | null } };

export default function reward(input: Input): number {
  const table: Record<string, number> = {};
  if (input.outcome) {
    throw new Error('no score for ' + input.outcome.decision);
  }
  return table.x!;
}
`;

test('a throwing reward keeps every rollout: succeeded, penalty reward, an error span naming the file and line', async () => {
  const ran = await run({ module: 'rewards/bad.ts', customFailurePenalty: 0.05 }, { 'rewards/bad.ts': THROWING });
  try {
    const file = join(ran.dir, 'rewards', 'bad.ts');
    for (const x of ran.rollouts) {
      assert.equal(x.status, 'succeeded');
      assert.equal(x.finalReward, 0.05);
      const span = customSpan(ran.lab.store.getSpans(x.id));
      assert.equal(span.status, 'error');
      assert.equal(span.attributes[Attr.rewardValue], 0.05);
      assert.match(span.statusMessage!, /no score for (GO|NO-GO|null)/);
      assert.ok(span.statusMessage!.includes(`${file}:7:`), span.statusMessage);
      assert.match(span.statusMessage!, /in reward/);
    }
  } finally {
    await done(ran);
  }
});

test('NaN, out-of-range and non-number rewards are errors with the penalty, never lost rollouts', async () => {
  const files = {
    'r/nan.js': 'module.exports = { reward: () => NaN };\n',
  };
  const ran = await run({ module: 'r/nan.js' }, files, 1);
  try {
    const x = ran.rollouts[0]!;
    assert.equal(x.status, 'succeeded');
    assert.equal(x.finalReward, 0);
    const span = customSpan(ran.lab.store.getSpans(x.id));
    assert.equal(span.status, 'error');
    assert.match(span.statusMessage!, /returned NaN/);
    assert.ok(span.statusMessage!.includes(join(ran.dir, 'r', 'nan.js')));
  } finally {
    await done(ran);
  }
  for (const [body, re] of [
    ['export default async () => 1.5;', /1\.5, outside 0\.\.1/],
    ['export default () => ({ reward: "high" });', /returned the string "high"/],
    ['export default () => ({ reward: 0.5, breakdown: { a: NaN } });', /breakdown\.a/],
  ] as const) {
    const r = await run({ module: 'r/x.ts' }, { 'r/x.ts': body }, 1);
    try {
      const x = r.rollouts[0]!;
      assert.equal(x.status, 'succeeded');
      assert.equal(x.finalReward, 0);
      assert.match(customSpan(r.lab.store.getSpans(x.id)).statusMessage!, re);
    } finally {
      await done(r);
    }
  }
});

test('judge() on demand runs the judge once; mode "combine" mixes judge and custom reward', async () => {
  const twice = `export const reward = async ({ judge }) => { const a = await judge(); const b = await judge(); return { reward: a.reward, breakdown: { same: a.reward === b.reward ? 1 : 0 } }; };\n`;
  const ran = await run({ module: 'r/twice.js' }, { 'r/twice.js': twice }, 2);
  try {
    for (const x of ran.rollouts) {
      const spans = ran.lab.store.getSpans(x.id);
      const judge = spans.filter((s) => s.kind === 'reward' && s.name === 'judge');
      assert.equal(judge.length, 1);
      assert.equal(x.finalReward, judge[0]!.attributes[Attr.rewardValue]);
      assert.deepEqual(JSON.parse(String(customSpan(spans).attributes[Attr.rewardBreakdown])), { same: 1 });
    }
  } finally {
    await done(ran);
  }
  const comb = await run({ module: join(EXAMPLES, 'binaryDecision.ts'), mode: 'combine', customWeight: 0.25 }, {}, 2);
  try {
    for (const x of comb.rollouts) {
      const spans = comb.lab.store.getSpans(x.id);
      const judgeReward = Number(spans.find((s) => s.kind === 'reward' && s.name === 'judge')!.attributes[Attr.rewardValue]);
      const custom = Number(customSpan(spans).attributes[Attr.rewardValue]);
      assert.ok(Math.abs(x.finalReward! - (0.75 * judgeReward + 0.25 * custom)) < 1e-12);
    }
  } finally {
    await done(comb);
  }
});

async function loadError(reward: Record<string, unknown>, files: Record<string, string>): Promise<ConfigError> {
  const { dir, open } = await workspace(reward, files);
  const lab = await open();
  try {
    const ds = await lab.loadDataset();
    await assert.rejects(lab.environment(ds.tasks), ConfigError);
    try {
      await lab.environment(ds.tasks);
    } catch (err) {
      return err as ConfigError;
    }
    throw new Error('unreachable');
  } finally {
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('load errors are ConfigErrors with the fix: syntax error with file:line:col, missing file, no function', async () => {
  const syntax = await loadError({ module: 'r/broken.ts' }, { 'r/broken.ts': 'export default function reward() {\n  return 1;\n  const x = ;\n}\n' });
  assert.match(syntax.message, /custom reward module does not compile: .*r[/\\]broken\.ts:3:13: /);
  assert.match(syntax.message, /fix the file/);

  const missing = await loadError({ module: 'r/nope.ts' }, {});
  assert.match(missing.message, /r[/\\]nope\.ts does not exist; create it or fix "reward.module"/);

  const noFn = await loadError({ module: 'r/obj.ts' }, { 'r/obj.ts': 'export const weight = 3;\n' });
  assert.match(noFn.message, /must export a function, as default or "reward".*it exports: weight/);
});
