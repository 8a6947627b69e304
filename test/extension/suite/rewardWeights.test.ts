import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { applyEdits, modify, parse } from 'jsonc-parser';
import { after, before, describe, it } from 'mocha';
import * as vscode from 'vscode';
import { api, ensureRun, runInTree, waitFor, workspaceDir } from './helpers';

/** What these tests use of the reward-weight editor's host and of the store (structural: the suite states its contract). */
interface WeightsHostLike {
  handle(method: string, params: unknown): Promise<unknown>;
  notified: Array<{ type: string; params: unknown }>;
}
interface StoreLike {
  getRollout(id: string): { id: string; finalReward: number | null; criteria: Record<string, number> | null } | null;
  listRollouts(q: object): { rollouts: Array<{ id: string; finalReward: number | null; criteria: Record<string, number> | null; judgeFailed: boolean }> };
  rewardHistory(id: string): Array<{ rescoreId: string | null; reward: number | null; criteria: Record<string, { weight: number }> | null }>;
  refresh(): Promise<boolean>;
}
interface WhatIfLike {
  rollouts: number;
  rescored: number;
  before: { histogram: number[]; mean: number | null };
  after: { histogram: number[]; mean: number | null };
  top: { after: Array<{ rolloutId: string }> };
}
interface RescoreOutcomeLike {
  confirmed: boolean;
  rescoreId: string | null;
  rescored: number;
  changed: number;
}

const labJson = (): string => join(workspaceDir(), '.rollout-lab', 'lab.json');

async function weightsHost(): Promise<WeightsHostLike> {
  const a = await api();
  return (await waitFor('the rewardWeights panel host', () => a.panels.get('rewardWeights'))) as unknown as WeightsHostLike;
}

async function store(): Promise<StoreLike> {
  const a = await api();
  return (a.service as { store(): Promise<StoreLike> }).store();
}

/** Weighted mean of criterion scores, written out independently of the extension's code. */
function weighted(scores: Record<string, number>, weights: Record<string, { weight: number }>): number {
  let total = 0;
  let sum = 0;
  for (const [k, w] of Object.entries(weights)) {
    total += w.weight * (scores[k] ?? 0);
    sum += w.weight;
  }
  return total / sum;
}

