import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { initWorkspace } from '../../src/core/lab/init';
import { spawnSync } from 'node:child_process';
import { readRegistry } from '../../src/core/config/modelRegistry';
import { listJobRecords } from '../../src/core/train/jobs/jobRecord';
import { learningRun, type LearningRunResult } from '../../src/core/train/pipeline/learningRun';
import { TraceStore } from '../../src/core/store/traceStore';
import { tempWorkspace } from './cliHelpers';
import { isFailureKind, isTransportFailure } from '../../src/core/store/failureKinds';
import { trainerVenvPython } from '../../src/core/train/jobs/launchers/localPython';

/*
 * Short learning runs of the two learning examples with fixed seeds: the
 * teacher (simulated) gathers, the untrained student is evaluated, SFT and
 * GRPO train it for real on this CPU (a two-layer Qwen2 built from a config, on
 * python-trainer's transformers backend: TRL's SFTTrainer and LoRA), and
 * each stage is evaluated on the same validation tasks with the same request
 * seeds. ticket-routing's Router answers with a word; stock-lookup's Clerk with
 * a tool call, rewarded by what the call returns. The improvements are asserted
 * against paired intervals, never times.
 */

const trainerRuns = [...trainerVenvPython(), 'python3', '/usr/bin/python3'].some((py) => spawnSync(py, ['-c', 'import torch, transformers, peft, trl, yaml, jsonschema'], { stdio: 'ignore' }).status === 0);
const noTorch = trainerRuns ? false : 'no python with torch, transformers, peft and TRL here: the learning run trains a real model (bash scripts/setupTrainerVenv.sh makes .venv-trainer)';
if (noTorch && process.env.CI) throw new Error(noTorch);

/** What every learning run leaves behind: the stages on the same tasks, each rollout of a stage on its version, the servers stopped and the versions registered. */
async function checkRun(ws: string, r: LearningRunResult, trained: string, gathered: number, validation: number): Promise<void> {
  assert.deepEqual(r.stages.map((s) => s.stage), ['untrained', 'sft', 'grpo']);
  assert.ok(r.teacher.simulated && r.teacher.rollouts === gathered, `the teacher gathered every training task, marked simulated (${r.teacher.rollouts})`);
  // The same tasks at every stage, each a different model version.
  assert.ok(r.stages.every((s) => s.n === validation && s.rollouts === validation * 4));
  // A rollout that failed on the way to the student (a timeout on a loaded machine) would count as 0 and measure the machine: none is left.
  for (const s of r.stages) assert.deepEqual(Object.keys(s.failed).filter((k) => isFailureKind(k) && isTransportFailure(k)), [], `the ${s.stage} evaluation's failures ${JSON.stringify(s.failed)}`);
  assert.equal(new Set(r.stages.map((s) => s.version)).size, 3);
  // The store records the student's version on every evaluated rollout's call of the trained agent.
  const store = await TraceStore.open(ws, { readOnly: true });
  try {
    for (const s of r.stages) {
      const { rollouts } = store.listRollouts({ runId: s.runId, limit: 1000 });
      assert.equal(rollouts.length, s.rollouts);
      const versions = new Set(rollouts.flatMap((x) => x.agents.filter((a) => a.agent === trained).map((a) => a.modelVersion)));
      assert.deepEqual([...versions], [s.version], `stage ${s.stage}`);
    }
  } finally {
    await store.close();
  }
  // Every server the run started is stopped, so the student is back on lab.json's own settings; its versions stay listed.
  const student = readRegistry(join(ws, '.rollout-lab')).models.student!;
  assert.equal(student.active, null);
  for (const s of r.stages.slice(1)) assert.ok(student.versions.some((v) => v.version === s.version), `${s.stage} version ${s.version} stays registered`);
  const running = listJobRecords(join(ws, '.rollout-lab', 'training')).filter((j) => j.state === 'running' || j.state === 'launching');
  assert.deepEqual(running.map((j) => j.id), []);
}

