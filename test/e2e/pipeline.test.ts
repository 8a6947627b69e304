import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PipelineStatus } from '../../src/core/train/pipeline/pipelineStatus';
import type { PhaseRecord } from '../../src/core/train/phases/pipelineState';
import { cli, json, PUBMEDQA, tempWorkspace } from './cliHelpers';

const REFERENCE_PHASES = ['gather', 'sft-juniors', 'grpo-seniors', 'bandit-supervisor'];

function initLab(): string {
  const ws = tempWorkspace();
  const init = cli(['init', '--workspace', ws, '--dataset', PUBMEDQA]);
  assert.equal(init.code, 0, init.stderr);
  return ws;
}

test('a fresh init lab on the simulated endpoint runs every reference phase in order with no hand edits, and says SIMULATED', () => {
  const ws = initLab();
  try {
    // 3 tasks × training.groupSize (8) samples: GRPO's groups are full and the bandit gets its 20 decisions.
    for (const phase of REFERENCE_PHASES) {
      const r = cli(['pipeline', 'run', phase, '--workspace', ws, '--limit', '3', '--json']);
      assert.equal(r.code, 0, `${phase}: ${r.stdout.slice(-2000)}\n${r.stderr.slice(-3000)}`);
      const rec = JSON.parse(r.stdout) as PhaseRecord;
      assert.equal(rec.state, 'done', `${phase}: ${rec.error}`);
      assert.match(r.stderr, /SIMULATED/);
      if (phase === 'gather') assert.equal(rec.counts.rollouts, 24);
      else assert.match(rec.note!, /^SIMULATED: every model of the lab is on the simulated endpoint/, phase);
    }
    const status = json<PipelineStatus>(cli(['pipeline', 'status', '--workspace', ws, '--json']));
    assert.deepEqual(status.phases.map((p) => [p.phase.name, p.record.state]), REFERENCE_PHASES.map((p) => [p, 'done']));
    const grpo = status.phases.find((p) => p.phase.name === 'grpo-seniors')!.record;
    assert.ok(grpo.counts.records! > 0, 'the seniors\' calls were exported with their logprobs');
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('a phase that fails pre-flight prints each fix with the lab.json key to set: in its output, its record and --json', () => {
  const ws = initLab();
  try {
    const file = join(ws, '.rollout-lab/lab.json');
    const cfg = JSON.parse(readFileSync(file, 'utf8'));
    cfg.models.senior.logprobs = false;
    writeFileSync(file, JSON.stringify(cfg, null, 2));
    assert.equal(cli(['pipeline', 'run', 'gather', '--workspace', ws, '--limit', '1']).code, 0);
    const key = /fix: Set models\.senior\.logprobs: true in \.rollout-lab\/lab\.json/;
    const text = cli(['pipeline', 'run', 'grpo-seniors', '--workspace', ws]);
    assert.equal(text.code, 1);
    assert.match(text.stdout, /^phase grpo-seniors: failed .*pre-flight failed: (\d+) of \1 model calls of HypothesisRefiner, ProtocolDesigner have no token logprobs/);
    assert.match(text.stdout, key);
    const rec = json<PhaseRecord>(cli(['pipeline', 'run', 'grpo-seniors', '--workspace', ws, '--json']));
    assert.equal(rec.state, 'failed');
    assert.match(rec.error!, key);
    const status = json<PipelineStatus>(cli(['pipeline', 'status', '--workspace', ws, '--json']));
    assert.match(status.phases.find((p) => p.phase.name === 'grpo-seniors')!.record.error!, key, 'the Training view shows the stored error');
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('pipeline register --agents routes a version to some agents of a shared model; status shows each agent\'s route; rollback undoes one', () => {
  const ws = initLab();
  try {
    const file = join(ws, '.rollout-lab/lab.json');
    const cfg = JSON.parse(readFileSync(file, 'utf8'));
    cfg.agents.Supervisor.model = 'junior';
    writeFileSync(file, JSON.stringify(cfg, null, 2));
    const routes = (): Record<string, string | null> =>
      Object.fromEntries(json<PipelineStatus>(cli(['pipeline', 'status', '--workspace', ws, '--json'])).models.find((m) => m.name === 'junior')!.routes.map((r) => [r.agent, r.version]));

    const sft = cli(['pipeline', 'register', 'junior', '--workspace', ws, '--version', 'sft-1', '--phase', 'sft-juniors']);
    assert.equal(sft.code, 0, sft.stderr);
    assert.match(sft.stdout, /made it active for Geneticist, Pharmacologist, Neurologist \(the model's other agents keep theirs\): Geneticist, Pharmacologist, Neurologist → sft-1; Supervisor → lab\.json/);
    const sup = cli(['pipeline', 'register', 'junior', '--workspace', ws, '--version', 'sup-1', '--agents', 'Supervisor']);
    assert.equal(sup.code, 0, sup.stderr);
    assert.deepEqual(routes(), { Geneticist: 'sft-1', Pharmacologist: 'sft-1', Neurologist: 'sft-1', Supervisor: 'sup-1' });
    const text = cli(['pipeline', 'status', '--workspace', ws]);
    assert.match(text.stdout, /junior +sup-1 +sft-1 → sup-1 +Geneticist, Pharmacologist, Neurologist → sft-1; Supervisor → sup-1/);

    const bad = cli(['pipeline', 'register', 'junior', '--workspace', ws, '--version', 'x', '--agents', 'PeerReviewer']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /"PeerReviewer" runs on model "strong" — a version of model "junior" can serve only its agents/);

    const back = cli(['pipeline', 'rollback', 'junior', '--workspace', ws]);
    assert.equal(back.code, 0, back.stderr);
    assert.match(back.stdout, /rolled back one step: Geneticist, Pharmacologist, Neurologist → sft-1; Supervisor → lab\.json/);
    assert.deepEqual(routes(), { Geneticist: 'sft-1', Pharmacologist: 'sft-1', Neurologist: 'sft-1', Supervisor: null });
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
