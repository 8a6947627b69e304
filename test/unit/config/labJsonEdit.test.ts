import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'jsonc-parser';
import { defaultLabConfig } from '../../../src/core/lab/labTemplates';
import { editLabJsonText, writeLabJsonChanges } from '../../../src/core/config/labJsonEdit';
import { loadConfig } from '../../../src/core/config/loader';
import { DEFAULT_CRITERIA } from '../../../src/core/config/schema';
import { ConfigError } from '../../../src/core/errors';

const FILE = '/ws/.rollout-lab/lab.json';

/** The default config as a user might keep it: comments, a trailing comma, four-space indents. */
function commentedLab(): string {
  const text = JSON.stringify(defaultLabConfig(), null, 4);
  return text
    .replace('{\n    "version": 1,', '{\n    // my lab: do not lose this comment\n    "version": 1,')
    .replace('"novelty": {', '/* novelty matters less for us */\n            "novelty": {')
    .replace('"judgeFailurePenalty": 0.1,', '"judgeFailurePenalty": 0.1, // keep low')
    .replace(/("name": "invalid_output",\n\s+"when": "output.invalid",\n\s+"reward": -0.1\n\s+})/, '$1, // trailing comma on purpose');
}

function criteriaOf(overrides: Record<string, number> = {}, extra: Record<string, { weight: number; description: string }> = {}): Record<string, { weight: number; description: string }> {
  const out: Record<string, { weight: number; description: string }> = {};
  for (const [name, c] of Object.entries(DEFAULT_CRITERIA)) out[name] = { weight: overrides[name] ?? c.weight, description: c.description };
  return { ...out, ...extra };
}

function refused(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ConfigError, `a ConfigError, got ${String(err)}`);
    assert.ok(!err.message.includes('\n'), 'one line');
    assert.match(err.message, pattern);
    return true;
  });
}

test('a changed weight replaces just that number: comments, trailing commas and indentation survive', () => {
  const before = commentedLab();
  const { text, config } = editLabJsonText(before, { criteria: criteriaOf({ impact: 0.45 }) }, FILE);
  assert.equal(config.reward.criteria.impact!.weight, 0.45);
  for (const comment of ['// my lab: do not lose this comment', '/* novelty matters less for us */', '// keep low', '// trailing comma on purpose']) {
    assert.ok(text.includes(comment), `keeps ${comment}`);
  }
  // Exactly one line differs.
  const a = before.split('\n');
  const b = text.split('\n');
  assert.equal(a.length, b.length);
  const diff = a.map((l, i) => [l, b[i]]).filter(([x, y]) => x !== y);
  assert.equal(diff.length, 1, JSON.stringify(diff));
  assert.match(diff[0]![1]!, /^ {16}"weight": 0\.45,?$/);
});

test('unchanged input gives the same text back, byte for byte', () => {
  const before = commentedLab();
  const { text } = editLabJsonText(before, { criteria: criteriaOf(), air: defaultLabConfig().air! }, FILE);
  assert.equal(text, before);
});

