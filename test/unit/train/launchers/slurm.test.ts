import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';
import { TargetSchema } from '../../../../src/core/config/trainingSchema';
import type { JobExit, JobHandle, PreparedJob } from '../../../../src/core/train/jobs/launcher';
import { launcherFor, sbatchScript, slurmExit, slurmJobDir, type SlurmReport } from '../../../../src/core/train/jobs/launchers';
import { SCRIPT_FILE } from '../../../../src/core/train/jobs/launchers/slurm';
import { freePort } from '../../../../src/core/train/jobs/launchers/net';
import { parseTrainerEvent } from '../../../../src/core/train/jobs/trainerEvents';
import { readRecord, recordingShim } from '../../../fakes/commandLineTools';
import { allCommandLines, Lines, makeJob, PYTHON, QWEN2_HYPERPARAMETERS, QWEN2_MODEL, SECRET, SECRET_NAME, SECRET_SHA256, tempDir, TRAINER_IMPORTS, which } from './helpers';
import { assertNotInRegularFiles as assertNotInFiles, slurmSkip, startSlurm, type SlurmCluster } from './slurmCluster';
import { SSHD, startSshd } from './sshd';

/**
 * The Slurm launcher: its job script and plan without a cluster, its reading of Slurm's end states from what
 * sacct and scontrol print, and end to end against a real one-node Slurm this file starts (scripts/startSlurm.sh):
 * jobs submitted with the system's sbatch (through a recording shim of sh, so the commands can be compared with the
 * plan), followed through squeue and their output file, cancelled with scancel, one ended by its time limit.
 */

const REPO = path.resolve(__dirname, '../../../..');
const GOLDEN_SFT = path.join(REPO, 'test/fixtures/train/golden/sft.jsonl');
const TRAINER_PYTHON = path.join(REPO, '.venv-trainer/bin/python');

const launcher = launcherFor('slurm');
const skip = slurmSkip('the Slurm launcher tests');
let cluster: SlurmCluster | null = null;
let root = '';
let target: Record<string, unknown> = {};
/** The job that runs into its time limit: started first, checked last (it takes Slurm a minute or more). */
let timeLimited: { job: PreparedJob; handle: Extract<JobHandle, { target: 'slurm' }>; lines: Lines; exit: Promise<JobExit> } | null = null;

/** A job that asks for no GPU (the test cluster has none) and one CPU. */
function cpuJob(o: Parameters<typeof makeJob>[1]): PreparedJob {
  return makeJob(root, { resources: { gpus: 0, cpus: 1 }, ...o });
}

function expectedLines(args: string[], extra: string[] = []): string[] {
  return [
    'job: start',
    `job: argv ${JSON.stringify([PYTHON, 'job.py', ...args])}`,
    `job: secret sha256 ${SECRET_SHA256}`,
    'job: trainer on PYTHONPATH True',
    'job: to stderr',
    'job: progress 50%',
    'job: progress 100%',
    ...extra,
    `@rollout-trainer {"event":"done","result":{"code":${args[0]}}}`,
    'job: end',
  ];
}

/** The job's own output: the follower's "[slurm] job N: STATE" lines left out. */
function jobLines(lines: Lines): string[] {
  return lines.all.filter((l) => !l.startsWith('[slurm] '));
}

function scontrolState(jobId: string): string {
  const r = spawnSync('scontrol', ['-o', 'show', 'job', jobId], { encoding: 'utf8' });
  return /JobState=(\S+)/.exec(r.stdout)?.[1] ?? `none (${r.stderr.trim()})`;
}

before(async () => {
  if (skip) return;
  cluster = startSlurm('slurm-launcher');
  cluster.use();
  root = tempDir('slurm-launcher');
  target = { kind: 'slurm', python: PYTHON, gpus: 0, cpus: 1, pollSeconds: 1 };
  const bin = path.join(root, 'bin');
  recordingShim(bin, 'sh', which('sh')!);
  process.env.PATH = `${bin}${path.delimiter}${process.env.PATH}`;
  process.env.FAKE_RECORD = path.join(root, 'record.jsonl');
  const job = cpuJob({ id: 'time-limited', target: { ...target, timeLimit: '1' }, command: ['python3', 'job.py', '0', '--sleep'] });
  const handle = (await launcher.launch(job)) as Extract<JobHandle, { target: 'slurm' }>;
  const lines = new Lines();
  timeLimited = { job, handle, lines, exit: launcher.follow(handle, { onLine: lines.push }, job) };
});

