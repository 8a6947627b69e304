import { existsSync, readFileSync } from 'node:fs';
import { appendFile, mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { DatasetError, UsageError } from '../errors';
import type { DatasetSelection } from './lab';
import type { TraceStore } from '../store/traceStore';
import type { Task } from '../data/tasks';

export interface AddToDatasetResult {
  file: string;
  /** Tasks appended. */
  added: number;
  /** Tasks the file already had (by id), or that several selected rollouts share. */
  duplicates: number;
  /** Rollouts whose task is in none of the lab's datasets any more. */
  missing: string[];
}

/** What the dataset lookup needs of a lab: its datasets by the name a run recorded (undefined: the default one). */
export interface DatasetSource {
  store: TraceStore;
  loadDataset(datasetArg?: string): Promise<DatasetSelection>;
}

/**
 * Appends the tasks of some stored rollouts to a dataset file in the lab's
 * JSON Lines task format ({"id", "goal", "context", "expected_decision", ...}),
 * skipping ids the file already has. Each rollout's task is looked up in the
 * dataset its run recorded, then in the lab's default dataset.
 */
export async function addRolloutTasksToDataset(lab: DatasetSource, rolloutIds: readonly string[], file: string): Promise<AddToDatasetResult> {
  const target = resolve(file);
  if (!/\.(jsonl|ndjson)$/i.test(target)) throw new UsageError(`${target}: a dataset to add tasks to must be a JSON Lines file (.jsonl), one task per line`);
  const have = existingIds(target);
  const datasets = new Map<string, Promise<Map<string, Task>>>();
  const tasksOf = (arg: string | undefined): Promise<Map<string, Task>> => {
    const key = arg ?? '';
    let p = datasets.get(key);
    if (!p) {
      p = lab.loadDataset(arg).then((ds) => new Map(ds.tasks.map((t) => [t.id, t])));
      datasets.set(key, p);
    }
    return p;
  };
  const lines: string[] = [];
  const missing: string[] = [];
  let duplicates = 0;
  for (const id of rolloutIds) {
    const rollout = lab.store.getRollout(id);
    if (!rollout) throw new UsageError(`rollout ${id} is not in this workspace's trace store`);
    if (have.has(rollout.taskId)) {
      duplicates++;
      continue;
    }
    const recorded = lab.store.getRun(rollout.runId)?.params['dataset'];
    let task = typeof recorded === 'string' && recorded ? (await tasksOf(recorded).catch(() => new Map<string, Task>())).get(rollout.taskId) : undefined;
    task ??= (await tasksOf(undefined)).get(rollout.taskId);
    if (!task) {
      missing.push(id);
      continue;
    }
    have.add(task.id);
    lines.push(JSON.stringify(taskRow(task)));
  }
  if (lines.length) {
    await mkdir(dirname(target), { recursive: true });
    const needsNewline = existsSync(target) && !/\n\s*$|^\s*$/.test(readFileSync(target, 'utf8'));
    await appendFile(target, `${needsNewline ? '\n' : ''}${lines.join('\n')}\n`, 'utf8');
  }
  return { file: target, added: lines.length, duplicates, missing };
}

/** A task as a row of the lab's JSONL format (what taskFromRow reads back). */
function taskRow(t: Task): Record<string, unknown> {
  const row: Record<string, unknown> = { id: t.id, goal: t.goal, context: t.context, expected_decision: t.expectedDecision };
  if (t.expected !== undefined) row['expected'] = t.expected;
  for (const [k, v] of Object.entries(t.meta ?? {})) if (!(k in row)) row[k] = v;
  return row;
}

/** Ids of the tasks a dataset file has (none when it does not exist yet). */
function existingIds(file: string): Set<string> {
  const ids = new Set<string>();
  if (!existsSync(file)) return ids;
  for (const [i, line] of readFileSync(file, 'utf8').split('\n').entries()) {
    if (!line.trim()) continue;
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch {
      throw new DatasetError(`${file}:${i + 1} is not JSON; fix the line or pick another file to add tasks to`, file);
    }
    const id = (row as { id?: unknown } | null)?.id;
    if (typeof id === 'string' || typeof id === 'number') ids.add(String(id));
  }
  return ids;
}
