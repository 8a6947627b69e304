import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promptHash } from '../../src/core/config/loader';
import { TraceStore } from '../../src/core/store/traceStore';
import type { ApoResult } from '../../src/core/train/apo/apoTypes';
import { cli, json, tempWorkspace, PUBMEDQA } from './cliHelpers';

let ws: string;

before(() => {
  ws = tempWorkspace();
  const init = cli(['init', '--workspace', ws, '--dataset', PUBMEDQA]);
  assert.equal(init.code, 0, init.stderr);
});
after(() => rmSync(ws, { recursive: true, force: true }));

test('optimize --json --apply: rounds scored by stored runs, the winner written to the prompt file', async () => {
  const file = join(ws, '.rollout-lab', 'prompts', 'ProtocolDesigner.md');
  const before = readFileSync(file, 'utf8');
  // The simulated endpoint's rollouts are the critic's low-reward examples only when asked for.
  const r = cli(['optimize', '--workspace', ws, '--agent', 'ProtocolDesigner', '--rounds', '2', '--beam', '2', '--candidates', '2', '--tasks', '3', '--json', '--apply', '--include-simulated']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /SIMULATED/);
  assert.doesNotMatch(r.stderr, /the critic is shown no simulated rollouts/);
  const doc = json<ApoResult & { applied: { file: string; version: string } | null }>(r);
  assert.equal(doc.agent, 'ProtocolDesigner');
  assert.equal(doc.baseline.text, before);
  assert.equal(doc.baseline.version, promptHash(before));
  assert.deepEqual(doc.rounds.map((x) => x.round), [1, 2]);
  const scored = doc.rounds.flatMap((x) => x.candidates).filter((c) => c.runId !== null);
  assert.ok(scored.length >= 3);
  assert.ok(doc.best.score! >= doc.baseline.score!);
  assert.equal(doc.best.score, Math.max(doc.baseline.score!, ...scored.map((c) => c.score!)));

  const store = await TraceStore.open(ws, { readOnly: true });
  try {
    const runs = store.listRuns().filter((x) => x.params.command === 'optimize');
    assert.equal(runs.length, 1 + scored.length, 'one stored run for the baseline and each scored rewrite');
    for (const c of scored) {
      const rollouts = store.listRollouts({ runId: c.runId! }).rollouts;
      assert.equal(rollouts.length, 3);
      assert.ok(rollouts.every((x) => x.agents.find((a) => a.agent === 'ProtocolDesigner')?.promptVersion === c.version));
    }
  } finally {
    await store.close();
  }

  // The simulator is deterministic: on these settings a rewrite of round 2 beats the baseline.
  assert.notEqual(doc.best.version, doc.baseline.version, 'a rewrite wins here');
  assert.deepEqual(doc.applied, { file, version: doc.best.version });
  assert.equal(readFileSync(file, 'utf8'), doc.best.text);

  // The next run records the applied version.
  const run = cli(['run', '--workspace', ws, '--limit', '1', '--json']);
  assert.equal(run.code, 0, run.stderr);
  const { runId } = json<{ runId: string }>(run);
  const after = await TraceStore.open(ws, { readOnly: true });
  try {
    const [rollout] = after.listRollouts({ runId }).rollouts;
    assert.equal(rollout!.agents.find((a) => a.agent === 'ProtocolDesigner')!.promptVersion, doc.best.version);
  } finally {
    await after.close();
  }
});

test('optimize prints each round, the winner against the baseline and a unified diff', () => {
  const r = cli(['optimize', '--workspace', ws, '--agent', 'Supervisor', '--rounds', '1', '--beam', '1', '--candidates', '2', '--tasks', '2']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /the critic is shown no simulated rollouts as low-reward examples \(pass --include-simulated to show it them\)/);
  assert.match(r.stdout, /^baseline [0-9a-f]{12} {2}score \d\.\d{3}$/m);
  assert.match(r.stdout, /^Round 1$/m);
  assert.match(r.stdout, /critique: .+/);
  assert.match(r.stdout, /beam: [0-9a-f]{12} \d\.\d{3}/);
  if (/^Winner: /m.test(r.stdout)) {
    assert.match(r.stdout, /^--- a\/\.rollout-lab\/prompts\/Supervisor\.md\tbaseline /m);
    assert.match(r.stdout, /^\+\S.*$/m, 'the diff adds a line');
    assert.match(r.stdout, /Not applied: run again with --apply/);
  } else {
    assert.match(r.stdout, /No rewrite beat the current prompt/);
  }
});

test('optimize: usage errors are one line with exit code 2', () => {
  const none = cli(['optimize', '--workspace', ws]);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /--agent NAME/);
  const unknown = cli(['optimize', '--workspace', ws, '--agent', 'Nobody']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /agent "Nobody" is not under "agents".*Supervisor/);
  const bad = cli(['optimize', '--workspace', ws, '--agent', 'Supervisor', '--rounds', '0']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--rounds must be an integer ≥ 1/);
});
