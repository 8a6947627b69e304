import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ConfigError, UsageError } from '../../errors';
import { writeFileAtomic } from '../../store/atomicFile';
import type { JobHandle } from './launcher';

/**
 * A launched training job as this machine knows it:
 * `<training.outputDir>/jobs/<id>/job.json` beside the job's log, its events
 * and the outputs fetched back. The handle finds the job again on its target,
 * so a window reload or another process reattaches from this file alone.
 */

export const JOB_STATES = ['launching', 'running', 'fetching', 'succeeded', 'failed', 'cancelled'] as const;
export type JobState = (typeof JOB_STATES)[number];

const HandleSchema = z.union([
  z.object({ target: z.literal('local'), pid: z.number(), host: z.string(), logFile: z.string(), exitFile: z.string(), outDir: z.string() }),
  z.object({ target: z.literal('ssh'), host: z.string(), remoteDir: z.string(), pid: z.number() }),
  z.object({ target: z.literal('skypilot'), cluster: z.string(), jobId: z.number().nullable() }),
  z.object({ target: z.literal('k8s'), namespace: z.string(), context: z.string().nullable(), job: z.string(), service: z.string().nullable() }),
  z.object({ target: z.literal('slurm'), host: z.string().nullable(), dir: z.string(), jobId: z.string() }),
]);

const JobRecordSchema = z.object({
  id: z.string(),
  kind: z.enum(['sft', 'grpo', 'serve']),
  phase: z.string(),
  /** Logical model the job's result becomes a version of (null: none is registered). */
  model: z.string().nullable(),
  baseModel: z.string(),
  targetName: z.string(),
  targetKind: z.enum(['local', 'ssh', 'skypilot', 'k8s', 'slurm']),
  state: z.enum(JOB_STATES),
  createdAt: z.number(),
  endedAt: z.number().nullable(),
  handle: HandleSchema.nullable(),
  exitCode: z.number().nullable(),
  error: z.string().nullable(),
  hyperparameters: z.record(z.string(), z.union([z.number(), z.string(), z.boolean(), z.array(z.string())])),
  /** Counts of the exported data the job trains on. */
  data: z.record(z.string(), z.number()),
  /** The model version registered from the job's result. */
  registered: z.object({ model: z.string(), version: z.string() }).nullable(),
  /** A training job: the serve job that serves its result. */
  serveJob: z.string().nullable().default(null),
  /** A training job: serve its result and register it when it succeeds (what the launch asked for; a reattach does the same). */
  serveOnSuccess: z.boolean().default(true),
  /** A serve job: the registry version its policy becomes once it serves. */
  serves: z.string().nullable().default(null),
  /** A serve job: where its endpoint answers on this machine. */
  serveUrl: z.string().nullable(),
  /** The trainer's result.json, once fetched. */
  result: z.record(z.string(), z.unknown()).nullable(),
});

export type JobRecord = z.output<typeof JobRecordSchema>;

export function jobsDir(trainingDir: string): string {
  return path.join(trainingDir, 'jobs');
}

export function jobDir(trainingDir: string, id: string): string {
  return path.join(jobsDir(trainingDir), id);
}

function recordFile(dir: string): string {
  return path.join(dir, 'job.json');
}

export function writeJobRecord(dir: string, rec: JobRecord): void {
  mkdirSync(dir, { recursive: true });
  writeFileAtomic(recordFile(dir), Buffer.from(JSON.stringify(JobRecordSchema.parse(rec), null, 2) + '\n', 'utf8'));
}

export function readJobRecord(dir: string): JobRecord {
  const file = recordFile(dir);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new UsageError(`no training job in ${dir} — list jobs with \`rollout-lab jobs\``);
    throw new ConfigError(`the job record ${file} cannot be read (${(err as Error).message}) — move the folder aside`, file);
  }
  const parsed = JobRecordSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`the job record ${file} is invalid at ${issue.path.join('.') || '(top level)'}: ${issue.message} — move the folder aside`, file);
  }
  return parsed.data;
}

/** Re-reads the record, applies the change and writes it back. */
export function updateJobRecord(dir: string, change: (rec: JobRecord) => JobRecord): JobRecord {
  const next = change(readJobRecord(dir));
  writeJobRecord(dir, next);
  return next;
}

/** Every job of the lab, newest first; folders without a readable record are skipped. */
export function listJobRecords(trainingDir: string): JobRecord[] {
  const root = jobsDir(trainingDir);
  if (!existsSync(root)) return [];
  const out: JobRecord[] = [];
  for (const name of readdirSync(root)) {
    try {
      out.push(readJobRecord(path.join(root, name)));
    } catch {
      // A folder being created, or one a user broke: it is not a job we can show.
    }
  }
  return out.sort((a, b) => b.createdAt - a.createdAt);
}

export function isActive(rec: Pick<JobRecord, 'state'>): boolean {
  return rec.state === 'launching' || rec.state === 'running' || rec.state === 'fetching';
}

export type { JobHandle };
