import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { errorMessage, RuntimeFailure, UsageError } from '../../errors';
import type { Lab } from '../../lab/lab';
import { runRollouts } from '../../rollout/runner';
import { EmptyExportError } from '../export/emptyExport';
import { exportTrainingData } from '../export/exportData';
import { readRegistry } from '../../config/modelRegistry';
import { registerTrainedModel } from '../phases/trainedModel';
import { jobDir } from '../jobs/jobRecord';
import { resolvePhase, trainingDir, type JobContext, type JobHooks } from '../jobs/jobContext';
import { activeAdapter } from '../jobs/jobDraft';
import { cancelJob, startServe } from '../jobs/jobLifecycle';
import { labJobContext } from './labJobContext';

/**
 * The online loop of the reference study: the phase's model is served by
 * python-trainer (its serve job), the next rollouts call it, their groups go
 * to its control API as one GRPO update, and the new version it serves
 * becomes the model's active version before the next round.
 */

export interface OnlineOptions {
  /** A grpo phase (name or kind). */
  phase: string;
  target?: string;
  baseModel?: string;
  /** Rounds of rollouts → update. */
  rounds: number;
  /** Train on the rounds' rollouts even when some models are simulated (the phase's includeSimulated does the same). */
  includeSimulated?: boolean;
  /** Tasks per round (each run `samples` times: a GRPO group each). */
  tasks?: number;
  samples?: number;
  secrets?: Record<string, string>;
  signal?: AbortSignal;
  /** Leave the policy server running after the last round (default: it is stopped, the model goes back to the version before the loop, and the last version's weights stay saved). */
  keepServing?: boolean;
}

export interface OnlineRound {
  round: number;
  runId: string;
  rollouts: number;
  meanReward: number | null;
  records: number;
  /** The version served after this round's update. */
  version: string;
  /** Whether the update changed the policy (false: no group carried a signal). */
  updated: boolean;
  metrics: Record<string, number>;
}

export interface OnlineResult {
  serveJob: string;
  serveUrl: string;
  rounds: OnlineRound[];
  /** Whether the policy server still runs (keepServing). */
  serving: boolean;
  /** What happened to the server and how to serve the last version again, in one line. */
  note: string;
}

interface TrainAnswer {
  version: string;
  updated?: boolean;
  note?: string;
  adapter?: string;
  metrics?: Record<string, unknown>;
}

/**
 * Runs `rounds` rounds. `openLab` opens the workspace afresh (each round's
 * rollouts must see the version the last update registered); it is closed
 * after the round.
 */
