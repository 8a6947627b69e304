import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Lab } from '../../../src/core/lab/lab';
import { ConfigError } from '../../../src/core/errors';
import { runRollouts } from '../../../src/core/rollout/runner';

/*
 * A command lab whose program holds its own prompts: its agents name none in
 * lab.json. The program (a real child process) prints what the lab handed it
 * in ROLLOUT_LAB_PROMPTS_FILE into seen-prompts.json.
 */

const PROGRAM = `
const fs = require('node:fs');
process.stdin.resume();
process.stdin.on('end', () => {
  fs.writeFileSync('seen-prompts.json', fs.readFileSync(process.env.ROLLOUT_LAB_PROMPTS_FILE, 'utf8'));
  console.log(JSON.stringify({ final_output: 'routed', turns: 1 }));
});
`;

function commandLab(t: { after: (fn: () => void) => void }, agents: Record<string, Record<string, unknown>>): string {
  const ws = mkdtempSync(path.join(tmpdir(), 'rl-command-lab-'));
  t.after(() => rmSync(ws, { recursive: true, force: true }));
  mkdirSync(path.join(ws, '.rollout-lab'));
  writeFileSync(path.join(ws, 'agent.js'), PROGRAM);
  writeFileSync(path.join(ws, 'tasks.jsonl'), '{"id":"t1","goal":"Route: refund","context":""}\n{"id":"t2","goal":"Route: parcel","context":""}\n');
  const config = {
    version: 1,
    models: { main: { model: 'm' } },
    agents,
    graph: { kind: 'command', command: [process.execPath, 'agent.js'], timeoutMs: 60_000 },
    datasets: { tasks: { path: 'tasks.jsonl' } },
    reward: { judge: { model: 'main' }, criteria: {} },
  };
  writeFileSync(path.join(ws, '.rollout-lab', 'lab.json'), JSON.stringify(config, null, 2));
  return ws;
}

async function runAll(ws: string): Promise<{ rollouts: Array<{ status: string; error: string | null }>; promptVersion: (agent: string) => string | null }> {
  const lab = await Lab.open({ workspace: ws, env: {} });
  try {
    const ds = await lab.loadDataset();
    const env = await lab.environment(ds.tasks);
    const r = await runRollouts(env, { tasks: lab.selectTasks(ds, { split: 'all' }), samples: 1, concurrency: 1, params: {} });
    return { rollouts: r.rollouts, promptVersion: (agent) => env.versions.promptVersion(agent) };
  } finally {
    await lab.close();
  }
}

test('the agents of a command lab need no prompt: the rollouts run, and ROLLOUT_LAB_PROMPTS_FILE holds only the prompts lab.json has', async (t) => {
  const ws = commandLab(t, { Drafter: { model: 'main' }, Reviewer: { model: 'main' }, Editor: { model: 'main', promptText: 'You edit.' } });
  // Reviewer has a prompt file of its own at the default place: it is read as for any lab.
  mkdirSync(path.join(ws, '.rollout-lab', 'prompts'));
  writeFileSync(path.join(ws, '.rollout-lab', 'prompts', 'Reviewer.md'), 'You review.\n');
  const { rollouts, promptVersion } = await runAll(ws);
  assert.equal(rollouts.length, 2);
  for (const r of rollouts) assert.equal(r.status, 'succeeded', r.error ?? '');
  assert.deepEqual(JSON.parse(readFileSync(path.join(ws, 'seen-prompts.json'), 'utf8')), { Reviewer: 'You review.\n', Editor: 'You edit.' }, 'Drafter has no prompt: it is absent from the file');
  assert.equal(promptVersion('Drafter'), null);
  assert.match(promptVersion('Editor') ?? '', /^[0-9a-f]{12}$/);
});

test('a prompt file a command agent names is still required: a typo is an error naming it', async (t) => {
  const ws = commandLab(t, { Drafter: { model: 'main', prompt: 'prompts/Drafter.md' } });
  await assert.rejects(runAll(ws), (err: unknown) => err instanceof ConfigError && /prompt file .*Drafter\.md for agent "Drafter" does not exist/.test(err.message));
});
