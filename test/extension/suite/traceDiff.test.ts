import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'mocha';
import * as vscode from 'vscode';
import { api, waitFor, workspaceDir } from './helpers';

interface HostLike {
  handle(method: string, params: unknown): Promise<unknown>;
  runCommand(command: string, args: unknown): Promise<void>;
  notified: Array<{ type: string; params: unknown }>;
}

interface TraceDiffLike {
  left: { id: string; taskId: string; steps: number };
  right: { id: string; taskId: string; steps: number };
  rows: Array<{ kind: string; left: { node: string } | null; right: { node: string } | null }>;
  differs: string[];
  versionChanges: Array<{ agent: string; left: { prompt: string | null } | null; right: { prompt: string | null } | null }>;
  counts: Record<string, number>;
}

interface CompareResultLike {
  runA: string;
  runB: string | null;
}

interface ComparisonLike {
  tasks: Array<{ taskId: string; rolloutIdsA: string[]; rolloutIdsB: string[] }>;
}

async function host(kind: string): Promise<HostLike> {
  const a = await api();
  const get = a.panels.get as unknown as (kind: string) => HostLike | undefined;
  return waitFor(`the ${kind} panel host`, () => get.call(a.panels, kind));
}

function lastShow(h: HostLike): unknown {
  return h.notified.filter((n) => n.type === 'diff/show').pop()?.params;
}

describe('trace diff', () => {
  let cmp: CompareResultLike;
  let pair: { left: string; right: string; taskId: string };
  const AGENT = 'PrincipalInvestigator';

  it('opens from the comparison panel through trace/diff: the same task under two prompt versions, aligned by step', async () => {
    // Side B runs the PI with a reworded prompt (a new prompt version), on the same tasks and seeds as A.
    const dir = workspaceDir();
    const base = readFileSync(join(dir, '.rollout-lab', 'prompts', `${AGENT}.md`), 'utf8');
    writeFileSync(join(dir, 'trace-diff-variant.md'), `${base}\n\nWeigh the safety review twice before deciding.\n`);
    cmp = (await vscode.commands.executeCommand<CompareResultLike>('rolloutLab.compareConfigurations', {
      a: 'base',
      b: `prompt:${AGENT}=@trace-diff-variant.md,label:reworded PI`,
      limit: 1,
    }))!;
    assert.ok(cmp.runB, 'both sides ran');
    const comparison = await host('comparison');
    const c = (await comparison.handle('comparison/get', { runA: cmp.runA, runB: cmp.runB })) as ComparisonLike;
    const task = c.tasks[0]!;
    pair = { left: task.rolloutIdsA[0]!, right: task.rolloutIdsB[0]!, taskId: task.taskId };
    // What the panel's "Trace diff A ↔ B" button posts.
    await comparison.runCommand('trace/diff', { left: pair.left, right: pair.right });
    const diff = await host('traceDiff');
    assert.deepEqual(lastShow(diff), { left: pair.left, right: pair.right });
    const d = (await diff.handle('diff/get', { left: pair.left, right: pair.right })) as TraceDiffLike;
    assert.equal(d.left.id, pair.left);
    assert.equal(d.right.taskId, pair.taskId);
    assert.ok(!d.differs.includes('task'));
    assert.ok(d.differs.includes('versions'));
    assert.deepEqual(d.versionChanges.map((v) => v.agent), [AGENT]);
    assert.notEqual(d.versionChanges[0]!.left!.prompt, d.versionChanges[0]!.right!.prompt);
    assert.ok(d.rows.length >= Math.max(d.left.steps, d.right.steps));
    assert.ok(d.rows.every((r) => !r.left || !r.right || r.left.node === r.right.node), 'paired rows are visits of the same node');
    assert.equal(d.rows[0]!.left?.node, d.rows[0]!.right?.node, 'both start the same way');
  });

  it('Compare Two Rollouts with { left, right } opens the panel on them, and checks its arguments', async () => {
    assert.ok(pair, 'the first test ran a comparison');
    const r = await vscode.commands.executeCommand<{ left: string; right: string }>('rolloutLab.compareRollouts', { left: pair.right, right: pair.left });
    assert.deepEqual(r, { left: pair.right, right: pair.left });
    const diff = await host('traceDiff');
    assert.deepEqual(lastShow(diff), { left: pair.right, right: pair.left });
    const d = (await diff.handle('diff/get', { left: pair.right, right: pair.left })) as TraceDiffLike;
    assert.equal(d.left.id, pair.right);
    // A rollout with itself: nothing differs.
    const same = (await diff.handle('diff/get', { left: pair.left, right: pair.left })) as TraceDiffLike;
    assert.deepEqual(same.differs, []);
    assert.equal(same.counts.same, same.rows.length);

    // From the Rollouts view's context menu with two rollouts selected (the menu passes the clicked item, then the selection).
    const item = (id: string, startTime: number): unknown => ({ kind: 'rollout', folder: workspaceDir(), rollout: { id, startTime } });
    const fromTree = await vscode.commands.executeCommand<{ left: string; right: string }>('rolloutLab.compareRollouts', item(pair.right, 2), [item(pair.right, 2), item(pair.left, 1)]);
    assert.deepEqual(fromTree, { left: pair.left, right: pair.right }, 'the older rollout on the left');
    assert.deepEqual(lastShow(diff), fromTree);

    await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.compareRollouts', { left: pair.left })), /invalid arguments for Compare Two Rollouts: right/);
    await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.compareRollouts', { left: pair.left, right: 'not-an-id' })), /right: a rollout id is 32 hex digits/);
    await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.compareRollouts', { left: pair.left, right: 'e'.repeat(32) })), /the right rollout e{32} is not in the store/);
    await assert.rejects(diff.handle('diff/get', { left: pair.left, right: 'e'.repeat(32) }), /the right rollout e{32} is not in this workspace's store/);
    await assert.rejects(diff.handle('diff/get', { left: pair.left, right: pair.left, extra: 1 }));
  });

  it('Diff a Rollout with the Previous Version pairs the same task under a prompt version and the one before it', async () => {
    assert.ok(pair, 'the first test ran a comparison');
    const diff = await host('traceDiff');
    const before = (await diff.handle('diff/get', { left: pair.left, right: pair.right })) as TraceDiffLike;
    const newer = before.versionChanges[0]!.right!.prompt!;
    const r = await vscode.commands.executeCommand<{ left: string; right: string }>('rolloutLab.diffRolloutWithPreviousPromptVersion', { agent: AGENT, version: newer });
    assert.ok(r, 'a pair was found');
    const d = (await diff.handle('diff/get', r)) as TraceDiffLike;
    assert.equal(d.versionChanges.find((v) => v.agent === AGENT)?.right?.prompt, newer);
    assert.equal(d.left.taskId, d.right.taskId);
    assert.deepEqual(lastShow(diff), r);
    await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.diffRolloutWithPreviousPromptVersion', { agent: AGENT, version: '0'.repeat(12) })), /not in the store/);
  });
});
