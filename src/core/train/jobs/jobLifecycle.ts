import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { errorMessage, RuntimeFailure, UsageError } from '../../errors';
import { resolvePhase, trainingDir, type JobContext, type JobHooks } from './jobContext';
import { draftServe, newJobId, newRecord, prepare, type JobDraft, type ServeRequest } from './jobDraft';
import { launchedJob, listJobs, readJob } from './jobQueries';
import { isActive, jobDir, readJobRecord, updateJobRecord, writeJobRecord, type JobRecord } from './jobRecord';
import type { JobExit, PortForward, PreparedJob } from './launcher';
import { launcherFor } from './launchers';
import { backendOfJob, endServe, onServing, rollBackServed } from './jobServing';
import { notifyPhase, setPhaseJob } from './phaseJob';
import { parseTrainerEvent } from './trainerEvents';

/**
 * A job's life on its target: launched from its draft, followed to its end
 * (its log copied here, its events reported), its outputs fetched; a training
 * job that succeeded is served and registered, a serve job is followed until
 * it serves; a cancel stops it and rolls its served version back.
 */

/** Launches a drafted job: bundle, record, launcher. The record says failed (with why) when the launch itself fails. */
export async function launchDraft(ctx: JobContext, d: JobDraft, hooks: JobHooks, serves: string | null = null, serveOnSuccess = false): Promise<JobRecord> {
  const dir = jobDir(trainingDir(ctx), d.id);
  const log = hooks.log ?? ((): void => undefined);
  let rec = { ...newRecord(d), serves, serveOnSuccess };
  writeJobRecord(dir, rec);
  hooks.onRecord?.(rec);
  try {
    const job = prepare(ctx, d, dir);
    log(`job ${d.id}: launching on ${d.target.name} (${d.target.target.kind})`);
    const handle = await launcherFor(job.target.kind).launch(job, log);
    rec = updateJobRecord(dir, (r) => ({ ...r, state: 'running', handle }));
  } catch (err) {
    rec = updateJobRecord(dir, (r) => ({ ...r, state: 'failed', endedAt: Date.now(), error: `launch failed: ${errorMessage(err)}` }));
  }
  hooks.onRecord?.(rec);
  return rec;
}

export interface FollowOptions {
  /** A training job that succeeds: serve its result and register it (default: what the launch asked for). */
  serve?: boolean;
  /** Environment values for the serve job (from SecretStorage in the editor). */
  secrets?: Record<string, string>;
  /** A serve job announced its endpoint, but forwarding or registering it failed (the job still runs). */
  onServeFailed?: (err: unknown) => void;
}

/**
 * Follows a job to its end, from the start of its log (a reattach replays
 * it), keeping a copy in job.log; then fetches its outputs and, for a
 * training job that succeeded, serves and registers the result. Returns the
 * final record. An aborted signal stops following, not the job.
 */
export async function followJob(ctx: JobContext, id: string, hooks: JobHooks, fo: FollowOptions = {}): Promise<JobRecord> {
  const dir = jobDir(trainingDir(ctx), id);
  let rec = readJobRecord(dir);
  if (!rec.handle || !isActive(rec)) return rec;
  const launcher = launcherFor(rec.targetKind);
  const job = launchedJob(ctx, rec);
  const logFile = path.join(dir, 'job.log');
  const ownLog = rec.handle.target === 'local' && path.resolve(rec.handle.logFile) === path.resolve(logFile);
  if (!ownLog) writeFileSync(logFile, '');
  let forward: PortForward | null = null;
  let exit: JobExit;
  try {
    exit = await launcher.follow(rec.handle!, {
      signal: hooks.signal,
      onLine: (line: string) => {
        if (!ownLog) appendFileSync(logFile, `${line}\n`);
        hooks.onLine?.(id, line);
        const ev = parseTrainerEvent(line);
        if (!ev) return;
        hooks.onEvent?.(id, ev);
        if (ev.event === 'serving' && rec.kind === 'serve' && !forward) {
          void onServing(ctx, dir, rec, ev.url, hooks, fo.onServeFailed).then((f) => (forward = f));
        }
      },
    }, job);
  } finally {
    (forward as PortForward | null)?.close();
  }
  if (exit.state === 'cancelled') return readJobRecord(dir);
  return finishJob(ctx, id, exit, hooks, fo, job);
}

