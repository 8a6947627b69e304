import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { resolveTarget, trainingDir, type JobContext } from './jobContext';
import { jobDir, listJobRecords, readJobRecord, type JobRecord } from './jobRecord';
import { JobSpecSchema } from './jobSpec';
import type { PreparedJob } from './launcher';
import { parseTrainerEvent, type TrainerEvent } from './trainerEvents';

/** The lab's jobs as this machine keeps them: records, logs, events, and what a launched job is on its target. */

export function jobLogFile(ctx: JobContext, id: string): string {
  return path.join(jobDir(trainingDir(ctx), id), 'job.log');
}

export function readJob(ctx: JobContext, id: string): JobRecord {
  return readJobRecord(jobDir(trainingDir(ctx), id));
}

export function listJobs(ctx: JobContext): JobRecord[] {
  return listJobRecords(trainingDir(ctx));
}

/** The events a job printed so far (from its local copy of the log). */
export function jobEvents(ctx: JobContext, id: string): TrainerEvent[] {
  const file = jobLogFile(ctx, id);
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .map(parseTrainerEvent)
    .filter((e): e is TrainerEvent => e !== null);
}

/** A launched job as its launcher needs it to follow, forward or cancel it: its bundle's spec and its target. */
export function launchedJob(ctx: JobContext, rec: JobRecord): Pick<PreparedJob, 'spec' | 'target'> {
  const bundleSpec = path.join(jobDir(trainingDir(ctx), rec.id), 'bundle', 'job.yaml');
  const target = resolveTarget(ctx, rec.targetName).target;
  // The spec as written into the bundle, for the launcher's paths and ports.
  const spec = JobSpecSchema.parse(parseYaml(readFileSync(bundleSpec, 'utf8')));
  return { spec, target };
}
