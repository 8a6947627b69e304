import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { JobExit, JobHandle } from '../../../../src/core/train/jobs/launcher';
import { launcherFor } from '../../../../src/core/train/jobs/launchers';
import { allCommandLines, assertNotInFiles, Lines, makeJob, PYTHON, SECRET, SECRET_NAME, SECRET_SHA256, tempDir } from './helpers';

const root = tempDir('local-launcher');
after(() => rmSync(root, { recursive: true, force: true }));

const target = { kind: 'local', python: PYTHON };
const launcher = launcherFor('local');

function expectedLines(code: number): string[] {
  return [
    'job: start',
    `job: argv ${JSON.stringify([PYTHON, 'job.py', String(code)])}`,
    `job: secret sha256 ${SECRET_SHA256}`,
    'job: trainer on PYTHONPATH True',
    'job: to stderr',
    'job: progress 50%',
    'job: progress 100%',
    `@rollout-trainer {"event":"done","result":{"code":${code}}}`,
    'job: end',
  ];
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

test('local: launch, follow every line to the exit, fetch out/; the plan is the argv that ran; the secret is in the env and in no file', async () => {
  const job = makeJob(root, { target, command: ['python3', 'job.py', '0'], secrets: { [SECRET_NAME]: SECRET } });
  const plan = launcher.plan(job);
  assert.equal(plan.steps.length, 1);
  assert.deepEqual(plan.steps[0]!.argv, [PYTHON, 'job.py', '0'], 'python3 is replaced by the target\'s Python');
  assert.equal(plan.steps[0]!.cwd, job.bundleDir);
  assert.deepEqual(plan.steps[0]!.env, ['PYTHONPATH', 'PYTHONUNBUFFERED', SECRET_NAME]);
  assert.ok(!JSON.stringify(plan).includes(SECRET));

  const handle = await launcher.launch(job);
  assert.equal(handle.target, 'local');
  const lines = new Lines();
  const exit = await launcher.follow(handle, { onLine: lines.push }, job);
  assert.deepEqual(exit, { state: 'succeeded', exitCode: 0 });
  assert.deepEqual(lines.all, expectedLines(0), 'stdout and stderr, \\r-split progress, a last line without a newline');
  assert.equal(lines.all[1], `job: argv ${JSON.stringify(plan.steps[0]!.argv)}`, 'the dry run is exactly what ran');
  assert.equal(readFileSync(path.join(job.jobDir, 'exit-code'), 'utf8').trim(), '0');

  const dest = path.join(job.jobDir, 'out');
  await launcher.fetchOutputs(handle, job, dest);
  assert.deepEqual(JSON.parse(readFileSync(path.join(dest, 'result.json'), 'utf8')), { status: 'succeeded', code: 0 });
  assertNotInFiles(SECRET, job.jobDir, job.bundleDir);

  const fwd = await launcher.forwardPort(handle, job, 43123);
  assert.equal(fwd.url, 'http://127.0.0.1:43123/v1');
  fwd.close();
});

test('local: a failing job is failed with its exit status; a reattach (the handle through JSON) replays the log and ends the same', async () => {
  const job = makeJob(root, { target, command: ['python3', 'job.py', '3'] });
  const handle = await launcher.launch(job);
  const first = new Lines();
  const exit = await launcher.follow(handle, { onLine: first.push }, job);
  assert.deepEqual(exit, { state: 'failed', exitCode: 3 });
  assert.ok(first.all.includes('job: secret sha256 none'));

  const revived = JSON.parse(JSON.stringify(handle)) as JobHandle;
  const again = new Lines();
  assert.deepEqual(await launcherFor('local').follow(revived, { onLine: again.push }, job), { state: 'failed', exitCode: 3 });
  assert.deepEqual(again.all, first.all);
  await launcher.fetchOutputs(handle, job, path.join(job.jobDir, 'out'));
  assert.equal(JSON.parse(readFileSync(path.join(job.jobDir, 'out', 'result.json'), 'utf8')).status, 'failed');
});

test('local: an aborted follow stops following, not the job; following again picks it up from the start', async () => {
  const job = makeJob(root, { target, command: ['python3', 'job.py', '0', '--wait'], secrets: { [SECRET_NAME]: SECRET } });
  const handle = (await launcher.launch(job)) as Extract<JobHandle, { target: 'local' }>;
  const ac = new AbortController();
  const lines = new Lines();
  const following = launcher.follow(handle, { onLine: lines.push, signal: ac.signal }, job);
  await lines.waitFor((l) => l === 'job: progress 100%');
  // While it runs: the secret is in no process's command line.
  assert.ok(allCommandLines().every((c) => !c.includes(SECRET)), 'the secret is in no argv');
  ac.abort();
  assert.deepEqual(await following, { state: 'cancelled', exitCode: null });
  assert.ok(groupAlive(handle.pid), 'the job still runs');

  writeFileSync(path.join(job.bundleDir, 'go'), '');
  const again = new Lines();
  assert.deepEqual(await launcher.follow(handle, { onLine: again.push }, job), { state: 'succeeded', exitCode: 0 });
  assert.deepEqual(again.all, [...expectedLines(0).slice(0, 7).map((l) => l.replace('"job.py","0"', '"job.py","0","--wait"')), 'job: go', ...expectedLines(0).slice(7)]);
  assertNotInFiles(SECRET, job.jobDir, job.bundleDir);
});

test('local: cancel stops the whole process group; its follower sees the TERM status', async () => {
  const job = makeJob(root, { target, command: ['python3', 'job.py', '0', '--sleep'] });
  const handle = (await launcher.launch(job)) as Extract<JobHandle, { target: 'local' }>;
  const lines = new Lines();
  const following: Promise<JobExit> = launcher.follow(handle, { onLine: lines.push }, job);
  await lines.waitFor((l) => l === 'job: progress 100%');
  await launcher.cancel(handle, job);
  assert.deepEqual(await following, { state: 'failed', exitCode: 128 + 15 });
  assert.ok(!groupAlive(handle.pid), 'nothing of the job runs');
  await launcher.cancel(handle, job);
});

test('local: a job killed outright (no exit status) is failed with the reason; a missing bundle is an error', async () => {
  const job = makeJob(root, { target, command: ['python3', 'job.py', '0', '--sleep'] });
  const handle = (await launcher.launch(job)) as Extract<JobHandle, { target: 'local' }>;
  const lines = new Lines();
  const following = launcher.follow(handle, { onLine: lines.push }, job);
  await lines.waitFor((l) => l === 'job: start');
  process.kill(-handle.pid, 'SIGKILL');
  const exit = await following;
  assert.equal(exit.state, 'failed');
  assert.equal(exit.exitCode, null);
  assert.match(exit.detail ?? '', /ended without an exit status/);
  assert.ok(!existsSync(handle.exitFile));

  const gone = makeJob(root, { target });
  rmSync(gone.bundleDir, { recursive: true, force: true });
  await assert.rejects(launcher.launch(gone), /the job bundle .* does not exist/);
});