after(() => {
  cluster?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
});

test('slurm: the job script carries the resources, the setup lines and the trainer; the plan is its argv; no secret in either', () => {
  const dir = tempDir('slurm-plan');
  try {
    const t = {
      kind: 'slurm',
      partition: 'gpu',
      account: 'proj-42',
      qos: 'normal',
      timeLimit: '4:00:00',
      gpus: 2,
      gpuType: 'a100',
      cpus: 8,
      memoryGb: 31.5,
      setup: ['module load cuda/12.4', 'source ~/venvs/trainer/bin/activate'],
      python: 'python',
      sbatchOptions: ['--constraint=nvlink', '--exclusive'],
    };
    const job = makeJob(dir, { id: 'sft-p-1', target: t, secrets: { B_TOKEN: 'b-value', A_TOKEN: 'a-value' }, resources: { gpus: 2, gpuType: 'a100', cpus: 8, memoryGb: 31.5 } });
    const script = sbatchScript(job);
    assert.equal(
      script,
      [
        '#!/bin/bash',
        '# Rollout Lab job sft-p-1, submitted with: sbatch --parsable rollout-lab.sbatch (in the job folder)',
        '#SBATCH --job-name=sft-p-1',
        '#SBATCH --output=job.log',
        '#SBATCH --no-requeue',
        '#SBATCH --nodes=1',
        '#SBATCH --ntasks=1',
        '#SBATCH --partition=gpu',
        '#SBATCH --account=proj-42',
        '#SBATCH --qos=normal',
        '#SBATCH --time=4:00:00',
        '#SBATCH --gres=gpu:a100:2',
        '#SBATCH --cpus-per-task=8',
        '#SBATCH --mem=32256M',
        '#SBATCH --constraint=nvlink',
        '#SBATCH --exclusive',
        '',
        '# The secrets: NAME=VALUE lines the submit step wrote (0600), into the environment; the file goes at once.',
        'if [ -f .rollout-lab-secrets ]; then',
        '  while IFS= read -r kv; do [ -n "$kv" ] && export "$kv"; done < .rollout-lab-secrets',
        '  rm -f .rollout-lab-secrets',
        'fi',
        '',
        '# The target\'s setup lines: the first that fails ends the job with its status.',
        'set -e',
        'module load cuda/12.4',
        'source ~/venvs/trainer/bin/activate',
        'set +e',
        '',
        'export PYTHONPATH="$PWD/python-trainer${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1',
        `'python' 'job.py' '0'`,
        'c=$?',
        'echo "$c" > exit-code.tmp && mv exit-code.tmp exit-code',
        'exit "$c"',
        '',
      ].join('\n'),
    );
    const plan = launcher.plan(job);
    assert.deepEqual(plan.files, [{ path: path.join(job.bundleDir, SCRIPT_FILE), content: script }]);
    // No host, no remoteDir: the job runs in its bundle folder (the shared filesystem), submitted here.
    assert.equal(slurmJobDir(job), job.bundleDir);
    assert.equal(plan.steps.length, 1);
    const [submit] = plan.steps;
    assert.deepEqual(submit!.argv.slice(0, 2), ['sh', '-c']);
    assert.deepEqual(submit!.argv.slice(3), ['rollout-lab-submit', job.bundleDir]);
    assert.match(submit!.argv[2]!, /sbatch --parsable rollout-lab\.sbatch/);
    assert.equal(submit!.stdin, 'A_TOKEN=***\nB_TOKEN=***\n', 'the secrets go on stdin, masked in the plan');
    assert.ok(!JSON.stringify(plan).includes('a-value') && !JSON.stringify(plan).includes('b-value'), 'no secret value in the plan or the script');

    // Through a login node: the bundle as a tar stream over ssh, then the same submit script, every argument quoted.
    const remote = makeJob(dir, { id: 'sft-p-2', target: { ...t, host: 'me@login.hpc', port: 2222, identityFile: '~/.ssh/id', remoteDir: '~/jobs/' } });
    const [pack, unpack, rsubmit] = launcher.plan(remote).steps;
    assert.deepEqual(pack!.argv, ['tar', '-C', remote.bundleDir, '-czf', '-', '.']);
    const ssh = ['ssh', '-o', 'BatchMode=yes', '-o', 'ServerAliveInterval=15', '-o', 'ServerAliveCountMax=4', '-p', '2222', '-i', '~/.ssh/id', 'me@login.hpc', '--'];
    assert.deepEqual(unpack!.argv.slice(0, -1), ssh);
    assert.ok(unpack!.argv.at(-1)!.endsWith(`'rollout-lab-unpack' 'jobs/sft-p-2'`), 'a leading ~/ is the login folder');
    assert.deepEqual(rsubmit!.argv.slice(0, -1), ssh);
    assert.ok(rsubmit!.argv.at(-1)!.startsWith(`'sh' '-c' 'cd "$1" || exit 97`));
    assert.ok(rsubmit!.argv.at(-1)!.endsWith(`'rollout-lab-submit' 'jobs/sft-p-2'`));
    // No GPUs asked for: no --gres; no time limit: the partition's.
    const cpu = sbatchScript(makeJob(dir, { target: { kind: 'slurm' }, resources: { gpus: 0 } }));
    assert.ok(!cpu.includes('--gres') && !cpu.includes('--time') && !cpu.includes('--partition'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('slurm: bad targets are refused with what to fix', () => {
  const bad = (t: Record<string, unknown>): string => {
    const r = TargetSchema.safeParse({ kind: 'slurm', ...t });
    assert.ok(!r.success, JSON.stringify(t));
    return r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
  };
  assert.match(bad({ timeLimit: '4h' }), /timeLimit: a Slurm time: MINUTES, MM:SS, HH:MM:SS/);
  assert.match(bad({ partition: 'gpu --account=other' }), /partition: letters, digits/);
  assert.match(bad({ account: 'a\nb' }), /account: letters, digits/);
  assert.match(bad({ setup: ['module load cuda\nrm -rf ~'] }), /setup\.0: one shell line each/);
  assert.match(bad({ sbatchOptions: ['-p gpu'] }), /sbatchOptions\.0: an sbatch long option/);
  assert.match(bad({ gpuType: 'a100:2' }), /gpuType: a GRES type name/);
  assert.match(bad({ host: '-oProxyCommand=x' }), /host: a host, not an ssh option/);
  assert.match(bad({ pollSeconds: 0 }), /pollSeconds/);
  const dir = tempDir('slurm-bad');
  try {
    assert.throws(() => launcher.plan(makeJob(dir, { target: { kind: 'slurm', sbatchOptions: ['--output=/tmp/x'] } })), /sbatchOptions may not set --output: the job writes job\.log in its folder/);
    assert.throws(() => launcher.plan(makeJob(dir, { target: { kind: 'slurm', sbatchOptions: ['--time=10'] } })), /may not set --time: use the target's "timeLimit"/);
    assert.throws(() => launcher.plan(makeJob(dir, { target: { kind: 'slurm', remoteDir: 'jobs' } })), /remoteDir "jobs" must be an absolute folder when sbatch runs on this machine/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('slurm: how a job ended, from what sacct and scontrol say (Slurm ends are failures with their reason; a forgotten job is lost)', () => {
  const h = { jobId: '17', dir: '/shared/jobs/x', host: null };
  const t = { timeLimit: '0:30:00', memoryGb: 16 };
  const report = (o: Partial<SlurmReport>): SlurmReport => ({ queue: '', sacct: 'Slurm accounting storage is disabled', scontrol: '', exit: null, cancelledHere: false, ...o });
  const sc = (state: string, reason = 'None', code = '0:0'): string => `JobId=17 JobName=x JobState=${state} Reason=${reason} Dependency=(null) ExitCode=${code} TimeLimit=00:30:00 NodeList=node7`;
  assert.deepEqual(slurmExit(report({ scontrol: sc('COMPLETED'), exit: 0 }), h, t), { state: 'succeeded', exitCode: 0 });
  assert.deepEqual(slurmExit(report({ scontrol: sc('FAILED', 'NonZeroExitCode', '3:0'), exit: 3 }), h, t), { state: 'failed', exitCode: 3 });
  assert.match(slurmExit(report({ scontrol: sc('FAILED', 'NonZeroExitCode', '1:0') }), h, t).detail!, /before the trainer's exit status was written: a setup line failed/);
  assert.deepEqual(slurmExit(report({ scontrol: sc('TIMEOUT', 'TimeLimit', '0:15') }), h, t), {
    state: 'failed',
    exitCode: 143,
    detail: 'Slurm ended the job: time limit (00:30:00) reached — raise the target\'s "timeLimit" (job 17, reason TimeLimit)',
  });
  // sacct, where the cluster keeps accounting, says who cancelled.
  assert.equal(slurmExit(report({ sacct: 'CANCELLED by 1000|0:15|None', scontrol: sc('CANCELLED') }), h, t).detail, 'Slurm ended the job: cancelled outside Rollout Lab (scancel by user id 1000) (job 17)');
  assert.deepEqual(slurmExit(report({ scontrol: sc('CANCELLED'), cancelledHere: true }), h, t), { state: 'cancelled', exitCode: 0, detail: 'cancelled by Rollout Lab (scancel 17)' });
  assert.match(slurmExit(report({ sacct: 'PREEMPTED|0:15|None' }), h, t).detail!, /^Slurm ended the job: preempted by another job/);
  assert.match(slurmExit(report({ scontrol: sc('NODE_FAIL', 'NodeDown') }), h, t).detail!, /^Slurm ended the job: its node failed \(node7\) \(job 17, reason NodeDown\)/);
  assert.match(slurmExit(report({ sacct: 'OUT_OF_MEMORY|0:125|None' }), h, t).detail!, /^Slurm ended the job: out of memory \(it asked for 16 GB\) — raise the target's "memoryGb"/);
  assert.match(slurmExit(report({ queue: 'BOOT_FAIL|None|' }), h, t).detail!, /^Slurm ended the job: its node failed to boot/);
  // Forgotten by Slurm (no accounting, MinJobAge passed): the exit status the job script wrote, else lost.
  assert.deepEqual(slurmExit(report({ scontrol: 'slurm_load_jobs error: Invalid job id specified', exit: 0 }), h, t), { state: 'succeeded', exitCode: 0 });
  const lost = slurmExit(report({ scontrol: 'slurm_load_jobs error: Invalid job id specified' }), h, t);
  assert.equal(lost.state, 'failed');
  assert.match(lost.detail!, /^the job is lost: Slurm on this machine knows no job 17 any more .* left no exit status in \/shared\/jobs\/x/);
});

test('slurm: a job submitted with sbatch runs on the cluster with the secret in its environment only; its log comes back once; out/ is fetched; a reattach replays it', { skip }, async () => {
  const job = cpuJob({ id: 'runs', target, command: ['python3', 'job.py', '0', '--wait'], secrets: { [SECRET_NAME]: SECRET } });
  const before = readRecord(process.env.FAKE_RECORD!).length;
  const plan = launcher.plan(job);
  const handle = (await launcher.launch(job)) as Extract<JobHandle, { target: 'slurm' }>;
  assert.match(handle.jobId, /^\d+$/);
  assert.equal(handle.dir, job.bundleDir, 'the job ran in its bundle folder, on the shared filesystem');
  const ran = readRecord(process.env.FAKE_RECORD!).slice(before).map((r) => r.argv);
  assert.deepEqual(ran[0], plan.steps[0]!.argv, 'the submit command is the plan\'s');
  assert.equal(readFileSync(path.join(job.bundleDir, SCRIPT_FILE), 'utf8'), plan.files[0]!.content, 'the job script is the plan\'s');

  const lines = new Lines();
  const following = launcher.follow(handle, { onLine: lines.push }, job);
  await lines.waitFor((l) => l === 'job: progress 100%');
  assert.ok(lines.all.includes(`job: secret sha256 ${SECRET_SHA256}`), 'the job has the secret in its environment');
  // It waits for "go": squeue sees it running on the cluster's node.
  await lines.waitFor((l) => l === `[slurm] job ${handle.jobId}: RUNNING on ${cluster!.node}`);
  assert.ok(!existsSync(path.join(job.bundleDir, '.rollout-lab-secrets')), 'the secrets file went when the job started');
  assert.ok(allCommandLines().every((c) => !c.includes(SECRET)), 'the secret is in no process\'s command line');
  // Nowhere on disk: not the job folder, not Slurm's own state (the stored job script and environment), not its logs.
  assertNotInFiles(SECRET, job.jobDir, cluster!.dir);
  const stored = spawnSync('scontrol', ['write', 'batch_script', handle.jobId, '-'], { encoding: 'utf8' });
  assert.equal(stored.status, 0, stored.stderr);
  assert.equal(stored.stdout, plan.files[0]!.content, 'Slurm stored the script as planned');
  writeFileSync(path.join(job.bundleDir, 'go'), '');
  assert.deepEqual(await following, { state: 'succeeded', exitCode: 0 });
  assert.deepEqual(jobLines(lines), expectedLines(['0', '--wait'], ['job: go']));
  assert.equal(scontrolState(handle.jobId), 'COMPLETED');

  const dest = path.join(job.jobDir, 'out');
  await launcher.fetchOutputs(handle, job, dest);
  assert.deepEqual(JSON.parse(readFileSync(path.join(dest, 'result.json'), 'utf8')), { status: 'succeeded', code: 0 });
  const again = new Lines();
  assert.deepEqual(await launcherFor('slurm').follow(JSON.parse(JSON.stringify(handle)) as JobHandle, { onLine: again.push }, job), { state: 'succeeded', exitCode: 0 });
  assert.deepEqual(jobLines(again), jobLines(lines), 'a reattach from the handle alone replays the same log');
  assertNotInFiles(SECRET, job.jobDir, cluster!.dir);
});

test('slurm: a failing job is failed with its exit status; a job folder elsewhere (remoteDir) gets the bundle and gives out/ back', { skip }, async () => {
  const shared = path.join(root, 'shared');
  const job = cpuJob({ id: 'fails', target: { ...target, remoteDir: shared }, command: ['python3', 'job.py', '3'] });
  const handle = (await launcher.launch(job)) as Extract<JobHandle, { target: 'slurm' }>;
  assert.equal(handle.dir, path.join(shared, 'fails'));
  const lines = new Lines();
  assert.deepEqual(await launcher.follow(handle, { onLine: lines.push }, job), { state: 'failed', exitCode: 3 });
  assert.equal(jobLines(lines)[0], 'job: start');
  assert.equal(scontrolState(handle.jobId), 'FAILED');
  await launcher.fetchOutputs(handle, job, path.join(job.jobDir, 'out'));
  assert.deepEqual(JSON.parse(readFileSync(path.join(job.jobDir, 'out', 'result.json'), 'utf8')), { status: 'failed', code: 3 });
});

test('slurm: cancelled through the lab with scancel: the job is CANCELLED on Slurm and the follower says cancelled by Rollout Lab', { skip }, async () => {
  const job = cpuJob({ id: 'cancelled-here', target, command: ['python3', 'job.py', '0', '--sleep'] });
  const handle = (await launcher.launch(job)) as Extract<JobHandle, { target: 'slurm' }>;
  const lines = new Lines();
  const following = launcher.follow(handle, { onLine: lines.push }, job);
  await lines.waitFor((l) => l === 'job: progress 100%');
  const before = readRecord(process.env.FAKE_RECORD!).length;
  await launcher.cancel(handle, job);
  const cancelArgv = readRecord(process.env.FAKE_RECORD!).slice(before).map((r) => r.argv).find((a) => a.includes('rollout-lab-cancel'));
  assert.deepEqual(cancelArgv?.slice(-3), ['rollout-lab-cancel', handle.dir, handle.jobId]);
  assert.match(cancelArgv![2]!, /scancel "\$2"/);
  const exit = await following;
  assert.equal(exit.state, 'cancelled');
  assert.equal(exit.detail, `cancelled by Rollout Lab (scancel ${handle.jobId})`);
  assert.equal(scontrolState(handle.jobId), 'CANCELLED');
  assert.ok(!jobLines(lines).includes('job: end'), 'the job did not run to its end');
});

test('slurm: a job scancel\'ed outside the lab ends failed, cancelled outside Rollout Lab — never running', { skip }, async () => {
  const job = cpuJob({ id: 'cancelled-outside', target, command: ['python3', 'job.py', '0', '--sleep'] });
  const handle = (await launcher.launch(job)) as Extract<JobHandle, { target: 'slurm' }>;
  const lines = new Lines();
  const following = launcher.follow(handle, { onLine: lines.push }, job);
  await lines.waitFor((l) => l === 'job: start');
  const r = spawnSync('scancel', [handle.jobId], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const exit = await following;
  assert.equal(exit.state, 'failed');
  assert.match(exit.detail!, new RegExp(`^Slurm ended the job: cancelled outside Rollout Lab \\(scancel\\) \\(job ${handle.jobId}\\)$`));
});

test('slurm: a job Slurm knows nothing of, with no exit status, is lost', { skip }, async () => {
  const job = cpuJob({ id: 'lost', target });
  const exit = await launcher.follow({ target: 'slurm', host: null, dir: job.bundleDir, jobId: '999999' }, { onLine: () => undefined }, job);
  assert.equal(exit.state, 'failed');
  assert.match(exit.detail!, /^the job is lost: Slurm on this machine knows no job 999999 any more/);
});

test('slurm: forwardPort relays a port the job serves on its compute node to 127.0.0.1 here', { skip }, async () => {
  const port = await freePort();
  const job = cpuJob({ id: 'serves', target, command: ['python3', '-m', 'http.server', String(port), '--bind', '0.0.0.0'] });
  const handle = await launcher.launch(job);
  const lines = new Lines();
  const following = launcher.follow(handle, { onLine: lines.push }, job);
  await lines.waitFor((l) => l.startsWith('Serving HTTP on'));
  const fwd = await launcher.forwardPort(handle, job, port);
  const local = Number(new URL(fwd.url).port);
  assert.equal(fwd.url, `http://127.0.0.1:${local}/v1`);
  const res = await fetch(`http://127.0.0.1:${local}/`);
  assert.equal(res.status, 200);
  assert.match(await res.text(), /job\.yaml/, 'the listing of the job folder, served on the node');
  fwd.close();
  await launcher.cancel(handle, job);
  assert.equal((await following).state, 'cancelled');
});

// A login node over ssh: a real sshd on 127.0.0.1 whose sessions get the cluster's SLURM_CONF (SetEnv), as a login node's /etc/slurm would.
const sshMissing = !existsSync(SSHD) ? `${SSHD} is missing (apt-get install openssh-server)` : !which('ssh') ? 'ssh is not on PATH (apt-get install openssh-client)' : null;
if (!skip && sshMissing && process.env.CI) throw new Error(`the Slurm launcher over ssh needs a real sshd: ${sshMissing}`);
if (!skip && sshMissing) console.log(`# skipping the Slurm launcher over ssh: ${sshMissing}`);

test('slurm: through a login node over ssh: the bundle goes over as a tar stream, sbatch runs there, the log follows over ssh, out/ comes back', { skip: skip || (sshMissing ?? false) }, async () => {
  const sshd = await startSshd(path.join(root, 'sshd'), cluster!.env);
  try {
    const remoteDir = path.join(root, 'login-home', 'jobs');
    const t = {
      ...target,
      host: `${userInfo().username}@127.0.0.1`,
      port: sshd.port,
      identityFile: sshd.key,
      options: ['StrictHostKeyChecking=no', `UserKnownHostsFile=${path.join(root, 'known_hosts')}`, 'LogLevel=ERROR'],
      remoteDir,
    };
    const job = cpuJob({ id: 'over-ssh', target: t, command: ['python3', 'job.py', '0'], secrets: { [SECRET_NAME]: SECRET } });
    const bin = path.join(root, 'bin');
    recordingShim(bin, 'ssh', which('ssh')!);
    const before = readRecord(process.env.FAKE_RECORD!).length;
    const plan = launcher.plan(job);
    const handle = (await launcher.launch(job)) as Extract<JobHandle, { target: 'slurm' }>;
    assert.deepEqual(handle, { target: 'slurm', host: t.host, dir: path.join(remoteDir, 'over-ssh'), jobId: handle.jobId });
    const sshRan = readRecord(process.env.FAKE_RECORD!).slice(before).filter((r) => r.tool === 'ssh').map((r) => r.argv);
    assert.deepEqual(sshRan, plan.steps.filter((s) => s.argv[0] === 'ssh').map((s) => s.argv), 'the ssh commands that ran are the plan\'s');
    assert.ok(sshRan.every((a) => !a.join(' ').includes(SECRET)));
    const lines = new Lines();
    assert.deepEqual(await launcher.follow(handle, { onLine: lines.push }, job), { state: 'succeeded', exitCode: 0 });
    assert.deepEqual(jobLines(lines), expectedLines(['0']));
    await launcher.fetchOutputs(handle, job, path.join(job.jobDir, 'out'));
    assert.deepEqual(JSON.parse(readFileSync(path.join(job.jobDir, 'out', 'result.json'), 'utf8')), { status: 'succeeded', code: 0 });
    assertNotInFiles(SECRET, handle.dir, job.jobDir, cluster!.dir);
  } finally {
    sshd.child.kill('SIGTERM');
  }
});

// The real trainer's CPU path on Slurm: the trainer's venv (scripts/setupTrainerVenv.sh makes .venv-trainer at the repo root).
const trainerMissing = !existsSync(TRAINER_PYTHON)
  ? `${TRAINER_PYTHON} is missing (bash scripts/setupTrainerVenv.sh)`
  : spawnSync(TRAINER_PYTHON, ['-c', TRAINER_IMPORTS], { encoding: 'utf8' }).status !== 0
    ? `${TRAINER_PYTHON} cannot ${TRAINER_IMPORTS} (bash scripts/setupTrainerVenv.sh)`
    : null;
if (!skip && trainerMissing && process.env.CI) throw new Error(`the real trainer on Slurm: ${trainerMissing}`);
if (!skip && trainerMissing) console.log(`# skipping the real trainer on Slurm: ${trainerMissing}`);

test('slurm: the real trainer (a one-layer Qwen2 built from a config, CPU) runs as a Slurm job: its events stream back and out/result.json is fetched', { skip: skip || (trainerMissing ?? false) }, async () => {
  const job = cpuJob({
    id: 'trainer',
    target: { ...target, python: TRAINER_PYTHON, cpus: 2, setup: ['export OMP_NUM_THREADS=2'] },
    resources: { gpus: 0, cpus: 2 },
    command: ['python3', '-m', 'rollout_trainer', 'sft', '--spec', 'job.yaml'],
    files: { 'data/sft.jsonl': GOLDEN_SFT },
    spec: {
      model: QWEN2_MODEL,
      hyperparameters: QWEN2_HYPERPARAMETERS,
      data: { train: 'data/sft.jsonl' },
    },
  });
  const handle = await launcher.launch(job);
  const lines = new Lines();
  const exit = await launcher.follow(handle, { onLine: lines.push }, job);
  assert.deepEqual(exit, { state: 'succeeded', exitCode: 0 }, lines.all.slice(-10).join('\n'));
  const events = lines.all.map(parseTrainerEvent).filter((e) => e !== null);
  assert.ok(events.some((e) => e.event === 'metrics'), 'metrics events');
  assert.ok(events.some((e) => e.event === 'done'), 'a done event');
  const dest = path.join(job.jobDir, 'out');
  await launcher.fetchOutputs(handle, job, dest);
  const result = JSON.parse(readFileSync(path.join(dest, 'result.json'), 'utf8')) as { status: string };
  assert.equal(result.status, 'succeeded');
  assert.ok(existsSync(path.join(dest, 'events.jsonl')));
});

test('slurm: a job that reaches its time limit ends failed with Slurm\'s reason, never running', { skip }, async () => {
  const { handle, lines, exit } = timeLimited!;
  const end = await exit;
  assert.equal(end.state, 'failed');
  assert.match(end.detail!, new RegExp(`^Slurm ended the job: time limit \\(00:01:00\\) reached — raise the target's "timeLimit" \\(job ${handle.jobId}, reason TimeLimit\\)$`));
  assert.equal(scontrolState(handle.jobId), 'TIMEOUT');
  assert.equal(jobLines(lines)[0], 'job: start');
  assert.ok(lines.all.some((l) => /CANCELLED AT .* DUE TO TIME LIMIT/.test(l)), 'slurmstepd\'s own line is in the log');
});
