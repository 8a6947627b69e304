import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { initWorkspace } from '../../src/core/lab/init';
import { spawnSync } from 'node:child_process';
import { readRegistry } from '../../src/core/config/modelRegistry';
import { listJobRecords } from '../../src/core/train/jobs/jobRecord';
import { learningRun } from '../../src/core/train/pipeline/learningRun';
import { TraceStore } from '../../src/core/store/traceStore';
import { tempWorkspace } from './cliHelpers';
import { trainerVenvPython } from '../../src/core/train/jobs/launchers/localPython';

/*
 * A short learning run of the ticket-routing example with fixed seeds: the
 * teacher (simulated) gathers, the untrained student is evaluated, SFT and
 * GRPO train it for real on this CPU (a two-layer Qwen2 built from a config, on
 * python-trainer's transformers backend: TRL's SFTTrainer and LoRA), and
 * each stage is evaluated on the same validation tasks with the same request
 * seeds. The improvements are asserted against paired intervals, never times.
 */

const trainerRuns = [...trainerVenvPython(), 'python3', '/usr/bin/python3'].some((py) => spawnSync(py, ['-c', 'import torch, transformers, peft, trl, yaml, jsonschema'], { stdio: 'ignore' }).status === 0);
const noTorch = trainerRuns ? false : 'no python with torch, transformers, peft and TRL here: the learning run trains a real model (bash scripts/setupTrainerVenv.sh makes .venv-trainer)';
if (noTorch && process.env.CI) throw new Error(noTorch);

test('the ticket-routing student learns: SFT and then GRPO raise its validation reward well clear of noise', { skip: noTorch, timeout: 600_000 }, async () => {
  const ws = tempWorkspace();
  try {
    await initWorkspace(ws, { example: 'ticket-routing' });
    // The example's own settings, on 40 of the 60 validation tasks: about 2 minutes on 2 cores.
    const r = await learningRun({ workspace: ws, valLimit: 40, evalSamples: 4 });
    const [untrained, sft, grpo] = r.stages;
    console.log(r.stages.map((s) => `${s.stage} ${s.mean.toFixed(3)} ${JSON.stringify(s.change ?? null)}`).join("\n"));
    assert.deepEqual(r.stages.map((s) => s.stage), ['untrained', 'sft', 'grpo']);
    assert.ok(r.teacher.simulated && r.teacher.rollouts === 240, 'the teacher gathered every training task, marked simulated');
    // The same tasks at every stage, each a different model version.
    assert.ok(r.stages.every((s) => s.n === 40 && s.rollouts === 160));
    assert.equal(new Set(r.stages.map((s) => s.version)).size, 3);
    // An untrained model built from a config writes noise, never a queue.
    assert.ok(untrained!.mean < 0.1, `untrained ${untrained!.mean}`);
    assert.ok(sft!.mean - untrained!.mean >= 0.3, `SFT ${untrained!.mean} → ${sft!.mean}`);
    assert.ok(sft!.change!.ci[0] > 0.2, `SFT's paired 95% interval ${sft!.change!.ci}`);
    assert.ok(grpo!.change!.ci[0] > 0, `GRPO's paired 95% interval ${grpo!.change!.ci} (${sft!.mean} → ${grpo!.mean})`);
    // The store records the student's version on every evaluated rollout's Router call.
    const store = await TraceStore.open(ws, { readOnly: true });
    try {
      for (const s of r.stages) {
        const { rollouts } = store.listRollouts({ runId: s.runId, limit: 1000 });
        assert.equal(rollouts.length, s.rollouts);
        const versions = new Set(rollouts.flatMap((x) => x.agents.filter((a) => a.agent === 'Router').map((a) => a.modelVersion)));
        assert.deepEqual([...versions], [s.version], `stage ${s.stage}`);
      }
    } finally {
      await store.close();
    }
    // Every server the run started is stopped, so the student is back on lab.json's own settings; its versions stay listed.
    const student = readRegistry(join(ws, '.rollout-lab')).models.student!;
    assert.equal(student.active, null);
    for (const s of [sft!, grpo!]) assert.ok(student.versions.some((v) => v.version === s.version), `${s.stage} version ${s.version} stays registered`);
    const running = listJobRecords(join(ws, '.rollout-lab', 'training')).filter((j) => j.state === 'running' || j.state === 'launching');
    assert.deepEqual(running.map((j) => j.id), []);
    assert.ok(existsSync(join(ws, '.rollout-lab')));
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