export async function onlineTraining(lab: Lab, opts: OnlineOptions, openLab: () => Promise<Lab>, hooks: JobHooks & { onRound?: (r: OnlineRound) => void } = {}): Promise<OnlineResult> {
  const log = hooks.log ?? ((): void => undefined);
  const jobs = labJobContext(lab);
  const phase = resolvePhase(jobs, opts.phase);
  if (phase.kind !== 'grpo') throw new UsageError(`online training updates a grpo phase; "${phase.name}" is ${phase.kind}`);
  if (!phase.model) throw new UsageError(`phase "${phase.name}" names no "model" — the served policy must become a version of the model its agents use`);
  const cfg = lab.loaded.config;
  const samples = opts.samples ?? phase.samples ?? cfg.training.groupSize;
  const perRound = opts.tasks ?? 4;
  const serve = await startServe(
    jobs,
    { phase, baseModel: opts.baseModel ?? phase.baseModel ?? cfg.training.trainer.baseModel, target: opts.target, adapter: activeAdapter(jobs, phase.model), version: null, secrets: opts.secrets },
    hooks,
  );
  const serveUrl = serve.serveUrl!;
  const control = serveUrl.replace(/\/v1\/?$/, '');
  const outDir = path.join(jobDir(trainingDir(jobs), serve.id), 'online');
  mkdirSync(outDir, { recursive: true });
  const rounds: OnlineRound[] = [];
  try {
    for (let round = 1; round <= opts.rounds && !opts.signal?.aborted; round++) {
      const roundLab = await openLab();
      try {
        const ds = await roundLab.loadDataset();
        const all = roundLab.selectTasks(ds, { split: phase.split === 'all' ? 'all' : phase.split, seed: cfg.runner.seed });
        if (!all.length) throw new UsageError(`no ${phase.split} tasks in ${ds.file}`);
        const tasks = Array.from({ length: Math.min(perRound, all.length) }, (_, i) => all[((round - 1) * perRound + i) % all.length]!);
        log(`online round ${round}/${opts.rounds}: ${tasks.length} tasks × ${samples} samples against ${serveUrl}`);
        const env = await roundLab.environment(ds.tasks);
        const run = await runRollouts(env, {
          tasks,
          samples,
          concurrency: cfg.runner.concurrency,
          params: { command: 'online', phase: phase.name, round, serveJob: serve.id, samples },
          seed: cfg.runner.seed + round,
          signal: opts.signal,
        });
        if (opts.signal?.aborted) break;
        const file = path.join(outDir, `round-${round}.jsonl`);
        let records: unknown[];
        try {
          await exportTrainingData(roundLab.store, cfg, {
              format: 'rl',
              runId: run.runId,
              split: phase.split,
              includeSimulated: opts.includeSimulated === true || phase.includeSimulated,
              includePenalised: phase.includePenalised,
              credit: phase.credit,
              gamma: phase.gamma,
              ...(phase.agents ? { agents: phase.agents } : {}),
            }, file);
          records = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as unknown);
        } catch (err) {
          if (err instanceof EmptyExportError) throw new RuntimeFailure(`online round ${round}: ${err.message}`);
          throw err;
        }
        const answer = await postTrain(control, records, opts.signal);
        // An update without signal (no group with differing rewards) keeps the version it had.
        // The version's weights are saved on the server (bundle-relative), so it can be served again after this server stops.
        const adapter = answer.adapter ? path.relative(lab.loaded.labDir, path.join(jobDir(trainingDir(jobs), serve.id), 'bundle', answer.adapter)).split(path.sep).join('/') : undefined;
        if (answer.updated !== false) registerTrainedModel(lab.loaded, phase.model, { version: answer.version, baseUrl: serveUrl, model: answer.version, ...(adapter ? { adapter } : {}), phase: phase.name, job: serve.id });
        else log(`online round ${round}: no group had differing rewards; the policy stays ${answer.version}${answer.note ? ` (${answer.note})` : ''}`);
        const rewards = run.rollouts.map((r) => r.finalReward).filter((x): x is number => x !== null);
        const metrics = Object.fromEntries(Object.entries(answer.metrics ?? {}).filter(([, v]) => typeof v === 'number')) as Record<string, number>;
        const r: OnlineRound = {
          round,
          runId: run.runId,
          rollouts: run.rollouts.length,
          meanReward: rewards.length ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null,
          records: records.length,
          version: answer.version,
          updated: answer.updated !== false,
          metrics,
        };
        rounds.push(r);
        hooks.onRound?.(r);
        log(`online round ${round}: mean reward ${r.meanReward?.toFixed(3) ?? '-'} over ${r.rollouts} rollouts; ${r.records} calls trained on; model "${phase.model}" now ${r.version}`);
      } finally {
        await roundLab.close();
      }
    }
  } catch (err) {
    if (!opts.keepServing) await stopServer(jobs, serve.id, log);
    throw err;
  }
  const last = rounds.at(-1)?.version;
  if (opts.keepServing) {
    const note = `the policy keeps serving at ${serveUrl} (job ${serve.id}); rollout-lab jobs cancel ${serve.id} stops it`;
    return { serveJob: serve.id, serveUrl, rounds, serving: true, note };
  }
  const stopped = await stopServer(jobs, serve.id, log);
  const saved = last ? savedWeights(lab, phase.model, last) : null;
  const note = [
    `the policy server (job ${serve.id}) is stopped${stopped ? `; ${stopped}` : ''}`,
    saved ? `the weights of version ${last} are saved in ${saved}` : null,
    'pass --keep-serving to leave the server running and its last version active',
  ]
    .filter(Boolean)
    .join('; ');
  log(note);
  return { serveJob: serve.id, serveUrl, rounds, serving: false, note };
}

/** Where a registered version's weights are, relative to the lab folder (null when it has none). */
function savedWeights(lab: Lab, model: string, version: string): string | null {
  return readRegistry(lab.loaded.labDir).models[model]?.versions.find((v) => v.version === version)?.adapter ?? null;
}

/**
 * Stops the serve job this loop started (its model goes back to the version before the loop: a stopped server serves
 * nothing) and says how the model was rolled back; a failure to stop is said, not thrown (the rounds' results stand).
 */
async function stopServer(jobs: JobContext, id: string, log: (line: string) => void): Promise<string | null> {
  try {
    const rec = await cancelJob(jobs, id);
    return rec.error?.replace(/^cancelled;?\s*/, '') || null;
  } catch (err) {
    log(`note: stopping the policy server (job ${id}) failed: ${errorMessage(err)} — stop it with rollout-lab jobs cancel ${id}`);
    return null;
  }
}

async function postTrain(control: string, records: unknown[], signal?: AbortSignal): Promise<TrainAnswer> {
  const key = process.env.ROLLOUT_TRAINER_API_KEY;
  let res: Response;
  try {
    res = await fetch(`${control}/control/train`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
      body: JSON.stringify({ records }),
      ...(signal ? { signal } : {}),
    });
  } catch (err) {
    throw new RuntimeFailure(`the policy server at ${control} did not answer /control/train: ${errorMessage(err)} — is its serve job still running (rollout-lab jobs)?`);
  }
  const text = await res.text();
  if (!res.ok) throw new RuntimeFailure(`the policy server refused the update (HTTP ${res.status}): ${text.slice(0, 500)}`);
  const body = JSON.parse(text) as TrainAnswer;
  if (typeof body.version !== 'string' || !body.version) throw new RuntimeFailure(`the policy server's /control/train answer names no version: ${text.slice(0, 200)}`);
  return body;
}
