import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { rollbackModelWhile } from '../../config/modelRegistry';
import type { TrainerBackend } from '../../config/trainingSchema';
import { errorMessage, RuntimeFailure } from '../../errors';
import { registerTrainedModel } from '../phases/trainedModel';
import { trainingDir, type JobContext, type JobHooks } from './jobContext';
import { launchedJob } from './jobQueries';
import { jobDir, readJobRecord, updateJobRecord, type JobRecord } from './jobRecord';
import { JobSpecSchema } from './jobSpec';
import type { JobExit, PortForward } from './launcher';
import { launcherFor } from './launchers';

/**
 * A serve job's own steps: once it serves, forward its endpoint here and
 * register the version it serves; once it stops, take its model back to the
 * version before it.
 */

/** The backend a training job ran (its bundle's job.yaml), so its result is served by the same one. */
export function backendOfJob(ctx: JobContext, id: string): TrainerBackend | undefined {
  try {
    const spec = JobSpecSchema.parse(parseYaml(readFileSync(path.join(jobDir(trainingDir(ctx), id), 'bundle', 'job.yaml'), 'utf8')));
    return spec.model.backend;
  } catch {
    return undefined;
  }
}

/** A serve job announced its endpoint: forward it here and register the version it serves. */
export async function onServing(ctx: JobContext, dir: string, rec: JobRecord, url: string, hooks: JobHooks, onFailed?: (err: unknown) => void): Promise<PortForward | null> {
  const job = launchedJob(ctx, rec);
  const port = Number(new URL(url).port);
  // A reattach forwards to the same local port, so the registered endpoint stays valid.
  const localPort = rec.serveUrl ? Number(new URL(rec.serveUrl).port) : undefined;
  try {
    const forward = await launcherFor(rec.targetKind).forwardPort(rec.handle!, job, port, localPort);
    let registered: JobRecord['registered'] = rec.registered;
    // A reattach that got its old endpoint back keeps the registration as it is (a rollback since stays rolled back).
    if (rec.model && rec.serves && !(registered && rec.serveUrl === forward.url)) {
      const adapter = job.spec.model.adapter ? path.relative(ctx.loaded.labDir, path.join(dir, 'bundle', job.spec.model.adapter)).split(path.sep).join('/') : undefined;
      // A version served again (a new endpoint for the same adapter) takes its new settings.
      registerTrainedModel(
        ctx.loaded,
        rec.model,
        {
          version: rec.serves,
          baseUrl: forward.url,
          model: job.spec.model.servedName ?? rec.id,
          ...(adapter ? { adapter } : {}),
          phase: rec.phase,
          job: rec.serves === rec.id ? rec.id : rec.serves,
        },
        { update: true },
      );
      registered = { model: rec.model, version: rec.serves };
      hooks.log?.(`model "${rec.model}" version ${rec.serves} is active: served at ${forward.url} (job ${rec.id})`);
    }
    const next = updateJobRecord(dir, (r) => ({ ...r, serveUrl: forward.url, registered }));
    hooks.onRecord?.(next);
    return forward;
  } catch (err) {
    hooks.log?.(`job ${rec.id}: serving at ${url}, but forwarding or registering failed: ${errorMessage(err)}`);
    onFailed?.(new RuntimeFailure(`forwarding or registering ${url} failed: ${errorMessage(err)}`));
    return null;
  }
}

/**
 * A serve job ended without being cancelled: it no longer serves, whatever its exit status, so its record says failed
 * with why, and its model goes back to the version before it when it was the active one.
 */
export function endServe(ctx: JobContext, dir: string, exit: JobExit, result: Record<string, unknown> | null, fetchError: string | null, hooks: JobHooks): JobRecord {
  const before = readJobRecord(dir);
  const why =
    (typeof result?.error === 'string' && result.error) ||
    exit.detail ||
    (exit.state === 'succeeded' ? 'the server was stopped from outside Rollout Lab' : `the server exited with status ${exit.exitCode ?? 'unknown'}`) + (fetchError ? ` (${fetchError})` : '');
  const rolledBack = rollBackServed(ctx, before);
  const error = `stopped serving: ${why} — see ${path.join(dir, 'job.log')}${rolledBack ? `; ${rolledBack}` : ''}`;
  const rec = updateJobRecord(dir, (r) => ({ ...r, state: 'failed', endedAt: Date.now(), error, result }));
  hooks.onRecord?.(rec);
  hooks.log?.(`job ${rec.id}: failed — ${error}`);
  return rec;
}

/**
 * A serve job that stops serving takes its model back past the versions it served (the one it registered, and those
 * the online loop registered at its endpoint since) to the version active before them, or lab.json's settings, when
 * one of them is the active one; what happened, for the user, or null when nothing changed.
 */
export function rollBackServed(ctx: JobContext, rec: JobRecord): string | null {
  if (rec.kind !== 'serve' || !rec.registered || !rec.serveUrl) return null;
  const { model } = rec.registered;
  const entry = rollbackModelWhile(ctx.loaded.labDir, model, (v) => v.baseUrl === rec.serveUrl);
  return entry ? `model "${model}" rolled back to ${entry.active ? `version ${entry.active}` : "lab.json's settings"}` : null;
}
