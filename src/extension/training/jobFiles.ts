import { core } from '../coreLoader';
import type { FeatureContext } from '../featureContext';
import * as path from 'node:path';
import { jobDir, type JobRecord } from '../../core/train/jobs/jobRecord';

/**
 * Where a lab's training jobs live on disk, read from lab.json alone: the
 * Training view, the curves and the reattach scan list jobs without opening
 * the lab (no store, no graph), so they cost little at startup.
 */

export async function trainingDirOf(folder: string): Promise<string> {
  const { loadConfig } = await core.config();
  const { pipelineDir } = await core.pipelineState();
  return pipelineDir(await loadConfig(folder));
}

/** Every job of the lab in a folder, newest first. */
export async function listJobsOf(folder: string): Promise<{ trainingDir: string; jobs: JobRecord[] }> {
  const trainingDir = await trainingDirOf(folder);
  const { listJobRecords } = await core.jobRecord();
  return { trainingDir, jobs: listJobRecords(trainingDir) };
}

export async function readJobOf(folder: string, id: string): Promise<{ trainingDir: string; job: JobRecord }> {
  const trainingDir = await trainingDirOf(folder);
  const { readJobRecord } = await core.jobRecord();
  return { trainingDir, job: readJobRecord(jobDir(trainingDir, id)) };
}

export function jobLogPath(trainingDir: string, id: string): string {
  return path.join(jobDir(trainingDir, id), 'job.log');
}

/** The lab folder (the one holding .rollout-lab/) of a path inside it, e.g. a job.json the watcher saw. */
export function labFolderOf(file: string): string | undefined {
  const parts = path.resolve(file).split(path.sep);
  const i = parts.lastIndexOf('.rollout-lab');
  return i > 0 ? parts.slice(0, i).join(path.sep) || path.sep : undefined;
}

/** Values of training.trainer.secrets from SecretStorage (names missing there fall back to the environment, in the core). Never logged. */
export async function jobSecrets(ctx: Pick<FeatureContext, 'extension'>, names: readonly string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const v = await ctx.extension.secrets.get(name);
    if (v) out[name] = v;
  }
  return out;
}
