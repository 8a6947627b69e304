import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import type { LearningCurve } from '../../src/core/train/pipeline/learningCurve';
import { cli, json, PUBMEDQA, tempWorkspace } from './cliHelpers';

test('`pipeline curve` prints validation reward per model version: base, then the registered version with its paired change', () => {
  const ws = tempWorkspace();
  try {
    assert.equal(cli(['init', '--workspace', ws, '--dataset', PUBMEDQA]).code, 0);
    const empty = cli(['pipeline', 'curve', '--workspace', ws]);
    assert.equal(empty.code, 0, empty.stderr);
    assert.match(empty.stdout, /no validation rollouts of Geneticist, Pharmacologist, Neurologist.* yet — run `rollout-lab eval`/);

    assert.equal(cli(['eval', '--workspace', ws, '--limit', '3', '--json']).code, 0);
    const reg = cli(['pipeline', 'register', 'junior', '--version', 'sft-1', '--phase', 'sft-juniors', '--workspace', ws]);
    assert.equal(reg.code, 0, reg.stderr);
    assert.equal(cli(['eval', '--workspace', ws, '--limit', '3', '--json']).code, 0);

    const c = json<LearningCurve>(cli(['pipeline', 'curve', '--workspace', ws, '--model', 'junior', '--json']));
    assert.equal(c.series.length, 1);
    const [base, sft] = c.series[0]!.points;
    assert.deepEqual([base!.label, base!.rollouts, sft!.label, sft!.rollouts, sft!.producedBy?.phase], ['base', 3, 'junior@sft-1', 3, 'sft-juniors']);
    assert.equal(sft!.change!.pairs, 3);
    assert.ok(base!.reward.ci && base!.reward.ci[0] >= 0 && base!.reward.ci[1] <= 1, 'the interval stays in 0..1');

    const text = cli(['pipeline', 'curve', '--workspace', ws, '--agent', 'Geneticist']);
    assert.equal(text.code, 0, text.stderr);
    const lines = text.stdout.split('\n');
    assert.match(lines[0]!, /^Learning curve of Geneticist \(model junior\), validation split/);
    assert.match(lines[1]!, /^version\s+produced by\s+rollouts\s+mean reward\s+change vs previous \(paired\)$/);
    assert.match(text.stdout, /^base\s+lab\.json\s+3 \(3 tasks\), 3 SIMULATED\s+\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]\s+-$/m);
    assert.match(text.stdout, /^junior@sft-1 \*\s+sft-juniors \d{4}-\d\d-\d\d \d\d:\d\d\s+3 \(3 tasks\).*[+-]\d\.\d{3}.*\(3 pairs\)$/m);

    const bad = cli(['pipeline', 'curve', '--workspace', ws, '--agent', 'Nobody']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--agent: no agent "Nobody" under "agents" in \.rollout-lab\/lab\.json — one of: .*Geneticist/);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
