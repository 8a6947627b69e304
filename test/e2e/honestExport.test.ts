import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ExportManifest } from '../../src/core/train/export/exportData';
import { startOpenAIStub } from '../fakes/openaiStub';
import { cli, cliAsync, json, tempWorkspace, type CliResult, type RunDoc } from './cliHelpers';

/*
 * Training data that says what it is, through the CLI as a user runs it:
 * rows whose reward is a penalty say so and stay out unless asked for, and an
 * export, a phase or a pre-flight with nothing to train on fails with what
 * was dropped and why — never an empty file and "done".
 */

const GRAPH = `import { StateGraph, MessagesAnnotation, START, END } from '@langchain/langgraph';
export default function build(ctx) {
  const model = ctx.model('Worker');
  return new StateGraph(MessagesAnnotation)
    .addNode('Worker', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addEdge(START, 'Worker')
    .addEdge('Worker', END)
    .compile();
}
export const prompts = { Worker: 'Answer the question in one word.' };
`;

// Task t2's reward fails: the rollout keeps its trace and gets reward.customFailurePenalty.
const REWARD = `export default function reward(input) {
  if (input.task.id === 't2') throw new Error('the scorer cannot read t2');
  return 0.8;
}
`;

const TASKS = ['t1', 't2', 't3', 't4'].map((id, i) => JSON.stringify({ id, goal: `question ${i + 1}?`, context: `context ${i + 1}` })).join('\n') + '\n';

type LabJson = Record<string, any>;

/** A module-graph lab whose one node (Worker) calls the model; lab.json also declares a Solver that no span carries, and phases that train it. */
function initLab(ws: string, baseUrl: string | null): void {
  writeFileSync(join(ws, 'graph.mjs'), GRAPH);
  writeFileSync(join(ws, 'tasks.jsonl'), TASKS);
  writeFileSync(join(ws, 'reward.mjs'), REWARD);
  const init = cli(['init', '--workspace', ws, '--graph', 'graph.mjs', '--dataset', 'tasks.jsonl']);
  assert.equal(init.code, 0, init.stderr);
  const file = join(ws, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(file, 'utf8')) as LabJson;
  if (baseUrl) for (const m of Object.values(cfg.models) as LabJson[]) m.baseUrl = baseUrl;
  cfg.agents.Solver = { ...cfg.agents.Worker };
  cfg.reward = { ...cfg.reward, module: 'reward.mjs', mode: 'replace' };
  cfg.training = {
    phases: [
      { name: 'sft-solver', kind: 'sft', agents: ['Solver'], split: 'all', minReward: 0 },
      { name: 'grpo-solver', kind: 'grpo', agents: ['Solver'], split: 'all' },
      { name: 'sft-worker', kind: 'sft', agents: ['Worker'], split: 'all', minReward: 0 },
    ],
  };
  writeFileSync(file, JSON.stringify(cfg, null, 2));
}

/** The CLI in a process of its own while this one answers as the model server (spawnSync would block the stub). */
async function runAsync(args: string[]): Promise<CliResult> {
  const { child, done } = cliAsync(args);
  const guard = setTimeout(() => child.kill('SIGKILL'), 240_000);
  try {
    return await done;
  } finally {
    clearTimeout(guard);
  }
}

function rows(file: string): Array<Record<string, any>> {
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, any>);
}

