import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts } from '../../../src/core/rollout/runner';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';
import { seededRandom } from '../../../src/core/data/seededRandom';
import { BANDIT_ATTR } from '../../../src/core/graph/researchLab/supervisorPolicy';
import { banditRecords } from '../../../src/core/train/export/adapters/banditAdapter';
import { hypothesisFeatures } from '../../../src/core/policy/features';
import { banditDir, loadPolicy } from '../../../src/core/policy/policyFiles';
import { trainBanditPolicy } from '../../../src/core/train/bandit/policyStore';
import { JUNIOR_AGENTS } from '../../../src/core/graph/researchLab/outputs';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

function setBandit(dir: string, bandit: Record<string, unknown>): void {
  const file = join(dir, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(file, 'utf8'));
  cfg.bandit = bandit;
  writeFileSync(file, JSON.stringify(cfg, null, 2));
}

/** Labs not closed yet: an open lab holds the simulated endpoint's port, so a failed assertion must still close it. */
const openLabs = new Set<Lab>();

async function openLab(dir: string): Promise<Lab> {
  const lab = await Lab.open({ workspace: dir, env: {} });
  openLabs.add(lab);
  return lab;
}

async function closeLab(lab: Lab): Promise<void> {
  openLabs.delete(lab);
  await lab.close();
}

/** Runs the same 3 train tasks with the same seed under the workspace's current config. */
async function batch(dir: string, seed = 21): Promise<{ lab: Lab; ids: string[] }> {
  const lab = await openLab(dir);
  const ds = await lab.loadDataset();
  const tasks = lab.selectTasks(ds, { split: 'train', limit: 3, seed: 2 });
  const r = await runRollouts(await lab.environment(ds.tasks), { tasks, samples: 1, concurrency: 1, params: {}, seed });
  assert.deepEqual(r.rollouts.map((x) => x.status), ['succeeded', 'succeeded', 'succeeded']);
  return { lab, ids: r.rollouts.map((x) => x.id) };
}

const supervisorNode = (spans: SpanRecord[]): SpanRecord => spans.find((s) => s.kind === 'node' && s.name === 'Supervisor')!;
const supervisorCalls = (spans: SpanRecord[]): SpanRecord[] => spans.filter((s) => s.kind === 'llm' && s.attributes[Attr.agentName] === 'Supervisor');
const selected = (node: SpanRecord): number => (JSON.parse(String(node.attributes[Attr.output])) as { selected_hypothesis_index: number }).selected_hypothesis_index;

/** The hypotheses in the order the Supervisor saw them, from the juniors' spans. */
function candidates(spans: SpanRecord[]): Array<{ agent: string; text: string }> {
  return JUNIOR_AGENTS.flatMap((agent) => {
    const node = spans.filter((s) => s.kind === 'node' && s.name === agent && s.attributes['rollout_lab.output.ok'] === true).pop();
    return node ? [{ agent, text: (JSON.parse(String(node.attributes[Attr.output])) as { hypothesis: string }).hypothesis }] : [];
  });
}