async function finishJob(ctx: JobContext, id: string, exit: JobExit, hooks: JobHooks, fo: FollowOptions, job: Pick<PreparedJob, 'spec' | 'target'>): Promise<JobRecord> {
  const dir = jobDir(trainingDir(ctx), id);
  const log = hooks.log ?? ((): void => undefined);
  // Cancelled (the record says so before the process is stopped): nothing to fetch or roll back here.
  let rec = updateJobRecord(dir, (r) => (r.state === 'cancelled' ? r : { ...r, state: 'fetching', exitCode: exit.exitCode }));
  if (rec.state === 'cancelled') return rec;
  hooks.onRecord?.(rec);
  const launcher = launcherFor(rec.targetKind);
  let result: Record<string, unknown> | null = null;
  let fetchError: string | null = null;
  try {
    await launcher.fetchOutputs(rec.handle!, job, path.join(dir, 'out'));
    const resultFile = path.join(dir, 'out', 'result.json');
    if (existsSync(resultFile)) result = JSON.parse(readFileSync(resultFile, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    fetchError = `fetching the outputs failed: ${errorMessage(err)}`;
  }
  // A cancel from elsewhere while this process followed: the record already says so.
  const current = readJobRecord(dir);
  if (current.state === 'cancelled') return current;
  if (rec.kind === 'serve') return endServe(ctx, dir, exit, result, fetchError, hooks);
  const ok = exit.state === 'succeeded' && result?.status === 'succeeded';
  const error = ok
    ? null
    : (typeof result?.error === 'string' && result.error) || exit.detail || fetchError || `the trainer exited with status ${exit.exitCode ?? 'unknown'}${result ? '' : ' and wrote no result.json'} — see ${path.join(dir, 'job.log')}`;
  rec = updateJobRecord(dir, (r) => ({ ...r, state: ok ? 'succeeded' : 'failed', endedAt: Date.now(), error, result }));
  hooks.onRecord?.(rec);
  log(`job ${id}: ${rec.state}${error ? ` — ${error}` : ''}`);
  const phaseKind = rec.kind as 'sft' | 'grpo';
  if (!ok) {
    notifyPhase(hooks, setPhaseJob(ctx, rec.phase, phaseKind, (r) => ({ ...r, state: 'failed', endedAt: Date.now(), error, job: id })));
    return rec;
  }
  const adapter = typeof result?.adapter === 'string' ? path.join(dir, result.adapter.replace(/^out\//, 'out/')) : null;
  const adapterRel = adapter ? path.relative(ctx.loaded.labDir, adapter).split(path.sep).join('/') : null;
  const metrics = (result?.metrics ?? {}) as Record<string, unknown>;
  const counts = { ...rec.data, ...Object.fromEntries(Object.entries(metrics).filter(([, v]) => typeof v === 'number')) } as Record<string, number>;
  if (!(fo.serve ?? rec.serveOnSuccess) || !rec.model) {
    const note = !rec.model
      ? `trained adapter in ${adapterRel}; the phase names no "model", so no model version was registered`
      : `trained adapter in ${adapterRel}; serve it to use it: rollout-lab jobs serve ${id}`;
    notifyPhase(hooks, setPhaseJob(ctx, rec.phase, phaseKind, (r) => ({ ...r, state: 'done', endedAt: Date.now(), error: null, job: id, counts, produced: { kind: 'model', id }, note })));
    return rec;
  }
  const served = await serveJobResult(ctx, id, { target: rec.targetName, ...(fo.secrets ? { secrets: fo.secrets } : {}) }, hooks);
  notifyPhase(
    hooks,
    setPhaseJob(ctx, rec.phase, phaseKind, (r) => ({
      ...r,
      state: 'done',
      endedAt: Date.now(),
      error: null,
      job: id,
      counts,
      produced: { kind: 'model', id },
      note: served.registered ? `model "${served.registered.model}" version ${id} is active, served at ${served.serveUrl} (job ${served.id})` : `served at ${served.serveUrl} (job ${served.id})`,
    })),
  );
  return updateJobRecord(dir, (r) => ({ ...r, serveJob: served.id, registered: served.registered }));
}

export interface ServeOptions {
  target?: string;
  secrets?: Record<string, string>;
}

/**
 * Serves a training job's adapter (base model + adapter, python-trainer's
 * serve) on a target, forwards its port, and registers it as the active
 * version of the job's model: the next rollouts of its agents use it.
 * Resolves once it serves (the serve job keeps running until cancelled).
 */
export async function serveJobResult(ctx: JobContext, trainJobId: string, so: ServeOptions, hooks: JobHooks = {}): Promise<JobRecord> {
  const trained = readJob(ctx, trainJobId);
  if (trained.state !== 'succeeded') throw new UsageError(`job ${trainJobId} has not succeeded (it is ${trained.state}) — only a finished training job can be served`);
  const adapterRel = typeof trained.result?.adapter === 'string' ? trained.result.adapter : 'out/adapter';
  const adapter = path.join(jobDir(trainingDir(ctx), trainJobId), adapterRel);
  if (!existsSync(adapter)) throw new UsageError(`job ${trainJobId} has no adapter at ${adapter} — was its output fetched?`);
  const backend = backendOfJob(ctx, trainJobId);
  return startServe(ctx, { phase: resolvePhase(ctx, trained.phase), baseModel: trained.baseModel, target: so.target ?? trained.targetName, adapter, version: trainJobId, secrets: so.secrets, ...(backend ? { backend } : {}) }, hooks);
}

export async function startServe(ctx: JobContext, req: ServeRequest, hooks: JobHooks): Promise<JobRecord> {
  const log = hooks.log ?? ((): void => undefined);
  const id = req.version ? `${req.version.slice(0, 45)}-serve` : newJobId(`${req.phase.name}-serve`);
  // Serving a version again reuses its serve job's id (and folder), once the old one has stopped.
  const previous = listJobs(ctx).find((j) => j.id === id);
  if (previous && isActive(previous)) {
    throw new UsageError(`job ${id} still serves ${req.version}${previous.serveUrl ? ` at ${previous.serveUrl}` : ''} (it is ${previous.state}) — use it, or stop it first: rollout-lab jobs cancel ${id}`);
  }
  const d = await draftServe(ctx, id, req, log);
  const launched = await launchDraft(ctx, d, hooks, req.version ?? id);
  if (launched.state === 'failed') throw new RuntimeFailure(`serving failed: ${launched.error}`);
  return waitForServing(ctx, launched.id, hooks);
}

/**
 * Follows a serve job in the background until it serves; resolves with its record (serveUrl set, version registered).
 * Rejects when the job ends first, or when its endpoint cannot be forwarded or registered (the job is stopped then):
 * it never waits on a server that will not be used.
 */
function waitForServing(ctx: JobContext, serveId: string, hooks: JobHooks): Promise<JobRecord> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (err: unknown): void => {
      if (settled) return;
      settled = true;
      reject(err);
    };
    const onServeFailed = (err: unknown): void => {
      if (settled) return;
      // Settled now: the follower that ends with the stop below must not answer first.
      settled = true;
      const why = `it serves, but ${errorMessage(err)}`;
      void cancelJob(ctx, serveId)
        .catch(() => undefined)
        .then(() => {
          const rec = updateJobRecord(jobDir(trainingDir(ctx), serveId), (r) => ({ ...r, state: 'failed', error: `stopped: ${why}` }));
          hooks.onRecord?.(rec);
        })
        .catch(() => undefined)
        .finally(() => reject(new RuntimeFailure(`serving failed: job ${serveId} was stopped because ${why}`)));
    };
    void followJob(ctx, serveId, {
      ...hooks,
      onRecord: (r) => {
        hooks.onRecord?.(r);
        if (!settled && r.serveUrl && (r.registered || !r.model)) {
          settled = true;
          resolve(r);
        }
      },
    }, { onServeFailed })
      .then((r) => fail(new RuntimeFailure(`the serve job ${serveId} ended before it served: ${r.error ?? r.state}`)))
      .catch(fail);
  });
}

/**
 * Stops a job on its target; its record says cancelled (before the process goes, so a follower elsewhere does not
 * take the end for a failure). A serve job's model first goes back to the version before it, when its version is the
 * active one, and the record's error says so (not with `rollback: false`: a caller that serves the next version itself).
 */
export async function cancelJob(ctx: JobContext, id: string, opts: { rollback?: boolean } = {}): Promise<JobRecord> {
  const dir = jobDir(trainingDir(ctx), id);
  const rec = readJobRecord(dir);
  if (!isActive(rec)) throw new UsageError(`job ${id} is not running (it is ${rec.state})`);
  updateJobRecord(dir, (r) => ({ ...r, state: 'cancelled', endedAt: Date.now(), error: 'cancelled' }));
  try {
    if (rec.handle) await launcherFor(rec.targetKind).cancel(rec.handle, launchedJob(ctx, rec));
  } catch (err) {
    // Still running: the record says so again.
    updateJobRecord(dir, (r) => ({ ...r, state: rec.state, endedAt: rec.endedAt, error: rec.error }));
    throw err;
  }
  const rolledBack = opts.rollback === false ? null : rollBackServed(ctx, rec);
  const next = updateJobRecord(dir, (r) => ({ ...r, state: 'cancelled', endedAt: Date.now(), error: rolledBack ? `cancelled; ${rolledBack}` : 'cancelled' }));
  if (next.kind !== 'serve') setPhaseJob(ctx, next.phase, next.kind, (r) => (r.job === id ? { ...r, state: 'cancelled', endedAt: Date.now(), error: `job ${id} cancelled` } : r));
  return next;
}
