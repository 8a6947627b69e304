import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ExportManifest } from '../../src/core/train/exportData';
import { cli, json, tempWorkspace, PUBMEDQA, type RunDoc } from './cliHelpers';

type ExportDoc = ExportManifest & { manifestFile: string };

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
    const r = cli(['export', '--workspace', ws, '--format', format, '--out', file, '--min-reward', '0']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^${format}: \\d+ records from 6 rollouts`));
    assert.match(r.stdout, new RegExp(`manifest: ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\.manifest\\.json`));
    const bytes = readFileSync(file);
    const manifest = JSON.parse(readFileSync(`${file}.manifest.json`, 'utf8')) as ExportManifest;
    assert.equal(manifest.sha256, createHash('sha256').update(bytes).digest('hex'));
    assert.equal(manifest.counts.rollouts, 6);
    assert.equal(manifest.sourceRollouts.length, 6);
    assert.equal(bytes.toString('utf8').trim().split('\n').length, manifest.counts.records);

    const again = json<ExportDoc>(cli(['export', '--workspace', ws, '--format', format, '--out', join(ws, 'exports', `${format}-2.jsonl`), '--min-reward', '0', '--json']));
    assert.equal(again.sha256, manifest.sha256);
    assert.deepEqual(readFileSync(again.file), bytes);
    assert.equal(again.manifestFile, `${again.file}.manifest.json`);
  }
});

test('export rl: --credit and the juniors chosen with --agents are recorded; lines are grouped by task', () => {
  const file = join(ws, 'rl-last.jsonl');
  const doc = json<ExportDoc>(cli(['export', '--workspace', ws, '--format', 'rl', '--out', file, '--credit', 'last', '--agents', 'Geneticist,Neurologist', '--json']));
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

test('export: bad usage exits 2 with a one-line error; an empty selection still writes an empty file', () => {
  const file = join(ws, 'x.jsonl');
  const cases: Array<[string[], RegExp]> = [
    [['--out', file], /--format is required/],
    [['--format', 'dpo', '--out', file], /--format must be sft, rl or bandit/],
    [['--format', 'sft'], /--out FILE is required/],
    [['--format', 'sft', '--out', file, '--agents', 'Chemist'], /unknown agent "Chemist" — the agents in lab\.json are: Geneticist/],
    [['--format', 'rl', '--out', file, '--credit', 'first'], /--credit must be equal, last or discounted/],
    [['--format', 'sft', '--out', file, '--credit', 'last'], /--credit applies to --format rl only/],
    [['--format', 'sft', '--out', file, '--min-reward', 'high'], /--min-reward must be a number/],
    [['--format', 'sft', '--out', file, '--split', 'test'], /--split must be train or val/],
    [['--format', 'sft', '--out', file, '--run', 'nope'], /run "nope" is not in this workspace's store/],
    [['--format', 'sft', '--out', file, '--bogus'], /export: Unknown option '--bogus'/],
  ];
  for (const [args, expected] of cases) {
    const r = cli(['export', '--workspace', ws, ...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, expected);
    assert.equal(r.stderr.trim().split('\n').length, 1);
  }
  const empty = cli(['export', '--workspace', ws, '--format', 'sft', '--out', file, '--split', 'val']);
  assert.equal(empty.code, 0, empty.stderr);
  assert.match(empty.stdout, /no records/);
  assert.equal(readFileSync(file, 'utf8'), '');
});
