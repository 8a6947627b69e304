// The fake cluster's job driver for one SkyPilot job (started detached by fake-sky.mjs `launch`): the setup on
// every node, then the run on every node, each a local bash process with SKYPILOT_NODE_RANK, SKYPILOT_NUM_NODES and
// SKYPILOT_NODE_IPS set and the task's mount paths mapped to local folders. Like SkyPilot's driver: one status for
// the whole job; the first node whose run exits non-zero gets the others killed (exit 137), the job FAILED and the
// return code list printed in its log; each node's lines are prefixed "(head, rank=0, pid=P)" / "(workerK, rank=K,
// pid=P, ip=IP)" ("(task, pid=P)" on one node). SIGTERM = `sky cancel`: the nodes' processes are stopped, CANCELLED.
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { baseEnv, localText, readJson, sleep, writeJson } from './fakeCluster.mjs';

const [clusterDir, jobIdText] = process.argv.slice(2);
const jobId = Number(jobIdText);
const jobFile = path.join(clusterDir, `job-${jobId}.json`);
const job = readJson(jobFile);
const log = path.join(clusterDir, `job-${jobId}.log`);
const say = (line) => appendFileSync(log, `${line}\n`);
const setStatus = (status, extra = {}) => writeJson(jobFile, { ...readJson(jobFile), status, ...extra });
const running = new Map();
let cancelled = false;

function prefix(rank, pid) {
  if (job.nodes === 1) return `(task, pid=${pid})`;
  return rank === 0 ? `(head, rank=0, pid=${pid})` : `(worker${rank}, rank=${rank}, pid=${pid}, ip=10.0.0.${rank + 1})`;
}

function onNode(rank, script) {
  const env = baseEnv({ ...job.envs, SKYPILOT_NODE_RANK: String(rank), SKYPILOT_NUM_NODES: String(job.nodes), SKYPILOT_NODE_IPS: Array.from({ length: job.nodes }, (_, k) => `10.0.0.${k + 1}`).join('\n'), SKYPILOT_TASK_ID: `sky-fake-${jobId}` });
  for (const [k, v] of Object.entries(env)) env[k] = localText(String(v), job.mounts);
  const child = spawn('bash', ['-c', localText(script, job.mounts)], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true, cwd: job.workdir });
  running.set(rank, child);
  let rest = '';
  const onData = (d) => {
    const lines = (rest + d).split('\n');
    rest = lines.pop();
    for (const l of lines) say(`${prefix(rank, child.pid)} ${l}`);
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  return new Promise((done) => child.on('close', (code, signal) => {
    if (rest) say(`${prefix(rank, child.pid)} ${rest}`);
    running.delete(rank);
    done(code ?? (signal === 'SIGKILL' ? 137 : 128 + 15));
  }));
}

/** Every node's run at once; when one fails, the ones still running are killed, as SkyPilot's get_or_fail does. */
async function gang(script) {
  const codes = Array(job.nodes).fill(null);
  await new Promise((allDone) => {
    let left = job.nodes;
    for (let rank = 0; rank < job.nodes; rank++) {
      onNode(rank, script).then((code) => {
        codes[rank] ??= code;
        if (code !== 0) for (const [r, c] of running) if (codes[r] === null) (codes[r] = 137), process.kill(-c.pid, 'SIGKILL');
        if (--left === 0) allDone();
      });
    }
  });
  return codes;
}

process.on('SIGTERM', async () => {
  cancelled = true;
  for (const c of running.values()) process.kill(-c.pid, 'SIGTERM');
  const until = Date.now() + 10_000;
  while (running.size && Date.now() < until) await sleep(50);
  for (const c of running.values()) process.kill(-c.pid, 'SIGKILL');
  while (running.size) await sleep(20);
  setStatus('CANCELLED');
  process.exit(0);
});

if (job.setup) {
  setStatus('SETTING_UP');
  const codes = await gang(job.setup);
  if (cancelled) await sleep(60_000);
  if (codes.some((c) => c !== 0)) {
    say(`ERROR: Job ${jobId}'s setup failed with return code list: [${codes.join(', ')}]`);
    setStatus('FAILED_SETUP');
    process.exit(0);
  }
}
setStatus('RUNNING', { startedAt: Date.now() });
const codes = await gang(job.run);
if (cancelled) await sleep(60_000);
if (codes.some((c) => c !== 0)) {
  const other = codes.find((c) => c !== 137);
  say(`ERROR: \u001b[31mJob ${jobId} failed with return code list:\u001b[0m [${codes.join(', ')}] ${codes.includes(137) && other !== undefined ? `(A Worker failed with return code ${other}, SkyPilot cleaned up the processes on other nodes with return code 137)` : ''}`);
  setStatus('FAILED', { returncodes: codes });
} else setStatus('SUCCEEDED', { returncodes: codes });
process.exit(0);
