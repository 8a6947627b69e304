import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { addRolloutTasksToDataset } from '../../../src/core/lab/addToDataset';
import { taskFromRow } from '../../../src/core/data/taskFormats';
import type { Task } from '../../../src/core/data/tasks';
import { TraceStore } from '../../../src/core/store/traceStore';
import { makeRollout, makeRun, tempWorkspace } from '../store/helpers/storeFixtures';

const TASKS: Task[] = [
  { id: 'q1', goal: 'Does X help?', context: 'Abstract one.', expectedDecision: 'yes', meta: { year: 2001 } },
  { id: 'q2', goal: 'Does Y harm?', context: 'Abstract two.', expectedDecision: 'no' },
];

describe('adding rollouts’ tasks to a dataset', () => {
  let ws: ReturnType<typeof tempWorkspace>;
  let store: TraceStore;
  let ids: string[];
  const asked: Array<string | undefined> = [];
  const lab = (): Parameters<typeof addRolloutTasksToDataset>[0] => ({
    store,
    loadDataset: async (arg) => {
      asked.push(arg);
      return { file: 'pubmedqa.jsonl', tasks: arg === 'other' ? [] : TASKS, trainFraction: 0.8 };
    },
  });
  beforeEach(async () => {
    ws = tempWorkspace();
    store = await TraceStore.open(ws.dir);
    store.startRun(makeRun('run-1', { params: { dataset: 'other' } }));
    ids = [];
    for (const taskId of ['q1', 'q1', 'q2', 'gone']) {
      const r = makeRollout({ runId: 'run-1', taskId });
      store.startRollout(r);
      store.finishRollout(r);
      ids.push(r.id);
    }
    asked.length = 0;
  });
  afterEach(async () => {
    await store.close();
    ws.cleanup();
  });

  it('appends each task once in the lab’s task format, after what the file has, and says what it skipped', async () => {
    const file = join(ws.dir, 'picked.jsonl');
    writeFileSync(file, JSON.stringify({ id: 'q2', goal: 'already here', context: 'c' })); // no newline at the end
    const r = await addRolloutTasksToDataset(lab(), ids, file);
    assert.deepEqual({ added: r.added, duplicates: r.duplicates, missing: r.missing }, { added: 1, duplicates: 2, missing: [ids[3]] });
    assert.deepEqual(asked, ['other', undefined], 'the run’s dataset first, then the lab’s default');
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    assert.equal(lines.length, 2);
    const row = JSON.parse(lines[1]!) as unknown;
    const back = taskFromRow(row);
    assert.ok(back.ok);
    assert.deepEqual(back.task, TASKS[0], 'reads back as the same task');
    const again = await addRolloutTasksToDataset(lab(), ids, file);
    assert.equal(again.added, 0);
  });

  it('refuses a file that is not JSON Lines, and names a broken line', async () => {
    await assert.rejects(addRolloutTasksToDataset(lab(), ids, join(ws.dir, 'tasks.json')), /must be a JSON Lines file/);
    const bad = join(ws.dir, 'bad.jsonl');
    writeFileSync(bad, '{"id":"a"}\nnot json\n');
    await assert.rejects(addRolloutTasksToDataset(lab(), ids, bad), /bad\.jsonl:2 is not JSON/);
  });
});
