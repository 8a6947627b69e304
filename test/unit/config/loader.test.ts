import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigValidationError } from '../../../src/core/config/configIssues';
import { defaultLabConfig } from '../../../src/core/lab/labTemplates';
import { loadConfig, parseLabConfigText } from '../../../src/core/config/loader';
import { ConfigError } from '../../../src/core/errors';
import { RESEARCH_LAB_AGENTS } from '../../../src/core/graph/researchLab/outputs';

function workspace(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rl-config-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function writeLab(ws: string, text: string): string {
  const file = path.join(ws, '.rollout-lab', 'lab.json');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

/** The default config as text, with one change applied. */
function labText(edit: (cfg: any) => void = () => {}): string {
  const cfg: any = structuredClone(defaultLabConfig());
  edit(cfg);
  return JSON.stringify(cfg, null, 2);
}

async function rejects(p: Promise<unknown>): Promise<ConfigError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    assert.equal(err.exitCode, 2);
    assert.ok(!err.message.includes('\n'), `message is one line: ${err.message}`);
    return err;
  }
  assert.fail('expected loadConfig to reject');
}

test('the default config loads with its defaults filled in', async (t) => {
  const ws = workspace(t);
  const file = writeLab(ws, labText());
  const loaded = await loadConfig(ws);
  assert.equal(loaded.file, file);
  assert.equal(loaded.labDir, path.join(ws, '.rollout-lab'));
  assert.equal(loaded.workspaceDir, ws);
  const { config } = loaded;
  assert.deepEqual(Object.keys(config.agents), [...RESEARCH_LAB_AGENTS]);
  assert.equal(config.agents.Geneticist.model, 'junior');
  assert.equal(config.agents.HypothesisRefiner.model, 'senior');
  assert.equal(config.agents.PrincipalInvestigator.model, 'strong');
  assert.equal(config.agents.Supervisor.temperature, 0);
  assert.deepEqual(config.agents.PeerReviewer.tools, []);
  assert.equal(config.agents.ProtocolDesigner.tools.length, 4);
  assert.equal(config.models.junior.baseUrl, undefined, 'fresh workspaces use the simulated endpoint');
  assert.equal(config.models.junior.temperature, 0.7);
  assert.equal(config.models.senior.timeoutMs, 120_000);
  assert.equal(config.runner.maxTurns, 15);
  assert.equal(config.reward.criteria.impact.weight, 0.3);
  assert.equal(config.tools.excludeCurrentTask, true);
  assert.deepEqual(
    config.air.map((r) => [r.when, r.reward]),
    [
      ['tool.ok', 0.05],
      ['tool.error', -0.05],
      ['output.invalid', -0.1],
    ],
  );
});

test('comments and trailing commas are accepted (JSONC, as VS Code settings)', async (t) => {
  const ws = workspace(t);
  const text = labText().replace('{', '{\n  // the lab\n  /* block */').replace(/\n}$/, ',\n}');
  writeLab(ws, text);
  const { config } = await loadConfig(ws);
  assert.equal(config.models.strong.model, 'qwen2.5:14b-instruct');
});

test('a missing lab.json says to run init', async (t) => {
  const ws = workspace(t);
  const err = await rejects(loadConfig(ws));
  assert.match(err.message, /^no lab config at .*lab\.json — run `rollout-lab init` in the workspace$/);
  assert.equal(err.file, path.join(ws, '.rollout-lab', 'lab.json'));
});

test('an unknown key is named with the allowed keys of its object and its line', async (t) => {
  const ws = workspace(t);
  const text = labText((c) => (c.agents.Geneticist.bogus = true));
  writeLab(ws, text);
  const err = await rejects(loadConfig(ws));
  assert.ok(err instanceof ConfigValidationError);
  assert.equal(
    err.message,
    '`.rollout-lab/lab.json`: agents.Geneticist: unknown key "bogus" — remove "bogus" or check the spelling; allowed keys: model, prompt, promptText, tools, temperature, maxTokens, trainable',
  );
  const line = text.split('\n').findIndex((l) => l.includes('"bogus"')) + 1;
  assert.equal(err.issues[0].line, line);
});

