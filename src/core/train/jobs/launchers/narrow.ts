import type { TargetConfig, TargetKind } from '../../../config/trainingSchema';
import { RuntimeFailure } from '../../../errors';
import type { JobHandle, PreparedJob } from '../launcher';

/** The job's target as the launcher of `kind` needs it (a mix-up of launchers is a bug, said plainly). */
export function targetOf<K extends TargetKind>(job: Pick<PreparedJob, 'target'>, kind: K): Extract<TargetConfig, { kind: K }> {
  if (job.target.kind !== kind) throw new RuntimeFailure(`not a ${kind} target (${job.target.kind})`);
  return job.target as Extract<TargetConfig, { kind: K }>;
}

/** A job handle as the launcher of `kind` wrote it. */
export function handleOf<K extends TargetKind>(handle: JobHandle, kind: K): Extract<JobHandle, { target: K }> {
  if (handle.target !== kind) throw new RuntimeFailure(`not a ${kind} job handle (${handle.target})`);
  return handle as Extract<JobHandle, { target: K }>;
}
