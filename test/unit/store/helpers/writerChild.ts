/**
 * A separate writing process for the crash and concurrency tests.
 *   loop  <workspace> <runId> <spans>        write rollouts until killed, printing "finished <id>" after each
 *   hang  <workspace> <runId> <spans> <n>    finish n rollouts, start one more with half its spans, print "ready", wait to be killed
 *   write <workspace> <runId> <spans> <n>    finish n rollouts, close the store, exit
 *   watch <workspace> <rolloutId>            read-only: refresh until the rollout is finished, print its span count
 */
import { TraceStore } from '../../../../src/core/store/traceStore';
import { makeRollout, makeRun, makeSpans } from './storeFixtures';

async function main(): Promise<void> {
  const [mode, workspace, a, b, c] = process.argv.slice(2);
  if (mode === 'watch') {
    const store = await TraceStore.open(workspace!, { readOnly: true });
    for (;;) {
      await store.refresh();
      const r = store.getRollout(a!);
      if (r && r.status !== 'running') {
        process.stdout.write(`seen ${r.status} ${store.getSpans(a!).length}\n`);
        await store.close();
        return;
      }
      await new Promise((res) => setTimeout(res, 20));
    }
  }
  const runId = a!;
  const spans = Number(b);
  const store = await TraceStore.open(workspace!, { journalRotateBytes: 256 << 10, checkpointEvery: 7 });
  if (!store.getRun(runId)) store.startRun(makeRun(runId));
  const one = (i: number, finish: boolean, upTo = spans): string => {
    const r = makeRollout({ runId, taskId: `t${i}`, sample: process.pid, status: 'running', endTime: null, startTime: Date.now() });
    store.startRollout(r);
    for (const s of makeSpans(r.id, spans).slice(0, upTo)) store.writeSpan(s);
    if (finish) store.finishRollout({ ...r, status: 'succeeded', endTime: Date.now(), finalReward: (i % 10) / 10 });
    return r.id;
  };
  if (mode === 'loop') {
    for (let i = 0; ; i++) {
      const r = makeRollout({ runId, taskId: `t${i}`, sample: i, status: 'running', endTime: null, startTime: Date.now() });
      store.startRollout(r);
      // Yield at a random span, so the parent's kill can land between any two frames.
      const pause = Math.floor(Math.random() * spans);
      for (const [k, s] of makeSpans(r.id, spans).entries()) {
        if (k === pause) await new Promise((res) => setImmediate(res));
        store.writeSpan(s);
      }
      store.finishRollout({ ...r, status: 'succeeded', endTime: Date.now(), finalReward: (i % 10) / 10 });
      process.stdout.write(`finished ${r.id}\n`);
    }
  }
  const n = Number(c);
  for (let i = 0; i < n; i++) process.stdout.write(`finished ${one(i, true)}\n`);
  if (mode === 'hang') {
    const id = one(n, false, Math.floor(spans / 2));
    process.stdout.write(`ready ${id}\n`);
    setInterval(() => undefined, 1000);
    return;
  }
  store.updateRun(runId, { status: 'done', endTime: Date.now() });
  await store.close();
}

void main();
