import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultLabConfig } from '../../../src/core/lab/labTemplates';
import { loadConfig } from '../../../src/core/config/loader';
import {
  activateModelVersion,
  agentRoutes,
  readRegistry,
  registerModelVersion,
  registryFile,
  rollbackModelVersion,
} from '../../../src/core/config/modelRegistry';
import { ModelRouter } from '../../../src/core/llm/routing';
import { ConfigError, UsageError } from '../../../src/core/errors';

function workspace(t: { after: (fn: () => void) => void }): { ws: string; labDir: string } {
  const ws = mkdtempSync(path.join(os.tmpdir(), 'rl-registry-'));
  t.after(() => rmSync(ws, { recursive: true, force: true }));
  const labDir = path.join(ws, '.rollout-lab');
  mkdirSync(labDir, { recursive: true });
  writeFileSync(path.join(labDir, 'lab.json'), JSON.stringify(defaultLabConfig(), null, 2));
  return { ws, labDir };
}

test('register activates; activate and rollback walk the activation history back to lab.json', (t) => {
  const { labDir } = workspace(t);
  assert.deepEqual(readRegistry(labDir), { version: 1, models: {} }, 'no file: an empty registry');

  const e1 = registerModelVersion(labDir, 'junior', { version: 'sft-1', model: 'junior-sft-1', producedBy: { phase: 'sft-juniors', at: 1 } });
  assert.equal(e1.active, 'sft-1');
  assert.deepEqual(e1.history, ['sft-1']);
  const e2 = registerModelVersion(labDir, 'junior', { version: 'sft-2', baseUrl: 'http://127.0.0.1:8000/v1', model: 'junior-sft-2' });
  assert.equal(e2.active, 'sft-2');
  assert.deepEqual(e2.history, ['sft-1', 'sft-2']);
  assert.deepEqual(e2.versions.map((v) => v.version), ['sft-1', 'sft-2']);
  assert.equal(e2.versions[0]!.producedBy?.phase, 'sft-juniors');
  assert.ok(e2.versions[1]!.registeredAt > 0);

  // Registering the same version with the same settings only activates it; other settings are refused.
  assert.equal(registerModelVersion(labDir, 'junior', { version: 'sft-2', baseUrl: 'http://127.0.0.1:8000/v1', model: 'junior-sft-2' }).history.length, 2);
  assert.throws(() => registerModelVersion(labDir, 'junior', { version: 'sft-2', model: 'other' }), (e: unknown) => e instanceof UsageError && /already registered/.test(e.message));
  assert.throws(() => registerModelVersion(labDir, 'junior', { version: 'x', baseUrl: 'not a url' }), UsageError);
  // A version served again at a new endpoint takes the new settings when asked to.
  const moved = registerModelVersion(labDir, 'junior', { version: 'sft-2', baseUrl: 'http://127.0.0.1:8001/v1', model: 'junior-sft-2' }, { update: true });
  assert.deepEqual([moved.active, moved.history, moved.versions.find((v) => v.version === 'sft-2')!.baseUrl], ['sft-2', ['sft-1', 'sft-2'], 'http://127.0.0.1:8001/v1']);
  assert.equal(moved.versions.length, 2);
  registerModelVersion(labDir, 'junior', { version: 'sft-2', baseUrl: 'http://127.0.0.1:8000/v1', model: 'junior-sft-2' }, { update: true });

  const a = activateModelVersion(labDir, 'junior', 'sft-1');
  assert.deepEqual([a.active, a.history], ['sft-1', ['sft-1', 'sft-2', 'sft-1']]);
  assert.throws(() => activateModelVersion(labDir, 'junior', 'nope'), /no registered version "nope"/);

  assert.equal(rollbackModelVersion(labDir, 'junior').active, 'sft-2', 'back to the previously active version');
  assert.equal(rollbackModelVersion(labDir, 'junior').active, 'sft-1');
  const base = rollbackModelVersion(labDir, 'junior');
  assert.equal(base.active, null, "then lab.json's own settings");
  assert.deepEqual(base.versions.map((v) => v.version), ['sft-1', 'sft-2'], 'versions stay registered');
  assert.throws(() => rollbackModelVersion(labDir, 'junior'), (e: unknown) => e instanceof UsageError && /lab\.json's own settings/.test(e.message));
  assert.throws(() => rollbackModelVersion(labDir, 'senior'), UsageError);

  // Written atomically: no temp files left beside it, and the file is the registry.
  assert.deepEqual(readdirSync(labDir).filter((f) => f.includes('.tmp')), []);
  assert.equal(JSON.parse(readFileSync(registryFile(labDir), 'utf8')).models.junior.versions.length, 2);
});

test('loadConfig lays the active version over lab.json; the router and the base settings show it', async (t) => {
  const { ws, labDir } = workspace(t);
  const before = await loadConfig(ws);
  assert.deepEqual(before.overlaid, {});
  assert.equal(before.config.models.junior!.version, undefined);

  registerModelVersion(labDir, 'senior', { version: 'grpo-1', baseUrl: 'http://127.0.0.1:9/v1', model: 'senior-grpo-1', adapter: 'adapters/grpo-1' });
  registerModelVersion(labDir, 'junior', { version: 'sft-1' });
  registerModelVersion(labDir, 'ghost', { version: 'g1' });
  const after = await loadConfig(ws);
  assert.deepEqual(after.overlaid, {
    senior: { version: 'grpo-1', baseUrl: 'http://127.0.0.1:9/v1', model: 'senior-grpo-1', adapter: 'adapters/grpo-1' },
    junior: { version: 'sft-1' },
  });
  assert.equal(after.config.models.ghost, undefined, 'a model lab.json does not define is not added');
  assert.equal(after.config.models.junior!.model, 'qwen2.5:1.5b-instruct', 'a version without a model id keeps lab.json\'s');
  assert.equal(after.baseModels.senior!.model, 'llama3.1:8b-instruct', "lab.json's own settings are kept beside");
  assert.equal(after.baseModels.senior!.version, undefined);

  const router = new ModelRouter(after.config, { simulatedBaseUrl: 'http://127.0.0.1:1/v1', env: {}, served: after.overlaid });
  const senior = router.forAgent('HypothesisRefiner');
  assert.deepEqual([senior.baseUrl, senior.model, senior.version, senior.simulated], ['http://127.0.0.1:9/v1', 'senior-grpo-1', 'grpo-1', false]);
  assert.deepEqual(senior.served, { version: 'grpo-1' }, 'the endpoint is a served registry version');
  const junior = router.forAgent('Geneticist');
  assert.deepEqual([junior.version, junior.simulated, junior.served], ['sft-1', true, undefined], 'a version without an endpoint is not served by a job');
  const overridden = new ModelRouter(after.config, { overrideBaseUrl: 'http://127.0.0.1:2/v1', env: {}, served: after.overlaid }).forAgent('HypothesisRefiner');
  assert.equal(overridden.served, undefined, '--base-url sends the calls elsewhere');

  rollbackModelVersion(labDir, 'senior');
  const back = await loadConfig(ws);
  assert.equal(back.config.models.senior!.version, undefined);
  assert.equal(back.config.models.senior!.model, 'llama3.1:8b-instruct');
  assert.equal(back.config.models.senior!.baseUrl, undefined);
});

test('a corrupt registry is a clear error naming the file, and is never overwritten', async (t) => {
  const { ws, labDir } = workspace(t);
  const file = registryFile(labDir);
  for (const text of ['{ "version": 1, "models": { "junior": ', '{"version":1,"models":{"junior":{"active":"v9","history":[],"versions":[]}}}', '{"version":2,"models":{}}']) {
    writeFileSync(file, text);
    for (const attempt of [
      () => readRegistry(labDir),
      () => registerModelVersion(labDir, 'junior', { version: 'v1' }),
      () => rollbackModelVersion(labDir, 'junior'),
    ]) {
      assert.throws(attempt, (e: unknown) => e instanceof ConfigError && e.message.includes(file) && !e.message.includes('\n'));
    }
    await assert.rejects(loadConfig(ws), (e: unknown) => e instanceof ConfigError && e.message.includes(file));
    assert.equal(readFileSync(file, 'utf8'), text, 'nothing lost');
  }
});

test('a version registered for some agents of a shared model routes only them; the others keep their route, and rollback pops one entry', async (t) => {
  const { ws, labDir } = workspace(t);
  // Share "junior" between the three juniors and the Supervisor, as labs made before the Supervisor had its own model do.
  const file = path.join(labDir, 'lab.json');
  const cfg = JSON.parse(readFileSync(file, 'utf8'));
  cfg.agents.Supervisor.model = 'junior';
  writeFileSync(file, JSON.stringify(cfg, null, 2));
  const routes = async (): Promise<Record<string, string | null>> => {
    const loaded = await loadConfig(ws);
    const router = new ModelRouter(loaded.config, { simulatedBaseUrl: 'http://127.0.0.1:1/v1', env: {}, agentModels: loaded.agentModels });
    return Object.fromEntries(['Geneticist', 'Pharmacologist', 'Neurologist', 'Supervisor'].map((a) => [a, router.forAgent(a).version]));
  };

  registerModelVersion(labDir, 'junior', { version: 'base-1' });
  registerModelVersion(labDir, 'junior', { version: 'sft-a', baseUrl: 'http://127.0.0.1:9/v1', model: 'junior-sft-a', agents: ['Geneticist', 'Pharmacologist'] });
  registerModelVersion(labDir, 'junior', { version: 'sft-b', baseUrl: 'http://127.0.0.1:8/v1', model: 'junior-sft-b', agents: ['Neurologist'] });
  assert.deepEqual(await routes(), { Geneticist: 'sft-a', Pharmacologist: 'sft-a', Neurologist: 'sft-b', Supervisor: 'base-1' }, 'one adapter per agent group; the Supervisor keeps the model-wide version');

  const loaded = await loadConfig(ws);
  assert.equal(loaded.config.models.junior!.version, 'base-1', 'the model itself (the judge, ctx.model("junior")) stays on the newest version that serves every agent');
  assert.deepEqual(Object.keys(loaded.agentModels).sort(), ['Geneticist', 'Neurologist', 'Pharmacologist']);
  const router = new ModelRouter(loaded.config, { simulatedBaseUrl: 'http://127.0.0.1:1/v1', env: {}, agentModels: loaded.agentModels });
  const g = router.forAgent('Geneticist');
  assert.deepEqual([g.logical, g.baseUrl, g.model, g.simulated, g.temperature], ['junior', 'http://127.0.0.1:9/v1', 'junior-sft-a', false, 0.7]);
  const sup = router.forAgent('Supervisor');
  assert.deepEqual([sup.baseUrl, sup.simulated, sup.temperature], ['http://127.0.0.1:1/v1', true, 0], "the agent's own temperature still applies");
  assert.equal(router.forAgent('Geneticist', 'senior').logical, 'senior', 'a variant that moves the agent to another model leaves its own route behind');
  assert.equal(router.forAgent('Geneticist', 'senior').version, null);
  assert.deepEqual(agentRoutes(loaded.config, 'junior', readRegistry(labDir).models.junior), [
    { agent: 'Geneticist', version: 'sft-a' },
    { agent: 'Pharmacologist', version: 'sft-a' },
    { agent: 'Neurologist', version: 'sft-b' },
    { agent: 'Supervisor', version: 'base-1' },
  ]);

  assert.throws(
    () => registerModelVersion(labDir, 'junior', { version: 'sft-a', baseUrl: 'http://127.0.0.1:9/v1', model: 'junior-sft-a', agents: ['Geneticist'] }),
    (e: unknown) => e instanceof UsageError && /already registered for agents Geneticist, Pharmacologist, not agents Geneticist/.test(e.message),
  );
  assert.throws(() => registerModelVersion(labDir, 'junior', { version: 'none', agents: [] }), UsageError);

  // Each rollback undoes one registration, for the agents it served.
  rollbackModelVersion(labDir, 'junior');
  assert.deepEqual(await routes(), { Geneticist: 'sft-a', Pharmacologist: 'sft-a', Neurologist: 'base-1', Supervisor: 'base-1' });
  rollbackModelVersion(labDir, 'junior');
  assert.deepEqual(await routes(), { Geneticist: 'base-1', Pharmacologist: 'base-1', Neurologist: 'base-1', Supervisor: 'base-1' });
  assert.deepEqual((await loadConfig(ws)).agentModels, {});
  // A model-wide version activated after a scoped one routes every agent to it again.
  activateModelVersion(labDir, 'junior', 'sft-b');
  activateModelVersion(labDir, 'junior', 'base-1');
  assert.deepEqual(await routes(), { Geneticist: 'base-1', Pharmacologist: 'base-1', Neurologist: 'base-1', Supervisor: 'base-1' });
  rollbackModelVersion(labDir, 'junior');
  assert.deepEqual(await routes(), { Geneticist: 'base-1', Pharmacologist: 'base-1', Neurologist: 'sft-b', Supervisor: 'base-1' });
});

test('an agent routed to a version without an endpoint of a model whose own route has one still reaches the simulator', async (t) => {
  const { ws, labDir } = workspace(t);
  registerModelVersion(labDir, 'junior', { version: 'served', baseUrl: 'http://127.0.0.1:9/v1' });
  registerModelVersion(labDir, 'junior', { version: 'label-only', agents: ['Neurologist'] });
  const loaded = await loadConfig(ws);
  const router = new ModelRouter(loaded.config, { simulatedBaseUrl: 'http://127.0.0.1:1/v1', env: {}, agentModels: loaded.agentModels });
  assert.ok(router.simulatedModels().includes('junior'), 'the simulator is started for the Neurologist');
  assert.deepEqual([router.forAgent('Neurologist').simulated, router.forAgent('Geneticist').simulated], [true, false]);
});
