import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs, { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts } from '../../../src/core/rollout/runner';
import { RunStoreFailure } from '../../../src/core/rollout/storeGuard';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

/**
 * The disk fills up at the file-system boundary: from the `after`-th write on,
 * every write into the store's journals fails as a full disk does (errno
 * ENOSPC from write(2)); the other writes of the process are untouched.
 */
function fillDiskAfter(after: number, storeDir: string): () => void {
  const real = fs.writeSync;
  let journalWrites = 0;
  const full = ((fd: number, ...rest: unknown[]) => {
    const path = fs.readlinkSync(`/proc/self/fd/${fd}`);
    if (path.startsWith(storeDir + sep) && ++journalWrites > after) {
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { errno: -28, code: 'ENOSPC', syscall: 'write' });
    }
    return (real as (...a: unknown[]) => number)(fd, ...rest);
  }) as typeof fs.writeSync;
  fs.writeSync = full;
  return () => {
    fs.writeSync = real;
  };
}

test('a full disk during a run stops it with the store\'s own error (file, ENOSPC, how to resume), no LangChain handler noise, and the run resumes', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-store-full-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  const printed: string[] = [];
  const realError = console.error;
  const realWarn = console.warn;
  console.error = (...a: unknown[]) => void printed.push(a.map(String).join(' '));
  console.warn = console.error;
  let runId = '';
  try {
    const lab = await Lab.open({ workspace: dir, env: {} });
    const ds = await lab.loadDataset();
    const tasks = lab.selectTasks(ds, { split: 'train', limit: 6, seed: 2 });
    const env = await lab.environment(ds.tasks);
    const restore = fillDiskAfter(40, lab.store.dir);
    try {
      await assert.rejects(
        runRollouts(env, { tasks, samples: 1, concurrency: 2, params: {}, seed: 2, onStart: (s) => void (runId = s.runId) }),
        (e: Error) => {
          assert.ok(e instanceof RunStoreFailure, e.stack);
          assert.match(e.message, /^the store could not write \S+journal\S*: disk full \(ENOSPC\) — free space; the run is resumable with rollout-lab run --resume run-\S+$/);
          assert.ok(e.message.endsWith(runId));
          return true;
        },
      );
    } finally {
      restore();
    }
    assert.deepEqual(printed.filter((l) => /Error in handler|LangChainTracer/.test(l)), [], 'LangChain printed nothing of its own');
    await lab.close();

    // Space is back: the run is resumed and every task ends up done.
    const again = await Lab.open({ workspace: dir, env: {} });
    try {
      const env2 = await again.environment(ds.tasks);
      const r = await runRollouts(env2, { tasks, samples: 1, concurrency: 2, params: {}, seed: 2, resumeRunId: runId });
      const succeeded = new Set(r.rollouts.filter((x) => x.status === 'succeeded').map((x) => x.taskId));
      assert.equal(succeeded.size, tasks.length, JSON.stringify(r.rollouts.map((x) => [x.taskId, x.status])));
    } finally {
      await again.close();
    }
  } finally {
    console.error = realError;
    console.warn = realWarn;
    rmSync(dir, { recursive: true, force: true });
  }
});