test('Supervisor bandit on the simulated endpoint: off changes nothing, decide picks what the policy says, advise ranks in the prompt', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-bandit-graph-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  try {
    // Baseline, then train on it.
    let { lab, ids } = await batch(dir);
    const baseline = ids.map((id) => lab.store.getSpans(id));
    for (const spans of baseline) {
      assert.equal(supervisorCalls(spans).length, 1);
      assert.ok(!Object.keys(supervisorNode(spans).attributes).some((k) => k.startsWith('rollout_lab.bandit.')));
    }
    // The simulated endpoint's decisions are left out unless asked for.
    await assert.rejects(trainBanditPolicy(lab.store, lab.loaded.config, lab.loaded.labDir), /3 simulated rollouts left out \(pass --include-simulated to use them\)/);
    const info = await trainBanditPolicy(lab.store, lab.loaded.config, lab.loaded.labDir, { includeSimulated: true });
    assert.equal(info.records, 3);
    assert.equal(info.simulatedLeftOut, 0);
    assert.equal(info.split, 'train');
    const policy = loadPolicy(banditDir(lab.loaded.labDir, lab.loaded.config), info.version);
    await closeLab(lab);

    // off, with a policy now active: the same rollouts as before.
    setBandit(dir, { mode: 'off' });
    ({ lab, ids } = await batch(dir));
    ids.forEach((id, i) => {
      const spans = lab.store.getSpans(id);
      const before = baseline[i]!;
      assert.equal(supervisorCalls(spans)[0]!.attributes[Attr.inputMessages], supervisorCalls(before)[0]!.attributes[Attr.inputMessages]);
      assert.equal(selected(supervisorNode(spans)), selected(supervisorNode(before)));
      assert.ok(!Object.keys(supervisorNode(spans).attributes).some((k) => k.startsWith('rollout_lab.bandit.')));
    });
    await closeLab(lab);

    // decide, ε = 0: the policy's argmax, no Supervisor model call, an honest span.
    setBandit(dir, { mode: 'decide', epsilon: 0 });
    ({ lab, ids } = await batch(dir));
    for (const id of ids) {
      const spans = lab.store.getSpans(id);
      const node = supervisorNode(spans);
      const cs = candidates(spans);
      assert.ok(cs.length >= 2, 'the juniors proposed hypotheses');
      const xs = cs.map((c) => hypothesisFeatures(c.text, c.agent, policy.learner.dim));
      const want = policy.learner.choose(xs, seededRandom(1), 0);
      assert.equal(supervisorCalls(spans).length, 0, "the Supervisor's model is not called in mode decide");
      assert.equal(node.attributes[BANDIT_ATTR.mode], 'decide');
      assert.equal(node.attributes[BANDIT_ATTR.policyVersion], info.version);
      assert.equal(node.attributes[BANDIT_ATTR.chosen], want.index);
      assert.equal(node.attributes[BANDIT_ATTR.explored], false);
      assert.deepEqual(node.attributes[BANDIT_ATTR.scores], want.scores.map((x) => Math.round(x * 1e6) / 1e6));
      assert.equal(selected(node), want.index);
      const refiner = spans.find((s) => s.kind === 'llm' && s.attributes[Attr.agentName] === 'HypothesisRefiner')!;
      assert.ok(String(refiner.attributes[Attr.inputMessages]).includes(`Selected hypothesis: ${JSON.stringify(cs[want.index]!.text).slice(1, -1)}`), 'the refiner works on the policy\'s pick');
    }
    const later = banditRecords(lab.store, { includeSimulated: true }).filter((r) => ids.includes(r.rolloutId));
    assert.equal(later.length, 3);
    for (const r of later) assert.equal(r.policyVersion, info.version, 'bandit records of later rollouts carry the policy version');
    await closeLab(lab);

    // advise: the ranking is in the Supervisor's prompt, and its own model picks.
    setBandit(dir, { mode: 'advise' });
    ({ lab, ids } = await batch(dir));
    for (const id of ids) {
      const spans = lab.store.getSpans(id);
      const node = supervisorNode(spans);
      const cs = candidates(spans);
      const est = policy.learner.estimates(cs.map((c) => hypothesisFeatures(c.text, c.agent, policy.learner.dim)));
      const order = est.map((s, i) => ({ s, i })).sort((a, b) => b.s - a.s || a.i - b.i);
      const line = `policy ${info.version} ranks: ${order.map(({ s, i }) => `[${i}] (${s.toFixed(2)})`).join(', ')}`;
      const calls = supervisorCalls(spans);
      assert.equal(calls.length, 1);
      const messages = JSON.parse(String(calls[0]!.attributes[Attr.inputMessages])) as Array<{ role: string; content: string }>;
      assert.ok(messages.find((m) => m.role === 'user')!.content.includes(`\n\n${line}\n\n`), `the briefing carries "${line}"`);
      assert.equal(node.attributes[BANDIT_ATTR.mode], 'advise');
      assert.equal(node.attributes[BANDIT_ATTR.policyVersion], info.version);
      assert.equal(node.attributes[BANDIT_ATTR.chosen], selected(node), "in advise mode the Supervisor's own pick is recorded");
      assert.equal(node.attributes[BANDIT_ATTR.explored], false);
    }
    await closeLab(lab);

    // A mode that needs a policy, with none active: a clear error before any rollout runs.
    setBandit(dir, { mode: 'decide', policy: 'bandit-0042-deadbeef' });
    lab = await openLab(dir);
    await assert.rejects(lab.environment((await lab.loadDataset()).tasks), /bandit-0042-deadbeef does not exist/);
    await closeLab(lab);
  } finally {
    for (const lab of openLabs) await closeLab(lab);
    rmSync(dir, { recursive: true, force: true });
  }
});
