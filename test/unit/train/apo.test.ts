import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { applyEdits, modify } from 'jsonc-parser';
import { initWorkspace } from '../../../src/core/lab/init';
import { loadConfig, promptHash, readAgentPrompt } from '../../../src/core/config/loader';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts } from '../../../src/core/rollout/runner';
import { startSimServer } from '../../../src/core/sim/simServer';
import { optimizePrompt } from '../../../src/core/train/apo/optimizePrompt';
import { applyPrompt } from '../../../src/core/train/apo/applyPrompt';
import type { ApoRound } from '../../../src/core/train/apo/apoTypes';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

/** The version of `agent`'s prompt each rollout of a run recorded. */
function versionsOf(lab: Lab, runId: string, agent: string): string[] {
  return lab.store.listRollouts({ runId }).rollouts.map((r) => r.agents.find((a) => a.agent === agent)?.promptVersion ?? 'none');
}

test('optimizePrompt: rounds of critique, rewrites scored by real runs on the same tasks, a beam of the best', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-apo-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  const lab = await Lab.open({ workspace: dir, env: {} });
  try {
    const seen: ApoRound[] = [];
    const result = await optimizePrompt(lab, { agent: 'Supervisor', rounds: 2, beam: 2, candidates: 2, validationTasks: 3, onRound: (r) => seen.push(r) });
    const { text: current } = await readAgentPrompt(lab.loaded, 'Supervisor');
    assert.equal(result.agent, 'Supervisor');
    assert.equal(result.baseline.text, current);
    assert.equal(result.baseline.version, promptHash(current));
    assert.equal(result.rounds.length, 2);
    assert.deepEqual(seen.map((r) => r.round), [1, 2], 'onRound once per round, in order');

    const runs = lab.store.listRuns().filter((r) => r.params.command === 'optimize');
    const baseRun = runs.find((r) => r.params.round === 0)!;
    assert.ok(baseRun, 'the baseline is scored by a stored run');
    const taskIds = (runId: string): string[] => lab.store.listRollouts({ runId }).rollouts.map((r) => r.taskId).sort();
    assert.equal(taskIds(baseRun.id).length, 3);
    assert.deepEqual(new Set(versionsOf(lab, baseRun.id, 'Supervisor')), new Set([result.baseline.version]));
    const meanOf = (runId: string): number => {
      const rs = lab.store.listRollouts({ runId }).rollouts;
      return rs.reduce((s, r) => s + (r.finalReward ?? 0), 0) / rs.length;
    };
    assert.ok(Math.abs(meanOf(baseRun.id) - result.baseline.score!) < 1e-9, 'score = mean final reward');

    // Round 1 starts from the baseline alone: 2 rewrites; round 2 from a beam of 2: up to 4 (duplicates dropped).
    assert.equal(result.rounds[0]!.candidates.length, 2);
    assert.ok(result.rounds[1]!.candidates.length >= 1 && result.rounds[1]!.candidates.length <= 4);
    assert.match(result.rounds[1]!.critique, /\[prompt 1 of 2, score/, 'one critique per prompt in the beam');
    const allVersions = new Set([result.baseline.version]);
    const pool = [{ version: result.baseline.version, score: result.baseline.score! }];
    for (const round of result.rounds) {
      assert.ok(round.critique.length > 40, `round ${round.round} has a critique`);
      for (const [i, c] of round.candidates.entries()) {
        assert.equal(c.error, undefined, `candidate ${i} of round ${round.round}: ${c.error}`);
        assert.equal(c.version, promptHash(c.text));
        assert.ok(!allVersions.has(c.version), 'no prompt is scored twice');
        allVersions.add(c.version);
        assert.ok(c.text.startsWith(current.trimEnd()), 'the simulated editor adds an instruction to the prompt');
        assert.ok(c.text.endsWith('\n') === current.endsWith('\n'), 'a rewrite ends as the original does');
        const run = lab.store.getRun(c.runId!)!;
        assert.deepEqual([run.params.command, run.params.agent, run.params.round, run.params.candidate], ['optimize', 'Supervisor', round.round, i]);
        assert.deepEqual(taskIds(c.runId!), taskIds(baseRun.id), 'every candidate runs the same validation tasks');
        assert.deepEqual(new Set(versionsOf(lab, c.runId!, 'Supervisor')), new Set([c.version]), 'the rollouts ran the candidate');
        assert.ok(Math.abs(meanOf(c.runId!) - c.score!) < 1e-9);
        assert.equal(lab.store.getPromptVersion(c.version)!.text, c.text);
        pool.push({ version: c.version, score: c.score! });
      }
      // The beam: the 2 best of everything scored so far, best first.
      const best2 = [...pool].sort((a, b) => b.score - a.score).slice(0, 2);
      assert.deepEqual(round.beam!.map((b) => b.version), best2.map((b) => b.version), `round ${round.round} keeps the best two`);
      for (const c of round.candidates) assert.equal(c.kept, best2.some((b) => b.version === c.version));
    }
    const top = [...pool].sort((a, b) => b.score - a.score)[0]!;
    assert.equal(result.best.version, top.version);
    assert.equal(result.best.score, top.score);
    assert.ok(result.best.score! >= result.baseline.score!, 'the winner is at least as good as the baseline');
    assert.equal(lab.store.listRuns().filter((r) => r.params.command === 'optimize').length, 1 + pool.length - 1);

    // Apply the winner (or, if the baseline won, the best candidate) to the prompt file: the next rollout records the new version.
    const winner = result.best.round > 0 ? result.best : { ...result.rounds[0]!.candidates[0]! };
    const applied = await applyPrompt(lab, 'Supervisor', winner.text);
    assert.equal(applied.file, join(dir, '.rollout-lab', 'prompts', 'Supervisor.md'));
    assert.equal(readFileSync(applied.file, 'utf8'), winner.text);
    assert.equal(applied.version, winner.version);
    const ds = await lab.loadDataset();
    const next = await runRollouts(await lab.environment(ds.tasks), { tasks: lab.selectTasks(ds, { split: 'val', limit: 1, seed: 1 }), samples: 1, concurrency: 1, params: { command: 'run' } });
    assert.deepEqual(versionsOf(lab, next.runId, 'Supervisor'), [applied.version]);
  } finally {
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('optimizePrompt discards a rewrite that drops a placeholder; applyPrompt edits an inline promptText and keeps comments', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-apo-inline-'));
  // A careless editor: the simulator's first rewrite of each prompt leaves a placeholder out.
  const sim = await startSimServer({ editorDropsPlaceholder: true });
  await initWorkspace(dir, { dataset: PUBMEDQA });
  const labJson = join(dir, '.rollout-lab', 'lab.json');
  let text = readFileSync(labJson, 'utf8');
  const inline = 'You supervise the {{lab_name}} lab. Pick the hypothesis with the best evidence for {topic}.\nAnswer with the keys "selected_hypothesis_index" and "justification". Reply with JSON only.';
  text = applyEdits(text, modify(text, ['agents', 'Supervisor', 'prompt'], undefined, {}));
  text = applyEdits(text, modify(text, ['agents', 'Supervisor', 'promptText'], inline, { formattingOptions: { insertSpaces: true, tabSize: 2 } }));
  text = text.replace('"agents": {', '"agents": {\n    // the supervisor prompt lives here, inline');
  writeFileSync(labJson, text);
  const lab = await Lab.open({ workspace: dir, baseUrl: sim.url, env: {} });
  try {
    assert.equal(lab.simulated, false, 'every model goes to the test\'s own simulator');
    const result = await optimizePrompt(lab, { agent: 'Supervisor', rounds: 1, beam: 1, candidates: 2, validationTasks: 2 });
    const [dropped, scored] = result.rounds[0]!.candidates;
    assert.match(dropped!.error ?? '', /drops the placeholder \{\{lab_name\}\}/);
    assert.equal(dropped!.runId, null);
    assert.equal(dropped!.score, null);
    assert.equal(dropped!.kept, false);
    assert.equal(scored!.error, undefined);
    assert.ok(scored!.text.includes('{{lab_name}}') && scored!.text.includes('{topic}'));
    assert.equal(lab.store.listRuns().filter((r) => r.params.command === 'optimize').length, 2, 'the baseline and the one valid rewrite ran; the discarded one did not');

    const applied = await applyPrompt(lab, 'Supervisor', scored!.text);
    assert.equal(applied.file, labJson);
    const after = readFileSync(labJson, 'utf8');
    assert.match(after, /\/\/ the supervisor prompt lives here, inline/, 'comments survive');
    const reloaded = await loadConfig(dir);
    assert.equal(reloaded.config.agents.Supervisor!.promptText, scored!.text);
    assert.equal(applied.version, promptHash(scored!.text));
    assert.equal(applied.version, scored!.version);
    // The open lab sees it at once: the next rollout records the new version.
    const ds = await lab.loadDataset();
    const next = await runRollouts(await lab.environment(ds.tasks), { tasks: lab.selectTasks(ds, { split: 'val', limit: 1, seed: 1 }), samples: 1, concurrency: 1, params: { command: 'run' } });
    assert.deepEqual(versionsOf(lab, next.runId, 'Supervisor'), [applied.version]);
  } finally {
    await lab.close();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
