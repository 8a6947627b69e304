import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunWarning } from '../../src/core/rollout/runWarnings';
import { cli, json, tempWorkspace, PUBMEDQA, type RunDoc } from './cliHelpers';

const THROWING_REWARD = `export default function reward({ task }) {\n  throw new Error('no score for ' + task.id);\n}\n`;

const warningLines = (stderr: string): string[] => stderr.split('\n').filter((l) => /warning: /.test(l));

test('run, eval and compare tell a failing custom reward once on stderr and give its totals in the summary and in --json', () => {
  const ws = tempWorkspace();
  try {
    assert.equal(cli(['init', '--workspace', ws, '--dataset', PUBMEDQA]).code, 0);
    const cfgFile = join(ws, '.rollout-lab', 'lab.json');
    const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
    cfg.reward = { ...cfg.reward, module: 'reward.ts' };
    writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
    writeFileSync(join(ws, 'reward.ts'), THROWING_REWARD);

    const run = cli(['run', '--workspace', ws, '--limit', '3', '--concurrency', '3', '--json']);
    assert.equal(run.code, 0, run.stderr);
    const doc = json<RunDoc & { warnings: RunWarning[] }>(run);
    assert.deepEqual(doc.warnings.map((w) => [w.kind, w.rollouts]), [['custom_reward_failed', 3]]);
    assert.match(doc.warnings[0]!.message, /reward\.ts failed: .*no score for /);
    const told = warningLines(run.stderr);
    assert.equal(told.length, 1, `told once:\n${run.stderr}`);
    assert.match(told[0]!, /^warning: the custom reward .*reward\.ts failed: .*no score for .* — the rollout got reward\.customFailurePenalty \(0\)/);

    const evaluation = cli(['eval', '--workspace', ws, '--limit', '2']);
    assert.equal(evaluation.code, 0, evaluation.stderr);
    assert.equal(warningLines(evaluation.stderr).length, 1);
    assert.match(evaluation.stdout, /^Warnings:\n {2}custom reward failed in 2 of 2 rollouts; first \(rollout [0-9a-f]{32}\): the custom reward /m);

    const compare = cli(['compare', '--workspace', ws, '--a', 'base', '--b', 'label:again', '--limit', '1', '--json']);
    assert.equal(compare.code, 0, compare.stderr);
    const cmp = json<{ warnings: { a: RunWarning[]; b: RunWarning[] } }>(compare);
    assert.deepEqual([cmp.warnings.a.map((w) => w.kind), cmp.warnings.b.map((w) => w.kind)], [['custom_reward_failed'], ['custom_reward_failed']]);
    assert.deepEqual(warningLines(compare.stderr).map((l) => l.slice(0, 24)), ['side A: warning: the cus', 'side B: warning: the cus']);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