test('a wrong type names the path, the expected and the actual type', async (t) => {
  const ws = workspace(t);
  writeLab(ws, labText((c) => (c.agents.Geneticist.model = 3)));
  const err = await rejects(loadConfig(ws));
  assert.match(err.message, /^`\.rollout-lab\/lab\.json`: agents\.Geneticist\.model: expected string, got number/);
});

test('the removed tiny backend is named as removed, with what to use instead; another unknown backend gets the allowed one', async (t) => {
  const ws = workspace(t);
  writeLab(ws, labText((c) => (c.training = { trainer: { backend: 'tiny' } })));
  const err = await rejects(loadConfig(ws));
  assert.match(err.message, /^`\.rollout-lab\/lab\.json`: training\.trainer\.backend: the tiny backend was removed — use backend "transformers" with training\.trainer\.modelConfig/);
  assert.match(err.message, /"model_type": "qwen2"/);
  writeLab(ws, labText((c) => (c.training = { trainer: { backend: 'jax' } })));
  const other = await rejects(loadConfig(ws));
  assert.match(other.message, /training\.trainer\.backend: expected one of "transformers", got "jax"/);
});

test('a JSON syntax error gives line and column and what to fix', async (t) => {
  const ws = workspace(t);
  writeLab(ws, '{\n  "version": 1,\n  "models": {}\n  "agents": {}\n}\n');
  const err = await rejects(loadConfig(ws));
  assert.equal(err.message, '`.rollout-lab/lab.json` line 4, column 3: expected a comma — add "," between the entries');
});

test('an agent that refers to an undefined model is rejected with the defined ones', async (t) => {
  const ws = workspace(t);
  writeLab(ws, labText((c) => (c.agents.Neurologist.model = 'huge')));
  const err = await rejects(loadConfig(ws));
  assert.match(err.message, /agents\.Neurologist\.model: model "huge" is not defined; add it under "models" or use one of: junior, supervisor, senior, strong/);
});

test('every problem is kept on the error; the message shows the first three', async (t) => {
  const ws = workspace(t);
  writeLab(
    ws,
    labText((c) => {
      c.models.junior.temperature = 5;
      c.models.senior.baseUrl = 'localhost:11434';
      c.datasets = { 'bad name': { path: 'x.jsonl' } };
      c.runner.concurrency = 0;
      delete c.models.strong.model;
    }),
  );
  const err = await rejects(loadConfig(ws));
  assert.ok(err instanceof ConfigValidationError);
  const byPath = new Map(err.issues.map((i) => [i.path, i.message]));
  assert.match(byPath.get('models.junior.temperature') ?? '', /^must be at most 2, got 5$/);
  assert.match(byPath.get('models.senior.baseUrl') ?? '', /^expected an http:\/\/ or https:\/\/ URL such as http:\/\/127\.0\.0\.1:11434\/v1, got "localhost:11434"/);
  assert.match(byPath.get('models.strong') ?? '', /^missing "model" \(expected string\) — add it/);
  assert.match(byPath.get('runner.concurrency') ?? '', /^must be greater than 0, got 0$/);
  assert.ok([...byPath.keys()].some((p) => p.startsWith('datasets')), 'the bad dataset name is reported');
  assert.ok(err.issues.every((i) => typeof i.line === 'number'), 'every issue has a line');
  assert.match(err.message, /; and \d+ more problem\(s\)$/);
  assert.equal(err.message.split('`.rollout-lab/lab.json`:').length - 1, 3);
});

test('an unknown tool on the research-lab graph is rejected with the tools that exist', async (t) => {
  const ws = workspace(t);
  writeLab(ws, labText((c) => (c.agents.Geneticist.tools = ['pubmed_search', 'web_browser'])));
  const err = await rejects(loadConfig(ws));
  assert.match(err.message, /agents\.Geneticist\.tools\[1\]: unknown tool "web_browser"; the research-lab graph has: pubmed_search, clinical_trials_search/);
});

test('parseLabConfigText checks unsaved text and rejects a non-object', () => {
  assert.throws(() => parseLabConfigText('[]', '/x/lab.json'), /`lab\.json`: expected a JSON object with "models" and "agents"/);
  assert.throws(() => parseLabConfigText('', '/x/lab.json'), ConfigError);
  const cfg = parseLabConfigText(labText(), '/x/lab.json');
  assert.equal(cfg.version, 1);
});
