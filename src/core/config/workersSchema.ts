import { z } from 'zod';

/** Where `run --workers N --on PLACE` can start workers. */
export const WORKER_PLACES = ['local', 'slurm'] as const;
export type WorkerPlaceName = (typeof WORKER_PLACES)[number];

/** A Slurm time limit as sbatch --time takes it. */
export const slurmTime = z
  .string()
  .regex(/^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d{1,2}(:\d{1,2}){0,2})$/, 'a Slurm time: MINUTES, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS');

/** Characters safe on an #SBATCH line: no spaces, no shell or option syntax. */
export const slurmWord = z.string().regex(/^[A-Za-z0-9_.,-]+$/, 'letters, digits, "_", "-", "." or ","');

const shellLines = z.array(z.string().regex(/^[^\n\r]*$/, 'one shell line each (no line breaks)'));

/** `run --workers N --on slurm`: one job array, a task per slice, on this machine's Slurm (run it on a login node). */
export const SlurmWorkersSchema = z.strictObject({
  partition: slurmWord.optional().describe('sbatch --partition of the array.'),
  account: slurmWord.optional().describe('sbatch --account.'),
  qos: slurmWord.optional().describe('sbatch --qos.'),
  timeLimit: slurmTime.optional().describe('sbatch --time of each array task, e.g. "2:00:00". A task that reaches it ends; resume the run to finish its slice.'),
  cpus: z.number().int().min(1).default(1).describe('CPUs per worker (--cpus-per-task): rollouts mostly wait on the model, so one is enough for a concurrency of dozens.'),
  memoryGb: z.number().positive().optional().describe('Memory per worker (--mem).'),
  setup: shellLines
    .default([])
    .describe('Shell lines each task runs before the worker, e.g. "module load nodejs/20"; the first that fails ends the task.'),
  sbatchOptions: z
    .array(z.string().regex(/^--[a-z][a-z0-9-]*(=\S+)?$/, 'an sbatch long option such as --constraint=cpu or --exclusive'))
    .default([])
    .describe('Extra sbatch options, one "--name=value" each. Those the workers set themselves (--array, --output, --requeue, ...) are refused.'),
  cli: z
    .array(z.string().min(1))
    .min(1)
    .optional()
    .describe('How the compute nodes start Rollout Lab\'s CLI (after setup), e.g. ["rollout-lab"] or ["node", "/shared/rollout-lab/dist/cli.js"]. Default: the node and the CLI this coordinator runs, at the same paths.'),
  pollSeconds: z.number().min(0.2).max(600).default(5).describe('How often the coordinator asks scontrol about the array.'),
});

export const WorkersSchema = z
  .strictObject({
    slurm: SlurmWorkersSchema.prefault({}),
  })
  .describe('Where `rollout-lab run --workers N --on PLACE` starts its workers. Every worker reads and writes this workspace, so on a cluster it must sit on a filesystem all nodes mount.');

export type WorkersConfig = z.output<typeof WorkersSchema>;
export type SlurmWorkersConfig = z.output<typeof SlurmWorkersSchema>;
