import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ExportManifest } from '../../src/core/train/export/exportData';
import { cli, json, tempWorkspace, PUBMEDQA, REPO, type RunDoc } from './cliHelpers';

type ExportDoc = ExportManifest & { manifestFile: string };

// The workspace's rollouts come from the simulated endpoint: the tests that export them say so with --include-simulated.
let ws: string;
before(() => {
  ws = tempWorkspace();
  assert.equal(cli(['init', '--workspace', ws, '--dataset', PUBMEDQA]).code, 0);
  const run = json<RunDoc>(cli(['run', '--workspace', ws, '--limit', '3', '--samples', '2', '--json']));
  assert.equal(run.succeeded, 6);
});
after(() => rmSync(ws, { recursive: true, force: true }));

test('export: sft, rl and bandit files with their manifests; the same store gives the same bytes', () => {
  for (const format of ['sft', 'rl', 'bandit']) {
    const file = join(ws, 'exports', `${format}.jsonl`);
    const r = cli(['export', '--workspace', ws, '--format', format, '--out', file, '--min-reward', '0', '--include-simulated']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^${format}: \\d+ records from 6 rollouts`));
    assert.match(r.stdout, new RegExp(`manifest: ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\.manifest\\.json`));
    const bytes = readFileSync(file);
    const manifest = JSON.parse(readFileSync(`${file}.manifest.json`, 'utf8')) as ExportManifest;
    assert.equal(manifest.sha256, createHash('sha256').update(bytes).digest('hex'));
    assert.equal(manifest.counts.rollouts, 6);
    assert.equal(manifest.sourceRollouts.length, 6);
    assert.equal(bytes.toString('utf8').trim().split('\n').length, manifest.counts.records);

    const again = json<ExportDoc>(cli(['export', '--workspace', ws, '--format', format, '--out', join(ws, 'exports', `${format}-2.jsonl`), '--min-reward', '0', '--include-simulated', '--json']));
    assert.equal(again.sha256, manifest.sha256);
    assert.deepEqual(readFileSync(again.file), bytes);
    assert.equal(again.manifestFile, `${again.file}.manifest.json`);
  }
});

test('export rl: --credit and the juniors chosen with --agents are recorded; lines are grouped by task', () => {
  const file = join(ws, 'rl-last.jsonl');
  const doc = json<ExportDoc>(cli(['export', '--workspace', ws, '--format', 'rl', '--out', file, '--credit', 'last', '--agents', 'Geneticist,Neurologist', '--include-simulated', '--json']));
  assert.equal(doc.options.credit, 'last');
  assert.deepEqual(doc.options.agents, ['Geneticist', 'Neurologist']);
  assert.equal(doc.counts.groups, 3);
  const recs = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { group: string; agent: string; credit: string; reward: number; final_reward: number; air: number; metadata: { agentCall: number; agentCalls: number } });
  assert.ok(recs.every((r) => r.credit === 'last' && ['Geneticist', 'Neurologist'].includes(r.agent)));
  const groups = recs.map((r) => r.group);
  assert.deepEqual(groups, [...groups].sort(), 'records sorted by task');
  for (const r of recs) {
    const credited = r.metadata.agentCall === r.metadata.agentCalls - 1 ? r.final_reward : 0;
    assert.ok(Math.abs(r.reward - (credited + r.air)) < 1e-9);
  }
});

test('export: bad usage exits 2 with a one-line error; an empty selection exits 1, says why and leaves the file as it was', () => {
  const file = join(ws, 'x.jsonl');
  const cases: Array<[string[], RegExp]> = [
    [['--out', file], /--format is required/],
    [['--format', 'dpo', '--out', file], /--format must be sft, rl or bandit/],
    [['--format', 'sft'], /--out FILE is required/],
    [['--format', 'sft', '--out', file, '--agents', 'Chemist'], /unknown agent "Chemist" — the agents in lab\.json are: Geneticist/],
    [['--format', 'rl', '--out', file, '--credit', 'first'], /--credit must be equal, last or discounted/],
    [['--format', 'sft', '--out', file, '--credit', 'last'], /--credit applies to --format rl only/],
    [['--format', 'sft', '--out', file, '--min-reward', 'high'], /--min-reward must be a number/],
    [['--format', 'sft', '--out', file, '--split', 'test'], /--split must be train, val or all/],
    [['--format', 'sft', '--out', file, '--run', 'nope'], /run "nope" is not in this workspace's store/],
    [['--format', 'sft', '--out', file, '--bogus'], /export: Unknown option '--bogus'/],
  ];
  for (const [args, expected] of cases) {
    const r = cli(['export', '--workspace', ws, ...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, expected);
    assert.equal(r.stderr.trim().split('\n').length, 1);
  }
  writeFileSync(file, 'earlier rows\n');
  const empty = cli(['export', '--workspace', ws, '--format', 'sft', '--out', file, '--split', 'val']);
  assert.equal(empty.code, 1, empty.stderr);
  assert.match(empty.stderr, /^rollout-lab: no training rows: the sft export of .* \(the val split\) has 0 rows to train on; dropped: /);
  assert.equal(empty.stdout, '');
  assert.equal(readFileSync(file, 'utf8'), 'earlier rows\n', 'a failed export never overwrites the file');
});

test('export leaves simulated rollouts out by default and says how many; the train split unless --split all', () => {
  const file = join(ws, 'default.jsonl');
  const r = cli(['export', '--workspace', ws, '--format', 'rl', '--out', file]);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(
    r.stderr,
    'rollout-lab: no training rows: the rl export of HypothesisRefiner, ProtocolDesigner (the train split) has 0 rows to train on; dropped: simulated: 6 rollouts answered by the simulated endpoint, a test double (give the models a baseUrl and gather again, or include them with --include-simulated / the phase\'s "includeSimulated": true)\n',
  );
  assert.equal(existsSync(file), false);
  assert.equal(existsSync(`${file}.manifest.json`), false);

  const all = json<ExportDoc>(cli(['export', '--workspace', ws, '--format', 'rl', '--out', file, '--split', 'all', '--include-simulated', '--json']));
  assert.equal(all.options.split, null);
  assert.equal(all.counts.rollouts, 6);
});

test('a lab with its own graph: the training commands default to its agents, not the research lab\'s; the bandit and the reference pipeline say plainly they do not apply', () => {
  const own = tempWorkspace();
  try {
    assert.equal(cli(['init', '--workspace', own, '--dataset', PUBMEDQA]).code, 0);
    copyFileSync(join(REPO, 'examples/custom-graph/graph.ts'), join(own, 'graph.ts'));
    const file = join(own, '.rollout-lab', 'lab.json');
    const cfg = JSON.parse(readFileSync(file, 'utf8'));
    cfg.graph = { kind: 'module', module: 'graph.ts' };
    cfg.agents = { Writer: { model: 'senior', promptText: 'Write a short answer.', tools: ['word_count'] }, Critic: { model: 'strong', promptText: 'Reply APPROVE or REVISE.' } };
    cfg.bandit = { mode: 'off' };
    writeFileSync(file, JSON.stringify(cfg, null, 2));
    const run = json<RunDoc>(cli(['run', '--workspace', own, '--limit', '2', '--json']));
    assert.equal(run.succeeded, 2);

    const out = join(own, 'rl.jsonl');
    const doc = json<ExportDoc>(cli(['export', '--workspace', own, '--format', 'rl', '--out', out, '--include-simulated', '--json']));
    assert.deepEqual(doc.options.agents, ['Writer', 'Critic'], 'the agents that made model calls');
    assert.ok(doc.counts.records >= 4);
    const unknown = cli(['export', '--workspace', own, '--format', 'sft', '--out', out, '--agents', 'Geneticist']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown agent "Geneticist" — the agents in lab\.json are: Writer, Critic\n$/);
    const bandit = cli(['export', '--workspace', own, '--format', 'bandit', '--out', out]);
    assert.equal(bandit.code, 2);
    assert.match(bandit.stderr, /only the built-in research-lab graph records; this lab runs its own graph/);
    assert.equal(bandit.stderr.trim().split('\n').length, 1);

    const status = cli(['pipeline', 'status', '--workspace', own]);
    assert.equal(status.code, 0, status.stderr);
    assert.doesNotMatch(status.stdout, /sft-juniors|grpo-seniors|bandit-supervisor/);
    assert.match(status.stdout, /No training pipeline is declared/);
    assert.match(status.stdout, /"training": \{\n {2}"phases": \[\n {4}\{ "name": "gather", "kind": "gather", "samples": 8 \},\n {4}\{ "name": "sft-senior", "kind": "sft", "agents": \["Writer"\], "model": "senior", "minReward": 0\.7 \}/);
    const phase = cli(['pipeline', 'run', 'sft-juniors', '--workspace', own]);
    assert.equal(phase.code, 2);
    assert.match(phase.stderr, /no pipeline phase "sft-juniors": this lab runs its own graph \(graph\.kind "module"\) and lab\.json declares no training\.phases/);
  } finally {
    rmSync(own, { recursive: true, force: true });
  }
});