test('a new criterion is added after the others; a removed one goes; descriptions change in place', () => {
  const before = commentedLab();
  const criteria = criteriaOf({}, { safety: { weight: 0.25, description: 'Flags risks to patients.' } });
  delete criteria.efficiency;
  criteria.clarity!.description = 'Steps, controls and endpoints are explicit "and measurable".';
  const { text, config } = editLabJsonText(before, { criteria }, FILE);
  assert.deepEqual(Object.keys(config.reward.criteria), ['novelty', 'feasibility', 'impact', 'clarity', 'groundedness', 'safety']);
  assert.deepEqual(config.reward.criteria.safety, { weight: 0.25, description: 'Flags risks to patients.' });
  assert.equal(config.reward.criteria.clarity!.description, 'Steps, controls and endpoints are explicit "and measurable".');
  assert.ok(text.includes('/* novelty matters less for us */'));
  // The new entry is indented like its neighbours.
  assert.match(text, /\n {12}"safety": \{\n {16}"weight": 0\.25,/);
});

test('invalid weights and names are refused with the field named, and nothing changes', () => {
  const before = commentedLab();
  refused(() => editLabJsonText(before, { criteria: criteriaOf({ impact: -0.2 }) }, FILE), /reward\.criteria\.impact\.weight/);
  refused(() => editLabJsonText(before, { criteria: criteriaOf({ impact: Number.NaN }) }, FILE), /impact/);
  refused(
    () => editLabJsonText(before, { criteria: Object.fromEntries(Object.keys(DEFAULT_CRITERIA).map((n) => [n, { weight: 0, description: 'x' }])) }, FILE),
    /every weight is 0/,
  );
  refused(() => editLabJsonText(before, { criteria: criteriaOf({}, { '9lives': { weight: 1, description: 'x' } }) }, FILE), /"9lives" is not allowed/);
  refused(() => editLabJsonText(before, { criteria: criteriaOf({}, { fresh: { weight: 1, description: '  ' } }) }, FILE), /fresh.*describe/);
  refused(() => editLabJsonText(before, { criteria: {} }, FILE), /at least one criterion/);
});

test('AIR rules: a changed rule is rewritten, a new one appended, a removed one dropped; bad rules are refused', () => {
  const before = commentedLab();
  const air = [
    { name: 'tool_ok', when: 'tool.ok', reward: 0.05 },
    { name: 'tool_error', when: 'tool.error', tools: ['pubmed_search'], reward: -0.2 },
    { name: 'good_answer', when: 'output.valid', agents: ['Geneticist'], reward: 0.1 },
  ];
  const { text, config } = editLabJsonText(before, { air }, FILE);
  assert.deepEqual(config.air, air);
  assert.deepEqual(parse(text).air, air);
  assert.ok(text.includes('// my lab: do not lose this comment'));
  refused(() => editLabJsonText(before, { air: [{ name: 'x', when: 'tool.sometimes', reward: 0.1 }] }, FILE), /air\[0\]\.when/);
  refused(() => editLabJsonText(before, { air: [{ name: 'x', when: 'tool.ok', reward: 3 }] }, FILE), /air\[0\]\.reward/);
  refused(
    () =>
      editLabJsonText(before, { air: [{ name: 'same', when: 'tool.ok', reward: 0.1 }, { name: 'same', when: 'tool.error', reward: -0.1 }] }, FILE),
    /air\[1\]\.name.*"same"/,
  );
});

test('a lab.json without reward.criteria (schema defaults) gets the criteria written out', () => {
  const cfg: any = defaultLabConfig();
  delete cfg.reward.criteria;
  delete cfg.air;
  const { config } = editLabJsonText(JSON.stringify(cfg, null, 2), { criteria: criteriaOf({ novelty: 0.5 }), air: [{ name: 'r', when: 'tool.ok', reward: 0.01 }] }, FILE);
  assert.equal(config.reward.criteria.novelty!.weight, 0.5);
  assert.equal(config.air.length, 1);
});

test('a lab.json with a syntax error is reported with its line, not edited', () => {
  refused(() => editLabJsonText('{\n  "version": 1,\n  "models": {\n', { criteria: criteriaOf() }, FILE), /line \d+/);
});

test('writeLabJsonChanges replaces the file atomically and the loader reads the new weights', async (t) => {
  const ws = mkdtempSync(path.join(os.tmpdir(), 'rl-labjson-'));
  t.after(() => rmSync(ws, { recursive: true, force: true }));
  const file = path.join(ws, '.rollout-lab', 'lab.json');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, commentedLab());
  const r = await writeLabJsonChanges(file, { criteria: criteriaOf({ groundedness: 0.6 }) });
  assert.equal(r.changed, true);
  assert.equal((await loadConfig(ws)).config.reward.criteria.groundedness!.weight, 0.6);
  assert.ok(readFileSync(file, 'utf8').includes('// keep low'));
  assert.deepEqual(readdirSync(path.dirname(file)), ['lab.json'], 'no temporary file left behind');
  const again = await writeLabJsonChanges(file, { criteria: criteriaOf({ groundedness: 0.6 }) });
  assert.equal(again.changed, false);
  await assert.rejects(writeLabJsonChanges(file, { criteria: criteriaOf({ groundedness: -1 }) }), ConfigError);
  assert.equal((await loadConfig(ws)).config.reward.criteria.groundedness!.weight, 0.6, 'a refused save leaves the file as it was');
});
