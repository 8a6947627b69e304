import { test } from 'node:test';
import assert from 'node:assert/strict';
import { arrayTaskIds, parseScontrolJobs, slurmWorkerScript, workerStateOf } from '../../../../src/core/train/workers/slurmWorkers';
import { SlurmWorkersSchema } from '../../../../src/core/config/workersSchema';
import type { WorkerRequest } from '../../../../src/core/train/workers/workerPlace';

const req: WorkerRequest = { command: 'run', runId: 'run-1', count: 4, cli: ['/usr/bin/node', '/opt/rl/cli.js'], args: ['--model', "it's"], workspace: '/shared/ws' };

test('array task ids: ranges, lists, steps and a throttle', () => {
  assert.deepEqual(arrayTaskIds('0-3'), [0, 1, 2, 3]);
  assert.deepEqual(arrayTaskIds('1,3,5-6'), [1, 3, 5, 6]);
  assert.deepEqual(arrayTaskIds('0-6:3%2'), [0, 3, 6]);
  assert.deepEqual(arrayTaskIds('2'), [2]);
});

test('scontrol show job -o: one record per started task, one for those still pending together', () => {
  const text = [
    'JobId=12 ArrayJobId=11 ArrayTaskId=3 JobName=rollout-lab-run-1 JobState=RUNNING Reason=None Dependency=(null) Restarts=0 ExitCode=0:0',
    'JobId=14 ArrayJobId=11 ArrayTaskId=2 JobName=rollout-lab-run-1 JobState=PENDING Reason=BeginTime Dependency=(null) Restarts=1 ExitCode=143:0',
    'JobId=11 ArrayJobId=11 ArrayTaskId=0-1 JobName=rollout-lab-run-1 JobState=PENDING Reason=Resources Dependency=(null) Restarts=0 ExitCode=0:0',
  ].join('\n');
  const records = parseScontrolJobs(text);
  assert.deepEqual(records.map((r) => [r.tasks, r.state, r.restarts]), [[[3], 'RUNNING', 0], [[2], 'PENDING', 1], [[0, 1], 'PENDING', 0]]);
  assert.deepEqual(workerStateOf(records[1]!), { state: 'pending', detail: 'PENDING: BeginTime' });
});

test("Slurm's end states map to the coordinator's, with the exit status", () => {
  const of = (state: string, exitCode = '0:0', reason = 'None') => workerStateOf({ tasks: [0], state, reason, exitCode, restarts: 0 });
  assert.equal(of('COMPLETED').state, 'succeeded');
  assert.deepEqual(of('FAILED', '1:0', 'NonZeroExitCode'), { state: 'failed', detail: 'FAILED (exit 1): NonZeroExitCode' });
  assert.deepEqual(of('CANCELLED', '0:15'), { state: 'cancelled', detail: 'CANCELLED (exit signal 15)' });
  assert.equal(of('TIMEOUT').state, 'failed');
  assert.equal(of('NODE_FAIL').state, 'failed');
  assert.equal(of('OUT_OF_MEMORY').state, 'failed');
  assert.equal(of('REQUEUED').state, 'pending');
  assert.equal(of('COMPLETING').state, 'running');
});

test('the array script: one task per slice, requeue, appended logs, the workers\' command line quoted, setup lines first', () => {
  const cfg = SlurmWorkersSchema.parse({ partition: 'cpu', timeLimit: '1:00:00', setup: ['module load nodejs/20'], sbatchOptions: ['--constraint=x86'] });
  const s = slurmWorkerScript(req, cfg, '/shared/ws/.rollout-lab/workers/run-1');
  assert.match(s, /^#SBATCH --array=0-3$/m);
  assert.match(s, /^#SBATCH --requeue$/m);
  assert.match(s, /^#SBATCH --open-mode=append$/m);
  assert.match(s, /^#SBATCH --output=\/shared\/ws\/\.rollout-lab\/workers\/run-1\/worker-%a\.log$/m);
  assert.match(s, /^#SBATCH --partition=cpu$/m);
  assert.match(s, /^#SBATCH --time=1:00:00$/m);
  assert.match(s, /^#SBATCH --constraint=x86$/m);
  assert.ok(s.indexOf('module load nodejs/20') < s.indexOf('exec '));
  assert.match(s, /^exec \/usr\/bin\/node \/opt\/rl\/cli\.js run --resume run-1 --shard "\$SLURM_ARRAY_TASK_ID\/4" --workspace \/shared\/ws --model 'it'\\''s' --json$/m);
  const own = SlurmWorkersSchema.parse({ cli: ['rollout-lab'] });
  assert.match(slurmWorkerScript(req, own, '/d'), /^exec rollout-lab run --resume run-1/m);
});

test('sbatch options the workers set themselves are refused with the reason', () => {
  for (const opt of ['--array=0-9', '--output=x.log', '--no-requeue', '--time=10']) {
    assert.throws(() => slurmWorkerScript(req, SlurmWorkersSchema.parse({ sbatchOptions: [opt] }), '/d'), new RegExp(`${opt.split('=')[0]} is set by Rollout Lab`));
  }
  assert.throws(() => slurmWorkerScript({ ...req, workspace: '/my ws' }, SlurmWorkersSchema.parse({}), '/d'), /may not contain spaces/);
});