test('a lab against a model server: penalised rollouts are left out and counted, or included and marked; an agent no span carries fails the export, the phases and the pre-flight with the agents that were found', async () => {
  const ws = tempWorkspace();
  const stub = await startOpenAIStub({ replies: () => ({ content: 'yes' }) });
  try {
    initLab(ws, stub.url);
    const run = await runAsync(['run', '--workspace', ws, '--split', 'all', '--json']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(json<RunDoc>(run).succeeded, 4);

    // Default: the penalised rollout (t2) is left out, counted, and the output says how to include it.
    const rl = join(ws, 'out', 'rl.jsonl');
    const plain = await runAsync(['export', '--workspace', ws, '--format', 'rl', '--split', 'all', '--out', rl]);
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stdout, /^rl: 3 records from 3 rollouts/);
    assert.match(plain.stdout, /1 rollouts whose reward is a penalty \(the judge or the custom reward failed\) left out \(pass --include-penalised to use them\)/);
    const m = JSON.parse(readFileSync(`${rl}.manifest.json`, 'utf8')) as ExportManifest;
    assert.equal(m.counts.skipped.penalised, 1);
    assert.equal(m.counts.penalised, 0);
    assert.equal(m.options.includePenalised, false);
    assert.deepEqual(rows(rl).map((r) => [r.group, r.reward_source, r.penalty]), [['t1', 'scored', null], ['t3', 'scored', null], ['t4', 'scored', null]]);

    // Asked for: every row of it says its reward is a penalty, and why; the manifest counts it.
    for (const format of ['rl', 'sft']) {
      const file = join(ws, 'out', `${format}-all.jsonl`);
      const r = await runAsync(['export', '--workspace', ws, '--format', format, '--split', 'all', '--min-reward', '0', '--include-penalised', '--out', file, '--json']);
      assert.equal(r.code, 0, r.stderr);
      const doc = json<ExportManifest>(r);
      assert.equal(doc.counts.records, 4);
      assert.equal(doc.counts.penalised, 1);
      assert.equal(doc.counts.skipped.penalised, undefined);
      const origin = rows(file).map((x) => (format === 'rl' ? x : x.metadata) as Record<string, any>);
      const penalised = origin.filter((x) => x.reward_source === 'penalty');
      assert.equal(penalised.length, 1, format);
      assert.equal(penalised[0]!.penalty.kind, 'custom_reward_failed');
      assert.match(penalised[0]!.penalty.reason, /the scorer cannot read t2/);
      assert.ok(origin.filter((x) => x !== penalised[0]).every((x) => x.reward_source === 'scored' && x.penalty === null));
    }

    // An agent of lab.json that no span carries: 0 rows is exit 1, nothing written, the agents found named.
    for (const format of ['rl', 'sft']) {
      const file = join(ws, 'out', `solver-${format}.jsonl`);
      const r = await runAsync(['export', '--workspace', ws, '--format', format, '--split', 'all', '--agents', 'Solver', '--min-reward', '0', '--out', file]);
      assert.equal(r.code, 1, `${format}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, new RegExp(`no training rows: the ${format} export of Solver \\(every split\\) has 0 rows to train on; dropped: agent not found: 4 rollouts with no model call of Solver \\(the agents that made model calls are: Worker`));
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.equal(existsSync(file), false, 'no empty file');
      assert.equal(existsSync(`${file}.manifest.json`), false);
    }

    // The phases that train Solver fail, with the same reasons; never "done (rollouts 0, records 0 …)".
    for (const phase of ['sft-solver', 'grpo-solver']) {
      const r = await runAsync(['pipeline', 'run', phase, '--workspace', ws]);
      assert.equal(r.code, 1, `${phase}: ${r.stdout}${r.stderr}`);
      const text = r.stdout + r.stderr;
      assert.match(text, new RegExp(`phase ${phase}: failed`));
      assert.doesNotMatch(text, /: done/);
      assert.match(text, /0 rows to train on; dropped: agent not found: 4 rollouts with no model call of Solver \(the agents that made model calls are: Worker/);
    }
    // The same lab's phase for the agent that did the work runs, and says what it left out.
    const worker = await runAsync(['pipeline', 'run', 'sft-worker', '--workspace', ws, '--json']);
    assert.equal(worker.code, 0, worker.stderr);
    const rec = json<{ state: string; counts: Record<string, number>; note: string }>(worker);
    assert.equal(rec.state, 'done');
    assert.equal(rec.counts.records, 3);
    assert.equal(rec.counts.penalisedLeftOut, 1);
    assert.match(rec.note, /1 rollouts whose reward is a penalty \(the judge or the custom reward failed\) left out \(set "includePenalised": true on the phase/);

    // The pre-flight of Solver's SFT is an error, never "ready to run" over zero prompts.
    const pf = await runAsync(['preflight', '--workspace', ws, '--phase', 'sft', '--agents', 'Solver', '--split', 'all', '--min-reward', '0']);
    assert.equal(pf.code, 1, pf.stdout + pf.stderr);
    assert.doesNotMatch(pf.stdout, /ready to run/);
    assert.doesNotMatch(pf.stdout, /✓ all 0/);
    assert.match(pf.stdout, /✗ 0 rows to train on; dropped: agent not found: 4 rollouts with no model call of Solver \(the agents that made model calls are: Worker/);
    // Worker's passes, and counts the rows it would train on.
    const ok = await runAsync(['preflight', '--workspace', ws, '--phase', 'sft', '--agents', 'Worker', '--split', 'all', '--min-reward', '0']);
    assert.equal(ok.code, 0, ok.stdout);
    assert.match(ok.stdout, /ℹ 3 SFT rows from 3 rollouts; dropped: penalised: 1 rollout whose reward is a penalty/);
  } finally {
    await stub.close();
    rmSync(ws, { recursive: true, force: true });
  }
});

test('a lab of only simulated rollouts: export rl and sft and the phase fail with the simulated count, and write nothing', () => {
  const ws = tempWorkspace();
  try {
    initLab(ws, null);
    const run = cli(['run', '--workspace', ws, '--split', 'all', '--json']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(json<RunDoc>(run).simulated, true);
    for (const format of ['rl', 'sft']) {
      const file = join(ws, 'out', `${format}.jsonl`);
      const r = cli(['export', '--workspace', ws, '--format', format, '--split', 'all', '--out', file]);
      assert.equal(r.code, 1, `${format}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /has 0 rows to train on; dropped: simulated: 4 rollouts answered by the simulated endpoint, a test double \(give the models a baseUrl and gather again, or include them with --include-simulated/);
      assert.doesNotMatch(r.stdout, /records from/);
      assert.equal(existsSync(file), false);
    }
    const phase = cli(['pipeline', 'run', 'sft-worker', '--workspace', ws]);
    assert.equal(phase.code, 1, phase.stdout + phase.stderr);
    assert.match(phase.stderr, /phase sft-worker: failed/);
    assert.match(phase.stderr, /simulated/);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
