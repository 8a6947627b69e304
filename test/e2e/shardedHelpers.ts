import assert from 'node:assert/strict';
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