describe('reward weights editor', () => {
  let original = '';
  before(async () => {
    await ensureRun();
    original = readFileSync(labJson(), 'utf8');
  });
  after(async () => {
    // Later test files see the lab as it was: lab.json back, and the stored rewards under its weights again.
    writeFileSync(labJson(), original);
    await vscode.commands.executeCommand('rolloutLab.rescoreStoredRollouts', { confirm: true, note: 'restore' });
  });

  it('Edit Reward Weights opens the panel, which answers weights/get and weights/whatIf from the stored scores', async () => {
    await vscode.commands.executeCommand('rolloutLab.openRewardWeights');
    const host = await weightsHost();
    const got = (await host.handle('weights/get', {})) as { configFile: string; criteria: Array<{ name: string; weight: number }>; scored: number; rollouts: number };
    assert.equal(got.configFile, labJson());
    assert.ok(got.criteria.some((c) => c.name === 'impact'));
    assert.ok(got.scored >= 1 && got.rollouts >= got.scored, `scored ${got.scored} of ${got.rollouts}`);

    const weights = Object.fromEntries(got.criteria.map((c) => [c.name, { weight: c.name === 'novelty' ? 5 : c.weight }]));
    const w = (await host.handle('weights/whatIf', { criteria: weights })) as WhatIfLike;
    const s = await store();
    const scored = s.listRollouts({ status: 'succeeded' }).rollouts.filter((r) => r.finalReward !== null);
    assert.equal(w.rollouts, scored.length);
    assert.equal(w.before.histogram.reduce((a, b) => a + b, 0), scored.length);
    const expectedMean = scored.reduce((a, r) => a + (r.criteria && !r.judgeFailed ? weighted(r.criteria, weights) : r.finalReward!), 0) / scored.length;
    assert.ok(Math.abs(w.after.mean! - expectedMean) < 1e-9, `after mean ${w.after.mean} vs ${expectedMean}`);
    // Bad weights are refused at the boundary.
    await assert.rejects(host.handle('weights/whatIf', { criteria: { impact: { weight: -1 } } }));
    await assert.rejects(host.handle('weights/whatIf', { criteria: { '<b>': { weight: 1 } } }));
  });

  it('weights/save writes lab.json, keeping its comments, and refuses invalid weights', async () => {
    const host = await weightsHost();
    // A comment a user wrote must survive the save.
    const fmt = { formattingOptions: { insertSpaces: true, tabSize: 2 } };
    let text = readFileSync(labJson(), 'utf8');
    text = applyEdits(text, modify(text, ['reward', 'judgeFailurePenalty'], 0.1, fmt)).replace('"judgeFailurePenalty"', '// the judge fails rarely\n    "judgeFailurePenalty"');
    writeFileSync(labJson(), text);
    const got = (await host.handle('weights/get', {})) as { criteria: Array<{ name: string; weight: number; description: string }>; air: unknown[] };
    const criteria = Object.fromEntries(got.criteria.map((c) => [c.name, { weight: c.name === 'novelty' ? 0.6 : c.weight, description: c.description }]));
    criteria.safety = { weight: 0.1, description: 'Flags risks to patients.' };
    const saved = (await host.handle('weights/save', { criteria, air: got.air })) as { file: string; criteria: Array<{ name: string; weight: number }> };
    assert.equal(saved.file, labJson());
    const after = readFileSync(labJson(), 'utf8');
    assert.ok(after.includes('// the judge fails rarely'), 'the comment survives');
    const parsed = parse(after);
    assert.equal(parsed.reward.criteria.novelty.weight, 0.6);
    assert.deepEqual(parsed.reward.criteria.safety, { weight: 0.1, description: 'Flags risks to patients.' });
    assert.deepEqual(parsed.air, got.air);

    await assert.rejects(host.handle('weights/save', { criteria: { impact: { weight: 0, description: 'x' } } }), /every weight is 0/);
    await assert.rejects(host.handle('weights/save', { criteria, air: [{ name: 'x', when: 'tool.ok', reward: 7 }] }), /air\[0\]\.reward/);
    assert.equal(readFileSync(labJson(), 'utf8'), after, 'a refused save leaves lab.json as it was');
  });

  it('Re-score Stored Rollouts ({ confirm: true }) gives new rewards under lab.json and keeps the old ones in the history', async () => {
    const s = await store();
    const before = new Map(s.listRollouts({ status: 'succeeded' }).rollouts.map((r) => [r.id, r]));
    const target = [...before.values()].find((r) => r.criteria && !r.judgeFailed && r.finalReward !== null);
    assert.ok(target, 'a rollout with criterion scores');
    const r = (await vscode.commands.executeCommand('rolloutLab.rescoreStoredRollouts', { confirm: true })) as RescoreOutcomeLike;
    assert.equal(r.confirmed, true);
    assert.match(r.rescoreId ?? '', /^rs_[0-9a-f]{12}$/);
    assert.ok(r.rescored >= 1);
    const cfg = parse(readFileSync(labJson(), 'utf8'));
    const expected = weighted(target.criteria!, cfg.reward.criteria);
    // The lab may have been reopened since (lab.json changed): read through the current store.
    const current = await store();
    await current.refresh();
    const now = current.getRollout(target.id)!;
    assert.ok(Math.abs(now.finalReward! - expected) < 1e-9, `new reward ${now.finalReward} vs ${expected}`);
    const history = current.rewardHistory(target.id);
    assert.equal(history[0]!.rescoreId, null, 'the reward it ran with comes first');
    assert.equal(history[0]!.reward, target.finalReward, 'and is kept');
    assert.equal(history[history.length - 1]!.rescoreId, r.rescoreId);
    assert.equal(history[history.length - 1]!.criteria!.novelty!.weight, 0.6);
    // The panel lists the re-score.
    const host = await weightsHost();
    const got = (await host.handle('weights/get', {})) as { rescores: Array<{ id: string; rollouts: number }> };
    assert.equal(got.rescores[0]!.id, r.rescoreId);
    assert.equal(got.rescores[0]!.rollouts, r.rescored);
  });

  it('air/validate and air/preview check rules and show what they would give on a rollout; Preview AIR Rules opens the panel on it', async () => {
    const run = await ensureRun();
    const a = await api();
    const found = await waitFor(`run ${run.runId} in the rollouts view`, () => runInTree(a.rolloutsTree, run.runId));
    const node = found.rollouts[0]!;
    const rolloutId = node.rollout!.id;
    await vscode.commands.executeCommand('rolloutLab.previewAirRules', node);
    const host = await weightsHost();
    assert.deepEqual(host.notified.filter((n) => n.type === 'air/selectRollout').pop()?.params, { rolloutId });

    const rules = [
      { name: 'tool_ok', when: 'tool.ok', reward: 0.05 },
      { name: 'ghost', when: 'output.valid', agents: ['NoSuchAgent'], reward: 0.1 },
    ];
    const v = (await host.handle('air/validate', { rules: [...rules, { name: 'bad', when: 'tool.maybe', reward: 0.1 }] })) as { valid: boolean; issues: Array<{ path: string; severity: string }> };
    assert.equal(v.valid, false);
    assert.ok(v.issues.some((i) => i.path.startsWith('air[2].when') && i.severity === 'error'), JSON.stringify(v.issues));
    assert.ok(v.issues.some((i) => i.path.startsWith('air[1].agents') && i.severity === 'warning'), JSON.stringify(v.issues));
    const p = (await host.handle('air/preview', { rules, rolloutId })) as {
      rollout: { id: string };
      preview: { rewards: Array<{ rule: string; reward: number }>; total: number; byRule: Record<string, { count: number }> } | null;
    };
    assert.equal(p.rollout.id, rolloutId);
    assert.ok(p.preview, 'a preview for valid rules');
    assert.equal(p.preview.byRule.ghost!.count, 0, 'a rule for an unknown agent never fires');
    assert.ok(p.preview.rewards.every((x) => x.rule === 'tool_ok'));
    assert.ok(Math.abs(p.preview.total - 0.05 * p.preview.rewards.length) < 1e-9);
  });
});
