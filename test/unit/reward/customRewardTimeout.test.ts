import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { LabConfigSchema } from '../../../src/core/config/schema';
import { ConfigError } from '../../../src/core/errors';
import { DEFAULT_CUSTOM_TIMEOUT_MS, loadCustomReward, type CustomRewardInput } from '../../../src/core/reward/customReward';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts } from '../../../src/core/rollout/runner';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

/** Awaits a promise that is never settled: the reward never returns. */
const NEVER = `export default async function reward() {\n  await new Promise(() => undefined);\n  return 1;\n}\n`;
const PROMPT = `export default function reward(input) {\n  return input.outcome.turns > 0 ? 0.75 : 0.25;\n}\n`;

function input(): CustomRewardInput {
  return {
    task: { id: 't1', goal: 'g', context: 'c', expected: null, expectedDecision: null, meta: {} },
    outcome: { finalOutput: 'x', decision: 'GO', turns: 3, failures: [] },
    spans: [],
    judge: () => Promise.reject(new Error('no judge here')),
  };
}

function scratch(): { dir: string; write: (name: string, text: string) => string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'rl-reward-timeout-'));
  return {
    dir,
    write: (name, text) => {
      const file = join(dir, name);
      mkdirSync(join(file, '..'), { recursive: true });
      writeFileSync(file, text);
      return file;
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

test('reward.customTimeoutMs: 30 s by default, a whole number of ms, 1 or more', () => {
  const base = { models: { strong: { model: 'x' } }, agents: {} };
  assert.equal(LabConfigSchema.parse(base).reward.customTimeoutMs, 30_000);
  assert.equal(DEFAULT_CUSTOM_TIMEOUT_MS, 30_000);
  assert.equal(LabConfigSchema.parse({ ...base, reward: { customTimeoutMs: 1 } }).reward.customTimeoutMs, 1);
  assert.equal(LabConfigSchema.safeParse({ ...base, reward: { customTimeoutMs: 0 } }).success, false);
  assert.equal(LabConfigSchema.safeParse({ ...base, reward: { customTimeoutMs: 2.5 } }).success, false);
  const schema = JSON.parse(readFileSync(resolve(__dirname, '../../../media/lab.schema.json'), 'utf8')) as {
    properties: { reward: { properties: Record<string, { default?: unknown; minimum?: number }> } };
  };
  const prop = schema.properties.reward.properties['customTimeoutMs'];
  assert.equal(prop?.default, 30_000, 'media/lab.schema.json was regenerated');
  assert.equal(prop?.minimum, 1);
});

test('a reward that never returns fails after the limit, naming the file and the setting; a prompt one is untouched', async () => {
  const s = scratch();
  try {
    const never = await loadCustomReward(s.write('never.ts', NEVER), { timeoutMs: 20 });
    assert.equal(never.timeoutMs, 20);
    const r = await never.evaluate(input());
    assert.equal(r.ok, false);
    assert.ok(!r.ok && r.error.includes(never.file), r.ok ? '' : r.error);
    assert.match(r.ok ? '' : r.error, /did not return within 20 ms/);
    assert.match(r.ok ? '' : r.error, /"reward\.customTimeoutMs"/);

    const quick = await loadCustomReward(s.write('quick.js', PROMPT), { timeoutMs: 60_000 });
    assert.deepEqual(await quick.evaluate(input()), { ok: true, reward: 0.75, breakdown: {} });
    assert.equal((await loadCustomReward(s.write('default.js', PROMPT))).timeoutMs, DEFAULT_CUSTOM_TIMEOUT_MS);

    await assert.rejects(loadCustomReward(s.write('zero.js', PROMPT), { timeoutMs: 0 }), (e: Error) => e instanceof ConfigError && /customTimeoutMs/.test(e.message));
  } finally {
    s.cleanup();
  }
});

test('a rollout whose custom reward never returns, or busy-loops, fails as a timeout naming the module and the setting; its trace keeps an error span', async () => {
  const s = scratch();
  await initWorkspace(s.dir, { dataset: PUBMEDQA });
  const cfgFile = join(s.dir, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
  // The module runs in a worker thread of its own: the lab keeps the time and stops the worker, even in a busy loop.
  cfg.reward = { ...(cfg.reward ?? {}), module: 'rewards/never.ts', customFailurePenalty: 0.05, customTimeoutMs: 300 };
  writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
  // The first call (whichever worker makes it) busy-loops; the other awaits for ever.
  const flag = join(s.dir, 'looped');
  s.write(
    'rewards/never.ts',
    `import { writeFileSync } from 'node:fs';\nexport default async function reward() {\n  let first = true;\n  try { writeFileSync(${JSON.stringify(flag)}, 'x', { flag: 'wx' }); } catch { first = false; }\n  if (first) for (;;) {}\n  await new Promise(() => undefined);\n  return 1;\n}\n`,
  );
  const lab = await Lab.open({ workspace: s.dir, env: {} });
  try {
    const ds = await lab.loadDataset();
    const tasks = lab.selectTasks(ds, { split: 'train', limit: 2, seed: 3 });
    const env = await lab.environment(ds.tasks);
    const result = await runRollouts(env, { tasks, samples: 1, concurrency: 2, params: {}, seed: 3 });
    assert.equal(result.rollouts.length, 2);
    for (const x of result.rollouts) {
      assert.equal(x.status, 'failed');
      assert.equal(x.failure, 'timeout');
      assert.equal(x.finalReward, null);
      assert.equal(x.error, 'reward module rewards/never.ts did not answer within reward.customTimeoutMs = 300 ms; make it return sooner, or raise "reward.customTimeoutMs" in .rollout-lab/lab.json');
      const span = lab.store.getSpans(x.id).find((sp) => sp.kind === 'reward' && sp.name === 'custom')!;
      assert.equal(span.status, 'error');
      assert.equal(span.statusMessage, x.error);
    }
  } finally {
    await lab.close();
    s.cleanup();
  }
});