const stagesText = (r: LearningRunResult): string =>
  [...r.stages.map((s) => `${s.stage} ${s.mean.toFixed(3)} ${JSON.stringify(s.change ?? null)} failed ${JSON.stringify(s.failed)}`), `seconds ${JSON.stringify(r.seconds)}`].join('\n');

test('the ticket-routing student learns: SFT and then GRPO raise its validation reward well clear of noise', { skip: noTorch, timeout: 1_200_000 }, async () => {
  const ws = tempWorkspace();
  try {
    await initWorkspace(ws, { example: 'ticket-routing' });
    // The example's own settings, on 40 of the 60 validation tasks: about 2 minutes on 2 cores.
    const r = await learningRun({ workspace: ws, valLimit: 40, evalSamples: 4 });
    console.log(stagesText(r));
    await checkRun(ws, r, 'Router', 240, 40);
    const [untrained, sft, grpo] = r.stages;
    // An untrained model built from a config writes noise, never a queue.
    assert.ok(untrained!.mean < 0.1, `untrained ${untrained!.mean}`);
    assert.ok(sft!.mean - untrained!.mean >= 0.3, `SFT ${untrained!.mean} → ${sft!.mean}`);
    assert.ok(sft!.change!.ci[0] > 0.2, `SFT's paired 95% interval ${sft!.change!.ci}`);
    assert.ok(grpo!.change!.ci[0] > 0, `GRPO's paired 95% interval ${grpo!.change!.ci} (${sft!.mean} → ${grpo!.mean})`);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('the stock-lookup Clerk learns to answer with the right tool call: SFT raises the reward its calls earn and GRPO keeps it', { skip: noTorch, timeout: 1_800_000 }, async () => {
  const ws = tempWorkspace();
  try {
    await initWorkspace(ws, { example: 'stock-lookup' });
    // The example's own settings on all 64 validation questions: about 7 minutes on 2 cores.
    const r = await learningRun({ workspace: ws, evalSamples: 4 });
    console.log(stagesText(r));
    await checkRun(ws, r, 'Clerk', 256, 64);
    const [untrained, sft, grpo] = r.stages;
    assert.ok(untrained!.mean < 0.05, `untrained ${untrained!.mean}`);
    assert.ok(sft!.change!.ci[0] > 0.1, `SFT's paired 95% interval ${sft!.change!.ci} (${untrained!.mean} → ${sft!.mean})`);
    // GRPO's gain on the Clerk is small beside the noise of 64 questions: +0.043 [0.004, 0.082] with the example's seed on
    // this machine, +0.023 [-0.025, 0.072] with GRPO seed 1, +0.051 [-0.003, 0.104] on another host. So the test holds it
    // to keeping what SFT taught (no significant loss: at the Router's learning rate one step cost 0.15), not to a gain;
    // the ticket-routing test above holds GRPO to a gain.
    assert.ok(grpo!.change!.ci[1] > 0, `GRPO lost what SFT taught: paired 95% interval ${grpo!.change!.ci} (${sft!.mean} → ${grpo!.mean})`);
    assert.ok(grpo!.mean - untrained!.mean > 0.3, `GRPO ${untrained!.mean} → ${grpo!.mean}`);
    // The reward is earned through the tool: the trained student's calls were parsed into tool calls and ran in the lookup node.
    const store = await TraceStore.open(ws, { readOnly: true });
    try {
      const { rollouts } = store.listRollouts({ runId: grpo!.runId, limit: 1000 });
      const calls = rollouts.flatMap((x) => store.getSpans(x.id).filter((sp) => sp.attributes['gen_ai.operation.name'] === 'execute_tool'));
      assert.ok(calls.length >= rollouts.length / 2, `${calls.length} tool calls in ${rollouts.length} rollouts`);
      assert.ok(calls.every((sp) => ['get_price', 'get_stock'].includes(String(sp.attributes['gen_ai.tool.name']))));
      assert.ok(calls.every((sp) => sp.attributes['rollout_lab.model.version'] === grpo!.version), 'each call is the GRPO-trained version\'s');
    } finally {
      await store.close();
    }
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
