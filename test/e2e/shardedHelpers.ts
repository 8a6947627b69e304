import assert from 'node:assert/strict';
import { Lab } from '../../src/core/lab/lab';
import { shardedKeys } from '../../src/core/lab/batch';
import { TraceStore } from '../../src/core/store/traceStore';
import type { RolloutRecord } from '../../src/core/store/types';

/*
 * What the tests of runs split over workers (local, Slurm, Kubernetes,
 * SkyPilot) read back from the store, as another process would.
 */

/** Every attempt of a run. */
export async function storedAttempts(ws: string, runId: string): Promise<RolloutRecord[]> {
  const store = await TraceStore.open(ws, { readOnly: true });
  try {
    return store.listRollouts({ runId, limit: Number.MAX_SAFE_INTEGER }).rollouts;
  } finally {
    await store.close();
  }
}

export async function storedRunStatus(ws: string, runId: string): Promise<string | undefined> {
  const store = await TraceStore.open(ws, { readOnly: true });
  try {
    return store.getRun(runId)?.status;
  } finally {
    await store.close();
  }
}

/**
 * The slice of every key (`task#sample`) of a run's plan, as its coordinator and
 * workers compute it (training split, the run's limit, seed and samples). Opens
 * the workspace's lab, so call it while no run writes to it.
 */
export async function plannedSlices(ws: string, plan: { limit: number; seed: number; samples: number; count: number }): Promise<Map<string, number>> {
  const lab = await Lab.open({ workspace: ws, env: {} });
  try {
    const tasks = lab.selectTasks(await lab.loadDataset(), { split: 'train', limit: plan.limit, seed: plan.seed });
    return new Map(shardedKeys(tasks.map((t) => t.id), plan.samples, plan.count).map(({ key, shard }) => [key, shard]));
  } finally {
    await lab.close();
  }
}

/** Per key (`task#sample`), the run's current attempts (those no later attempt superseded). */
export function currentByKey(all: readonly RolloutRecord[]): Map<string, RolloutRecord[]> {
  const by = new Map<string, RolloutRecord[]>();
  for (const r of all.filter((x) => !x.supersededBy)) {
    const k = `${r.taskId}#${r.sample}`;
    by.set(k, [...(by.get(k) ?? []), r]);
  }
  return by;
}

/** Asserts every planned key has exactly one current attempt, a success; returns it per key. */
export function assertOneCurrentEach(all: readonly RolloutRecord[], planned: number, what: string): Map<string, RolloutRecord> {
  const by = currentByKey(all);
  assert.equal(by.size, planned, `${what}: every planned key has a current attempt`);
  const one = new Map<string, RolloutRecord>();
  for (const [k, list] of by) {
    assert.equal(list.length, 1, `${what}: ${k} has ${list.length} current attempts (${list.map((r) => `${r.id} ${r.status}`).join(', ')})`);
    assert.equal(list[0]!.status, 'succeeded', `${what}: ${k} ${list[0]!.error ?? ''}`);
    one.set(k, list[0]!);
  }
  return one;
}

/** Numbers rounded to 1e-9, so metrics compare equal whatever order their means added the rollouts in. */
export function rounded(v: unknown): unknown {
  if (typeof v === 'number') return Math.round(v * 1e9) / 1e9;
  if (Array.isArray(v)) return v.map(rounded);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, rounded(x)]));
  return v;
}
