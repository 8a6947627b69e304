import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { defaultLabConfig } from '../../../src/core/lab/labTemplates';
import { initWorkspace } from '../../../src/core/lab/init';
import { LabConfigSchema, type LabConfig } from '../../../src/core/config/schema';
import { UsageError } from '../../../src/core/errors';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts } from '../../../src/core/rollout/runner';
import { TraceStore } from '../../../src/core/store/traceStore';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';
import { conversationProblem, type ChatMessage } from '../../../src/core/train/export/adapters/chatMessages';
import { EmptyExportError, type EmptyExportFacts } from '../../../src/core/train/export/emptyExport';
import { exportTrainingData, manifestPath, type ExportManifest, type ExportOptions } from '../../../src/core/train/export/exportData';
import { FIXTURE_RUN, fixtureRolloutId, writeFixtureStore } from '../../fixtures/train/fixtureStore';

const GOLDEN = resolve(__dirname, '../../fixtures/train/golden');
const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');
const CONFIG: LabConfig = LabConfigSchema.parse(defaultLabConfig());

interface Fixture {
  store: TraceStore;
  dir: string;
  cleanup: () => Promise<void>;
}

async function fixture(): Promise<Fixture> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-export-'));
  const store = await TraceStore.open(dir);
  writeFixtureStore(store);
  return {
    store,
    dir,
    cleanup: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** What an export that found no rows says it dropped: it must reject, and write nothing. */
async function emptyFacts(run: Promise<unknown>, file: string): Promise<EmptyExportFacts> {
  const before = existsSync(file) ? readFileSync(file) : null;
  let facts: EmptyExportFacts | undefined;
  await assert.rejects(run, (e: unknown) => {
    assert.ok(e instanceof EmptyExportError, String(e));
    assert.match(e.message, /^no training rows: the (sft|rl|bandit) export .* has 0 rows to train on; dropped: /);
    facts = e.facts;
    return true;
  });
  assert.deepEqual(existsSync(file) ? readFileSync(file) : null, before, 'an empty export leaves the file as it was');
  return facts!;
}

function lines(file: string): Array<Record<string, unknown>> {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** What a chat template needs of an SFT line, checked on its own terms (not with the exporter's checker only). */
function assertTemplateReady(rec: { messages: ChatMessage[]; tools: Array<{ type: string; function: { name: string; parameters: unknown } }> }): void {
  assert.equal(conversationProblem(rec.messages), null);
  const roles = rec.messages.map((m) => m.role);
  assert.ok(roles.every((r) => ['system', 'user', 'assistant', 'tool'].includes(r)));
  assert.equal(roles.at(-1), 'assistant');
  assert.equal(roles.filter((r) => r === 'system').length <= 1 && (roles.indexOf('system') <= 0), true);
  const asked = new Set<string>();
  for (const m of rec.messages) {
    for (const c of m.tool_calls ?? []) {
      assert.equal(c.type, 'function');
      assert.equal(typeof c.function.arguments, 'string');
      assert.equal(typeof JSON.parse(c.function.arguments), 'object');
      asked.add(c.id);
    }
    if (m.role === 'tool') assert.ok(asked.has(m.tool_call_id!), `tool message answers ${m.tool_call_id}`);
    if (m.role === 'assistant' && !m.tool_calls?.length) assert.ok(m.content.length > 0);
  }
  const names = new Set(rec.tools.map((t) => t.function.name));
  for (const t of rec.tools) assert.equal(t.type, 'function');
  for (const m of rec.messages) for (const c of m.tool_calls ?? []) assert.ok(names.has(c.function.name), `tool ${c.function.name} is declared`);
}

// Every split: the goldens hold the fixture's val rollout too.
const GOLDENS: Array<[string, ExportOptions]> = [
  ['sft', { format: 'sft', split: 'all' }],
  ['rl-equal', { format: 'rl', split: 'all' }],
  ['rl-last', { format: 'rl', split: 'all', credit: 'last' }],
  ['rl-discounted', { format: 'rl', split: 'all', credit: 'discounted', gamma: 0.5 }],
  ['bandit', { format: 'bandit', split: 'all' }],
];

test('golden exports of the fixed store', async () => {
  const f = await fixture();
  try {
    for (const [name, opts] of GOLDENS) {
      const out = join(f.dir, 'out', `${name}.jsonl`);
      const m = await exportTrainingData(f.store, CONFIG, opts, out);
      const expected = readFileSync(join(GOLDEN, `${name}.jsonl`), 'utf8');
      assert.equal(readFileSync(out, 'utf8'), expected, `${name}.jsonl differs from test/fixtures/train/golden/${name}.jsonl`);
      assert.equal(m.sha256, createHash('sha256').update(expected).digest('hex'));
      assert.equal(m.counts.records, expected.split('\n').filter(Boolean).length);
    }
  } finally {
    await f.cleanup();
  }
});

test('SFT: successes only, the juniors and the train split by default, every line ready for a chat template, tool calls and results kept', async () => {
  const f = await fixture();
  try {
    const out = join(f.dir, 'sft.jsonl');
    const m = await exportTrainingData(f.store, CONFIG, { format: 'sft' }, out);
    const recs = lines(out) as unknown as Array<{ messages: ChatMessage[]; tools: never[]; metadata: { agent: string; reward: number; rolloutId: string } }>;
    for (const r of recs) assertTemplateReady(r);
    assert.ok(recs.every((r) => ['Geneticist', 'Pharmacologist', 'Neurologist'].includes(r.metadata.agent)));
    assert.ok(recs.every((r) => r.metadata.reward >= 0.7));
    const withTools = recs.find((r) => r.messages.some((x) => x.role === 'tool'))!;
    assert.deepEqual(
      withTools.messages.map((x) => x.role),
      ['system', 'user', 'assistant', 'tool', 'assistant'],
    );
    assert.equal(withTools.messages[2]!.content, '');
    assert.equal(withTools.messages[3]!.tool_call_id, withTools.messages[2]!.tool_calls![0]!.id);
    // beta is under 0.7, delta failed; gamma's bad tool result and failed call are skipped, not exported.
    assert.deepEqual(m.counts.skipped, { below_min_reward: 1, call_failed: 1, call_invalid: 1, failed: 1 });
    // epsilon is a val rollout: the default split is train.
    assert.deepEqual(m.sourceRollouts, ['alpha', 'gamma', 'zeta'].map(fixtureRolloutId));
    assert.equal(m.counts.rollouts, 3);
    const onDisk = JSON.parse(readFileSync(manifestPath(out), 'utf8')) as ExportManifest;
    assert.deepEqual(onDisk, m);
    assert.equal(onDisk.file, out);
    assert.equal(onDisk.options.minReward, 0.7);
    assert.deepEqual(onDisk.options.agents, ['Geneticist', 'Pharmacologist', 'Neurologist']);
    assert.equal(onDisk.options.credit, null);
    assert.equal(onDisk.options.split, 'train');
    assert.equal(onDisk.options.includeSimulated, false);
    const all = await exportTrainingData(f.store, CONFIG, { format: 'sft', split: 'all' }, out);
    assert.deepEqual(all.sourceRollouts, ['alpha', 'gamma', 'zeta', 'epsilon'].map(fixtureRolloutId));
    assert.equal(all.options.split, null);
  } finally {
    await f.cleanup();
  }
});

test('RL: grouped by task, then rollout, then call; credit recorded in each record and the manifest', async () => {
  const f = await fixture();
  try {
    const out = join(f.dir, 'rl.jsonl');
    const m = await exportTrainingData(f.store, CONFIG, { format: 'rl', split: 'all', credit: 'discounted', gamma: 0.5 }, out);
    const recs = lines(out) as Array<{ group: string; rolloutId: string; call: number; reward: number; final_reward: number; air: number; credit: string; agent: string }>;
    const keys = recs.map((r) => [r.group, r.rolloutId, r.call] as const);
    assert.deepEqual(
      [...new Set(recs.map((r) => r.group))],
      ['t1', 't2', 't3'],
    );
    assert.deepEqual(
      [...new Set(recs.filter((r) => r.group === 't1').map((r) => r.rolloutId))],
      ['alpha', 'beta', 'zeta'].map(fixtureRolloutId),
      'rollouts of a group in start order',
    );
    for (let i = 1; i < keys.length; i++) {
      const [g0, r0, c0] = keys[i - 1]!;
      const [g1, r1, c1] = keys[i]!;
      if (g0 === g1 && r0 === r1) assert.ok(c0 < c1, 'calls in order');
    }
    assert.ok(recs.every((r) => r.credit === 'discounted'));
    assert.equal(m.options.credit, 'discounted');
    assert.equal(m.options.gamma, 0.5);
    assert.equal(m.counts.groups, 3);
    assert.equal(m.options.minReward, null, 'RL keeps low rewards: GRPO needs the spread');
    // beta's ProtocolDesigner made three calls: 0.25, 0.5, 1 × 0.4.
    const beta = recs.filter((r) => r.rolloutId === fixtureRolloutId('beta') && r.agent === 'ProtocolDesigner');
    assert.deepEqual(beta.map((r) => r.reward), [0.1, 0.2, 0.4]);
    // alpha's refiner: the tool call earned 0.05 AIR, the parsed answer 0.1, on top of the credited reward.
    const alpha = recs.filter((r) => r.rolloutId === fixtureRolloutId('alpha') && r.agent === 'HypothesisRefiner');
    assert.deepEqual(alpha.map((r) => r.air), [0.05, 0.1]);
    assert.deepEqual(alpha.map((r) => Math.round(r.reward * 1e9) / 1e9), [0.45, 0.9]);
  } finally {
    await f.cleanup();
  }
});

test('filters: agents, min reward, split, run, prompt version, model version; unknown agents and bad options are usage errors', async () => {
  const f = await fixture();
  try {
    const out = join(f.dir, 'x.jsonl');
    const rollouts = async (o: ExportOptions): Promise<string[]> => (await exportTrainingData(f.store, CONFIG, o, out)).sourceRollouts;
    assert.deepEqual(await rollouts({ format: 'sft', split: 'val' }), [fixtureRolloutId('epsilon')]);
    assert.deepEqual(await rollouts({ format: 'sft', minReward: 0.85 }), [fixtureRolloutId('gamma')]);
    assert.deepEqual((await emptyFacts(rollouts({ format: 'rl', runId: 'other-run' }), out)).skipped, {});
    assert.equal((await rollouts({ format: 'rl', runId: FIXTURE_RUN })).length, 4);
    assert.equal((await rollouts({ format: 'rl', runId: FIXTURE_RUN, split: 'all' })).length, 5);
    // Geneticist ran prompt version ge-2 only in epsilon; the other juniors' calls there are left out.
    const pv = await exportTrainingData(f.store, CONFIG, { format: 'sft', split: 'all', promptVersion: 'ge-2' }, out);
    assert.deepEqual(pv.sourceRollouts, [fixtureRolloutId('epsilon')]);
    assert.deepEqual(lines(out).map((l) => (l.metadata as { agent: string }).agent), ['Geneticist']);
    assert.equal(pv.counts.skipped['other_prompt_version'], 3);
    assert.equal(pv.counts.skipped['call_other_prompt_version'], 2);
    const mv = await emptyFacts(exportTrainingData(f.store, CONFIG, { format: 'rl', split: 'all', modelVersion: 'v9' }, out), out);
    assert.equal(mv.skipped['other_model_version'], 5);
    const pd = await exportTrainingData(f.store, CONFIG, { format: 'rl', split: 'all', agents: ['PeerReviewer', 'ProtocolDesigner'] }, out);
    assert.deepEqual([...new Set(lines(out).map((l) => l.agent))], ['ProtocolDesigner'], 'the fixture has no reviewer calls');
    assert.equal(pd.counts.records, 8);

    await assert.rejects(exportTrainingData(f.store, CONFIG, { format: 'sft', agents: ['Geneticist', 'Chemist'] }, out), (e: unknown) => {
      assert.ok(e instanceof UsageError);
      assert.match(e.message, /unknown agent "Chemist" — the agents in lab\.json are: .*Geneticist.*PrincipalInvestigator/);
      return true;
    });
    await assert.rejects(exportTrainingData(f.store, CONFIG, { format: 'bandit', agents: ['Geneticist'] }, out), UsageError);
    await assert.rejects(exportTrainingData(f.store, CONFIG, { format: 'rl', credit: 'first' as never }, out), /credit must be one of equal, last, discounted/);
    await assert.rejects(exportTrainingData(f.store, CONFIG, { format: 'rl', gamma: 2 }, out), /gamma must be between 0 and 1/);
    await assert.rejects(exportTrainingData(f.store, CONFIG, { format: 'dpo' as never }, out), /format must be one of sft, rl, bandit/);
    await assert.rejects(exportTrainingData(f.store, CONFIG, { format: 'sft', split: 'test' as never }, out), /the split must be train, val or all, got "test"/);
    await assert.rejects(exportTrainingData(f.store, CONFIG, { format: 'sft' }, f.dir), /is a folder/);
  } finally {
    await f.cleanup();
  }
});

test('deterministic: the same store exported twice gives the same bytes and hash', async () => {
  const f = await fixture();
  try {
    for (const format of ['sft', 'rl', 'bandit'] as const) {
      const a = await exportTrainingData(f.store, CONFIG, { format, minReward: 0, split: 'all' }, join(f.dir, `a-${format}.jsonl`));
      const b = await exportTrainingData(f.store, CONFIG, { format, minReward: 0, split: 'all' }, join(f.dir, `b-${format}.jsonl`));
      assert.ok(a.counts.records > 0);
      assert.deepEqual(readFileSync(a.file), readFileSync(b.file));
      assert.equal(a.sha256, b.sha256);
      assert.equal(a.sha256, createHash('sha256').update(readFileSync(a.file)).digest('hex'));
    }
  } finally {
    await f.cleanup();
  }
});

test('atomic: a failed or cancelled export leaves the previous file as it was and no temp file', async () => {
  const f = await fixture();
  try {
    const outDir = join(f.dir, 'exports');
    const out = join(outDir, 'data.jsonl');
    await exportTrainingData(f.store, CONFIG, { format: 'bandit' }, out);
    const before = readFileSync(out, 'utf8');
    writeFileSync(out, 'previous\n');
    const ac = new AbortController();
    await assert.rejects(
      exportTrainingData(f.store, CONFIG, { format: 'rl' }, out, { signal: ac.signal, onProgress: (done) => done === 2 && ac.abort() }),
      /cancelled/,
    );
    assert.equal(readFileSync(out, 'utf8'), 'previous\n');
    assert.deepEqual(readdirSync(outDir).sort(), ['data.jsonl', 'data.jsonl.manifest.json']);
    assert.ok(before.length > 0);
  } finally {
    await f.cleanup();
  }
});

interface TinyOptions {
  simulated?: boolean;
  status?: 'succeeded' | 'failed';
  reward?: number | null;
  agent?: string;
  split?: 'train' | 'val';
  judgeFailed?: boolean;
  /** The custom reward failed with this error (its reward span and the rollout span say so, as the runner writes them). */
  customError?: string;
  /** The model call is credited to this name, not the agent's node (a prebuilt agent's inner node). */
  caller?: string;
}

/** A one-call rollout (agent ProtocolDesigner unless told), written through the store's own API. */
function tinyRollout(store: TraceStore, i: number, o: TinyOptions = {}): string {
  const id = createHash('sha256').update(`tiny/${i}`).digest('hex').slice(0, 32);
  const sid = (n: number): string => createHash('sha256').update(`${id}/${n}`).digest('hex').slice(0, 16);
  const start = 1_000_000 + i * 10;
  const name = o.agent ?? 'ProtocolDesigner';
  const rec = {
    id,
    runId: 'run-big',
    taskId: `task-${i % 50}`,
    split: o.split ?? ('train' as const),
    sample: Math.floor(i / 50),
    status: 'running' as const,
    finalReward: null,
    criteria: null,
    judgeFailed: false,
    decision: null,
    expectedDecision: null,
    turns: null,
    error: null,
    simulated: o.simulated ?? false,
    startTime: start,
    endTime: null,
    spanCount: 0,
    agents: [],
  };
  store.startRollout(rec);
  const agent = { [Attr.agentName]: name, [Attr.promptVersion]: 'p1' };
  const caller = { [Attr.agentName]: o.caller ?? name, [Attr.promptVersion]: 'p1' };
  const spans: SpanRecord[] = [
    {
      traceId: id,
      spanId: sid(0),
      parentSpanId: null,
      name: 'rollout',
      kind: 'rollout',
      startTime: start,
      endTime: start + 5,
      status: 'ok',
      attributes: o.customError ? { [Attr.rewardError]: o.customError } : {},
    },
    { traceId: id, spanId: sid(1), parentSpanId: sid(0), name, kind: 'node', startTime: start + 1, endTime: start + 4, status: 'ok', attributes: { [Attr.nodeName]: name, ...agent } },
    {
      traceId: id,
      spanId: sid(2),
      parentSpanId: sid(1),
      name: 'chat',
      kind: 'llm',
      startTime: start + 2,
      endTime: start + 3,
      status: 'ok',
      attributes: {
        ...caller,
        [Attr.inputMessages]: JSON.stringify([{ role: 'system', content: 'design' }, { role: 'user', content: `task ${i}` }]),
        [Attr.outputMessages]: JSON.stringify([{ role: 'assistant', content: `{"title":"t${i}"}` }]),
      },
    },
  ];
  if (o.customError) {
    const attributes = { [Attr.rewardName]: 'custom', [Attr.rewardKind]: 'custom', [Attr.errorType]: 'custom_reward_failed' };
    spans.push({ traceId: id, spanId: sid(3), parentSpanId: sid(0), name: 'custom', kind: 'reward', startTime: start + 4, endTime: start + 5, status: 'error', statusMessage: o.customError, attributes });
  }
  if (o.judgeFailed) {
    const attributes = { [Attr.rewardName]: 'judge', [Attr.rewardKind]: 'judge', [Attr.errorType]: 'judge_failed' };
    spans.push({ traceId: id, spanId: sid(4), parentSpanId: sid(0), name: 'judge', kind: 'reward', startTime: start + 4, endTime: start + 5, status: 'error', statusMessage: 'the judge gave no JSON', attributes });
  }
  for (const s of spans) store.writeSpan(s);
  const summary = (agentName: string, visits: number, llmCalls: number) =>
    ({ agent: agentName, promptVersion: 'p1', model: 'm', modelVersion: null, visits, llmCalls, toolCalls: 0, errors: 0, inputTokens: 0, outputTokens: 0, latencyMs: 0 });
  store.finishRollout({
    ...rec,
    judgeFailed: o.judgeFailed === true,
    status: o.status ?? 'succeeded',
    finalReward: o.reward !== undefined ? o.reward : (i % 10) / 10,
    endTime: start + 5,
    spanCount: spans.length,
    agents: o.caller ? [summary(name, 1, 0), summary(o.caller, 0, 1)] : [summary(name, 1, 1)],
  });
  return id;
}

test('streaming: 2,000 rollouts are read one at a time, each written out before the next is read', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-export-big-'));
  const store = await TraceStore.open(dir);
  try {
    const N = 2000;
    for (let i = 0; i < N; i++) tinyRollout(store, i);
    const outDir = join(dir, 'out');
    const out = join(outDir, 'rl.jsonl');
    // Each rollout gives one line: when rollout k is read, the temp file must already hold k lines.
    const read = store.getSpans.bind(store);
    let reads = 0;
    let checked = 0;
    store.getSpans = (id: string): SpanRecord[] => {
      const tmp = existsSync(outDir) ? readdirSync(outDir).find((n) => n.endsWith('.tmp')) : undefined;
      if (tmp && reads % 250 === 0) {
        assert.equal(readFileSync(join(outDir, tmp), 'utf8').split('\n').filter(Boolean).length, reads);
        checked++;
      }
      reads++;
      return read(id);
    };
    const m = await exportTrainingData(store, CONFIG, { format: 'rl' }, out);
    assert.equal(reads, N);
    assert.ok(checked >= 7);
    assert.equal(m.counts.records, N);
    assert.equal(m.counts.groups, 50);
    assert.equal(m.sourceRollouts.length, N);
    const recs = lines(out);
    assert.equal(recs.length, N);
    assert.equal(recs[0]!.group, 'task-0');
    assert.equal(recs[N - 1]!.group, 'task-9');
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a real store from the simulated endpoint: every SFT line is ready for a chat template, tool use included', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-export-sim-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  const lab = await Lab.open({ workspace: dir, env: {} });
  try {
    const ds = await lab.loadDataset();
    const env = await lab.environment(ds.tasks);
    await runRollouts(env, { tasks: lab.selectTasks(ds, { split: 'train', limit: 2, seed: 3 }), samples: 2, concurrency: 2, params: {}, seed: 3 });
    const out = join(dir, 'sft.jsonl');
    const agents = ['Geneticist', 'Pharmacologist', 'Neurologist', 'HypothesisRefiner', 'ProtocolDesigner', 'Supervisor'];
    // Every rollout here is simulated: left out unless asked for, and counted.
    const left = await emptyFacts(exportTrainingData(lab.store, lab.loaded.config, { format: 'sft', minReward: 0, agents }, out), out);
    assert.deepEqual(left.skipped, { simulated: 4 });
    const m = await exportTrainingData(lab.store, lab.loaded.config, { format: 'sft', minReward: 0, agents, includeSimulated: true }, out);
    const recs = lines(out) as unknown as Array<{ messages: ChatMessage[]; tools: Array<{ type: string; function: { name: string; parameters: unknown } }> }>;
    assert.ok(recs.length >= 4 * 6, `${recs.length} lines`);
    for (const r of recs) assertTemplateReady(r);
    assert.ok(recs.some((r) => r.messages.some((x) => x.role === 'tool')), 'tool results kept');
    assert.ok(recs.some((r) => r.messages.at(-1)!.tool_calls?.length), 'a completion that calls tools');
    assert.deepEqual(Object.keys(m.counts.skipped).filter((k) => k.startsWith('call_')), []);
    const rl = await exportTrainingData(lab.store, lab.loaded.config, { format: 'rl', includeSimulated: true }, join(dir, 'rl.jsonl'));
    assert.equal(rl.counts.rollouts, 4);
    assert.equal(rl.counts.groups, 2);
  } finally {
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

async function emptyStore(): Promise<{ store: TraceStore; dir: string; cleanup: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-export-made-'));
  const store = await TraceStore.open(dir);
  return {
    store,
    dir,
    cleanup: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

test('simulated rollouts are left out of every format by default and counted; includeSimulated takes them', async () => {
  const { store, dir, cleanup } = await emptyStore();
  try {
    const real = [0, 1, 2, 3].map((i) => tinyRollout(store, i, { reward: 0.9 }));
    const simulated = [4, 5, 6].map((i) => tinyRollout(store, i, { reward: 0.9, simulated: true }));
    for (const format of ['sft', 'rl'] as const) {
      const out = join(dir, `${format}.jsonl`);
      const m = await exportTrainingData(store, CONFIG, { format, agents: ['ProtocolDesigner'] }, out);
      assert.deepEqual(new Set(m.sourceRollouts), new Set(real), `${format}: only the real rollouts`);
      assert.deepEqual(m.counts.skipped, { simulated: 3 });
      assert.equal(m.options.includeSimulated, false);
      const onDisk = JSON.parse(readFileSync(manifestPath(out), 'utf8')) as ExportManifest;
      assert.equal(onDisk.counts.skipped.simulated, 3, 'the manifest says how many were left out');
      const all = await exportTrainingData(store, CONFIG, { format, agents: ['ProtocolDesigner'], includeSimulated: true }, out);
      assert.deepEqual(new Set(all.sourceRollouts), new Set([...real, ...simulated]));
      assert.deepEqual(all.counts.skipped, {});
      assert.equal(all.options.includeSimulated, true);
    }
  } finally {
    await cleanup();
  }
});

test('RL keeps failed rollouts the runner still scored (no output), SFT leaves them out; failures without a reward stay out of both', async () => {
  const { store, dir, cleanup } = await emptyStore();
  try {
    const ok = tinyRollout(store, 0, { reward: 0.8 });
    const scored = tinyRollout(store, 1, { status: 'failed', reward: 0 });
    tinyRollout(store, 2, { status: 'failed', reward: null });
    const rl = await exportTrainingData(store, CONFIG, { format: 'rl', agents: ['ProtocolDesigner'] }, join(dir, 'rl.jsonl'));
    assert.deepEqual(rl.sourceRollouts, [ok, scored]);
    assert.deepEqual(rl.counts.skipped, { failed: 1 });
    const recs = lines(join(dir, 'rl.jsonl')) as Array<{ rolloutId: string; final_reward: number; reward: number }>;
    assert.deepEqual(recs.find((r) => r.rolloutId === scored)!.final_reward, 0, 'the scored failure is a negative example');
    const sft = await exportTrainingData(store, CONFIG, { format: 'sft', agents: ['ProtocolDesigner'], minReward: 0 }, join(dir, 'sft.jsonl'));
    assert.deepEqual(sft.sourceRollouts, [ok]);
    assert.deepEqual(sft.counts.skipped, { failed: 2 });
  } finally {
    await cleanup();
  }
});

test('penalised rollouts (the judge or the custom reward failed) are left out and counted in every format; included, their rows say reward_source "penalty" and why', async () => {
  const { store, dir, cleanup } = await emptyStore();
  try {
    const ok = tinyRollout(store, 0, { reward: 0.9 });
    const judged = tinyRollout(store, 1, { reward: 0.1, judgeFailed: true });
    const custom = tinyRollout(store, 2, { reward: 0, customError: 'reward.ts threw: no gold answer' });
    const scoredFailure = tinyRollout(store, 3, { status: 'failed', reward: 0 });
    for (const format of ['sft', 'rl'] as const) {
      const out = join(dir, `${format}.jsonl`);
      const left = await exportTrainingData(store, CONFIG, { format, agents: ['ProtocolDesigner'], minReward: 0 }, out);
      assert.deepEqual(left.sourceRollouts, format === 'rl' ? [ok, scoredFailure] : [ok]);
      assert.equal(left.counts.skipped.penalised, 2, format);
      assert.equal(left.counts.penalised, 0);
      assert.equal(left.options.includePenalised, false);
      const all = await exportTrainingData(store, CONFIG, { format, agents: ['ProtocolDesigner'], minReward: 0, includePenalised: true }, out);
      assert.equal(all.counts.penalised, 2);
      assert.equal(all.counts.skipped.penalised, undefined);
      const origin = new Map(
        lines(out).map((l) => {
          const o = (format === 'rl' ? l : l.metadata) as { rolloutId: string; reward_source: string; penalty: unknown };
          return [format === 'rl' ? (l.rolloutId as string) : o.rolloutId, [o.reward_source, o.penalty]];
        }),
      );
      assert.deepEqual(origin.get(ok), ['scored', null]);
      assert.deepEqual(origin.get(judged), ['penalty', { kind: 'judge_failed', reason: 'the judge gave no JSON' }]);
      assert.deepEqual(origin.get(custom), ['penalty', { kind: 'custom_reward_failed', reason: 'reward.ts threw: no gold answer' }]);
      if (format === 'rl') assert.deepEqual(origin.get(scoredFailure), ['no_output', null], 'a scored failure says its reward is the no-output reward');
    }
    // Only penalised rollouts: the export fails, counting them and saying how to include them.
    const { store: only, dir: onlyDir, cleanup: done } = await emptyStore();
    try {
      tinyRollout(only, 0, { reward: 0.1, judgeFailed: true });
      const facts = await emptyFacts(exportTrainingData(only, CONFIG, { format: 'rl', agents: ['ProtocolDesigner'] }, join(onlyDir, 'rl.jsonl')), join(onlyDir, 'rl.jsonl'));
      assert.deepEqual(facts.skipped, { penalised: 1 });
    } finally {
      await done();
    }
  } finally {
    await cleanup();
  }
});

test('an agent whose node ran but whose model calls carry another name: 0 rows is an error naming the agents that made the calls', async () => {
  const { store, dir, cleanup } = await emptyStore();
  try {
    // A prebuilt agent inside the Solver node: the node span is Solver's, the model calls are credited to "agent".
    for (const i of [0, 1, 2]) tinyRollout(store, i, { agent: 'Solver', caller: 'agent', reward: 0.9 });
    const cfg = LabConfigSchema.parse({ ...defaultLabConfig(), graph: { kind: 'module', module: 'graph.ts' }, agents: { Solver: { model: 'senior', promptText: 'Solve.' } } });
    for (const format of ['sft', 'rl'] as const) {
      const out = join(dir, `${format}.jsonl`);
      let message = '';
      const facts = await emptyFacts(
        exportTrainingData(store, cfg, { format, agents: ['Solver'] }, out).catch((e: Error) => {
          message = e.message;
          throw e;
        }),
        out,
      );
      assert.deepEqual(facts.skipped, { no_agent_calls: 3 });
      assert.deepEqual(facts.agentsSeen, ['agent']);
      assert.match(message, /dropped: agent not found: 3 rollouts with no model call of Solver \(the agents that made model calls are: agent — name one with --agents/);
    }
    // The same store exports the calls under the name they carry.
    const m = await exportTrainingData(store, cfg, { format: 'rl', agents: ['agent'] }, join(dir, 'agent.jsonl'));
    assert.equal(m.counts.records, 3);
  } finally {
    await cleanup();
  }
});

/** A lab whose own graph has three agents, as a text-to-SQL user's. */
function moduleConfig(trainable: string[] = []): LabConfig {
  const base = defaultLabConfig();
  const agent = (name: string): Record<string, unknown> => ({ model: 'senior', promptText: `You are the ${name}.`, ...(trainable.includes(name) ? { trainable: true } : {}) });
  return LabConfigSchema.parse({
    ...base,
    graph: { kind: 'module', module: 'graph.ts' },
    agents: { SqlWriter: agent('SqlWriter'), Checker: agent('Checker'), Rewriter: agent('Rewriter') },
  });
}

test('a module graph: the agents that made model calls by default (or those marked trainable); named agents must exist; the bandit says it needs the research-lab graph', async () => {
  const { store, dir, cleanup } = await emptyStore();
  try {
    tinyRollout(store, 0, { agent: 'Checker' });
    tinyRollout(store, 1, { agent: 'SqlWriter' });
    tinyRollout(store, 2, { agent: 'Rewriter', split: 'val' });
    tinyRollout(store, 3, { agent: 'Rewriter', simulated: true });
    const out = join(dir, 'x.jsonl');
    const cfg = moduleConfig();
    // In lab.json order; Rewriter ran only in the val split and in a simulated rollout.
    assert.deepEqual((await exportTrainingData(store, cfg, { format: 'rl' }, out)).options.agents, ['SqlWriter', 'Checker']);
    assert.deepEqual((await exportTrainingData(store, cfg, { format: 'sft', minReward: 0 }, out)).options.agents, ['SqlWriter', 'Checker']);
    assert.deepEqual((await exportTrainingData(store, cfg, { format: 'rl', split: 'all' }, out)).options.agents, ['SqlWriter', 'Checker', 'Rewriter']);
    assert.deepEqual((await exportTrainingData(store, cfg, { format: 'rl', includeSimulated: true }, out)).options.agents, ['SqlWriter', 'Checker', 'Rewriter']);
    const rl = await exportTrainingData(store, cfg, { format: 'rl' }, out);
    assert.equal(rl.counts.records, 2);
    assert.deepEqual(new Set(lines(out).map((l) => l.agent)), new Set(['SqlWriter', 'Checker']));
    assert.deepEqual((await exportTrainingData(store, moduleConfig(['Rewriter']), { format: 'rl', split: 'all' }, out)).options.agents, ['Rewriter']);

    await assert.rejects(exportTrainingData(store, cfg, { format: 'sft', agents: ['Geneticist'] }, out), (e: unknown) => {
      assert.ok(e instanceof UsageError);
      assert.match(e.message, /unknown agent "Geneticist" — the agents in lab\.json are: SqlWriter, Checker, Rewriter/);
      return true;
    });
    await assert.rejects(exportTrainingData(store, cfg, { format: 'bandit' }, out), (e: unknown) => {
      assert.ok(e instanceof UsageError);
      assert.match(e.message, /only the built-in research-lab graph records; this lab runs its own graph \(graph\.kind "module"\) — train its agents with sft or grpo/);
      return true;
    });
  } finally {
    await cleanup();
  }
});
