import path from 'node:path';
import type { PhaseConfig } from '../../config/trainingSchema';
import { errorMessage, UsageError } from '../../errors';
import type { Lab } from '../../lab/lab';
import { runRollouts } from '../../rollout/runner';
import type { WorkersProgress } from '../workers/coordinator';
import { findPhase } from '../phases/phases';
import {
  emptyPhaseRecord,
  finishedRecord,
  pipelineStateFile,
  readPipelineState,
  runningRecord,
  setRunningHere,
  writePhaseRecord,
  type PhaseRecord,
  type PhaseResult,
} from '../phases/pipelineState';
import { exportPhaseData, preflight, simulatedOnlyReference, SIMULATED_USE, usesSimulatedByDefault, withSimulated } from './phaseData';

/**
 * Runs the lab's pipeline phases here, each on its own; their state lives in
 * pipeline.json. The GPU phases stop at exported, checked data: the trained
 * model comes back through a training job or registerTrainedModel, which makes
 * it the model the next rollouts use.
 */

export interface RunPhaseOptions {
  signal?: AbortSignal;
  log?: (line: string) => void;
  /** A gather phase: run fewer tasks or samples than the phase declares (a quick try). */
  limit?: number;
  samples?: number;
  /** Called after each change of the phase's record (the Training view updates live). */
  onUpdate?: (rec: PhaseRecord) => void;
  /** A data phase: also use simulated rollouts, whatever the phase's own includeSimulated says. */
  includeSimulated?: boolean;
  /** How this machine starts the CLI, for a gather phase whose rollouts run over workers (its "workers"). */
  workerCli?: { cli: string[]; env?: Record<string, string> };
}

/**
 * Runs one phase now and returns its final record. It never throws for a
 * failure of the phase itself (the record says failed, with the error); it
 * throws for an unknown phase or one already running in another process.
 */
export async function runPhase(lab: Lab, name: string, opts: RunPhaseOptions = {}): Promise<PhaseRecord> {
  const phase = withSimulated(lab, findPhase(lab.loaded.config, name), opts);
  const file = pipelineStateFile(lab.loaded);
  const prev = readPipelineState(file).phases[name];
  if (prev?.state === 'running') {
    throw new UsageError(`phase "${name}" is already running (pid ${prev.pid ?? '?'}${prev.host ? ` on ${prev.host}` : ''}) — wait for it, or stop that process first`);
  }
  let rec = runningRecord(prev?.kind === phase.kind ? prev : emptyPhaseRecord(name, phase.kind));
  const save = (next: PhaseRecord): void => {
    rec = next;
    writePhaseRecord(file, rec);
    opts.onUpdate?.(rec);
  };
  setRunningHere(file, name, true);
  const log = opts.log ?? ((): void => undefined);
  try {
    save(rec);
    log(`phase ${name} (${phase.kind}): started`);
    if (usesSimulatedByDefault(lab, phase, opts)) log(`phase ${name}: ${SIMULATED_USE}`);
    const result = await runKind(lab, phase, rec, opts, save);
    if (opts.signal?.aborted || result.error === 'cancelled') save(finishedRecord(rec, 'cancelled', { ...result, error: 'cancelled' }));
    else save(finishedRecord(rec, result.error ? 'failed' : 'done', result));
  } catch (err) {
    save(opts.signal?.aborted ? finishedRecord(rec, 'cancelled', { error: 'cancelled' }) : finishedRecord(rec, 'failed', { error: errorMessage(err) }));
  } finally {
    setRunningHere(file, name, false);
  }
  log(`phase ${name}: ${rec.state}${rec.error ? ` — ${rec.error}` : ''}`);
  return rec;
}

async function runKind(lab: Lab, phase: PhaseConfig, rec: PhaseRecord, opts: RunPhaseOptions, save: (r: PhaseRecord) => void): Promise<PhaseResult> {
  switch (phase.kind) {
    case 'gather':
      return gather(lab, phase, rec, opts, save);
    case 'sft':
    case 'grpo':
      return exportPhaseData(lab, phase, opts);
    case 'bandit':
      return banditPhase(lab, phase, opts);
    case 'apo':
      return apoPhase(lab, phase, opts);
  }
}

async function gather(lab: Lab, phase: PhaseConfig, rec: PhaseRecord, opts: RunPhaseOptions, save: (r: PhaseRecord) => void): Promise<PhaseResult> {
  const cfg = lab.loaded.config;
  const samples = opts.samples ?? phase.samples ?? cfg.training.groupSize;
  const limit = opts.limit ?? phase.limit;
  const ds = await lab.loadDataset();
  const tasks = lab.selectTasks(ds, { split: phase.split, limit, seed: cfg.runner.seed });
  opts.log?.(`phase ${phase.name}: ${tasks.length} tasks × ${samples} samples (${phase.split} split)${lab.simulated ? ' — SIMULATED endpoint' : ''}`);
  let runId: string | null = null;
  const progress = (done: number, succeeded: number, failed: number, total: number): void =>
    save({ ...rec, runId, counts: { rollouts: done, succeeded, failed, planned: total } });
  if (phase.workers) return gatherOnWorkers(lab, phase, phase.workers, { samples, limit }, opts, (id, p) => ((runId = id), progress(p.finished, p.succeeded, p.failed, p.planned)));
  const env = await lab.environment(ds.tasks);
  const result = await runRollouts(env, {
    tasks,
    samples,
    concurrency: cfg.runner.concurrency,
    params: { command: 'pipeline', phase: phase.name, split: phase.split, limit: limit ?? null, samples, seed: cfg.runner.seed },
    seed: cfg.runner.seed,
    signal: opts.signal,
    onStart: (info) => {
      runId = info.runId;
      progress(0, 0, 0, info.total);
    },
    onProgress: (p) => progress(p.done, p.succeeded, p.failed, p.total),
  });
  return gathered(lab, result.runId, result.rollouts, { tasks: tasks.length, samples }, result.cancelled);
}

/** A gather phase's result from the rollouts it ran. */
function gathered(lab: Lab, runId: string, rollouts: ReadonlyArray<{ status: string; finalReward: number | null }>, plan: { tasks: number; samples: number }, cancelled: boolean, error?: string): PhaseResult {
  const succeeded = rollouts.filter((r) => r.status === 'succeeded').length;
  const rewards = rollouts.map((r) => r.finalReward).filter((x): x is number => x !== null);
  const out: Record<string, number> = { rollouts: rollouts.length, succeeded, failed: rollouts.length - succeeded, ...plan };
  if (rewards.length) out.meanReward = rewards.reduce((a, b) => a + b, 0) / rewards.length;
  return {
    runId,
    counts: out,
    produced: { kind: 'data', id: runId },
    // The simulator is a test double: what it gathers demonstrates the pipeline and teaches a model nothing real.
    ...(lab.simulated
      ? {
          note: simulatedOnlyReference(lab)
            ? 'SIMULATED endpoint: these rollouts are a demo of the pipeline, not training data; while every model is simulated the reference pipeline\'s data phases use them (once a model has a baseUrl they are left out)'
            : 'SIMULATED endpoint: these rollouts are a demo of the pipeline, not training data; the data phases leave them out unless they set "includeSimulated": true',
        }
      : {}),
    ...(cancelled ? { error: 'cancelled' } : error ? { error } : {}),
  };
}

/**
 * A gather phase whose rollouts run over workers (its "workers": `run
 * --workers COUNT --on ON`), each a process of the CLI the caller names; the
 * phase is done when every planned rollout stands, and failed with the
 * workers that did not end well otherwise.
 */
async function gatherOnWorkers(
  lab: Lab,
  phase: PhaseConfig,
  workers: NonNullable<PhaseConfig['workers']>,
  plan: { samples: number; limit: number | undefined },
  opts: RunPhaseOptions,
  onProgress: (runId: string, p: WorkersProgress) => void,
): Promise<PhaseResult> {
  const cfg = lab.loaded.config;
  if (!opts.workerCli) return { error: `phase ${phase.name} runs on workers, and this caller cannot start them: run it with \`rollout-lab pipeline run ${phase.name}\` or from VS Code` };
  const { runOnWorkers, workerPlace } = await import('../workers');
  const workspace = lab.loaded.workspaceDir;
  let runId = '';
  const r = await runOnWorkers(lab, {
    command: 'run',
    plan: { command: 'run', split: phase.split, limit: plan.limit, samples: plan.samples, seed: cfg.runner.seed, concurrency: cfg.runner.concurrency },
    count: workers.count,
    place: workerPlace(workers.on, cfg.workers),
    cli: opts.workerCli.cli,
    env: opts.workerCli.env,
    args: ['--concurrency', String(cfg.runner.concurrency)],
    workspace,
    signal: opts.signal,
    onStarted: (run, group) => {
      runId = run.runId;
      opts.log?.(`phase ${phase.name}: run ${run.runId} on ${group.label}`);
    },
    onLine: (k, line) => opts.log?.(`phase ${phase.name}: [worker ${k}/${workers.count}] ${line}`),
    onProgress: (p) => onProgress(runId, p),
  });
  const rollouts = lab.store.listRollouts({ runId: r.run.runId, superseded: false, limit: Number.MAX_SAFE_INTEGER }).rollouts.filter((x) => x.status !== 'running');
  const bad = r.workers.filter((w) => w.state !== 'succeeded');
  const error = r.end.done ? undefined : `not every rollout stands: ${bad.map((w) => `worker ${w.shard}/${workers.count} ${w.state} (${w.detail ?? ''}), rerun with ${r.group.rerun(w.shard)}`).join('; ') || 'resume the run'}`;
  return gathered(lab, r.run.runId, rollouts, { tasks: r.run.tasks, samples: plan.samples }, r.cancelled, error);
}

async function banditPhase(lab: Lab, declared: PhaseConfig, opts: RunPhaseOptions): Promise<PhaseResult> {
  // The phase's own split (train by default): validation rollouts stay out of the policy, as they do of SFT and GRPO data.
  const phase: PhaseConfig = {
    name: declared.name,
    kind: 'bandit',
    split: declared.split,
    credit: 'equal',
    gamma: 0.9,
    hyperparameters: {},
    includeSimulated: withSimulated(lab, declared, opts).includeSimulated,
    includePenalised: declared.includePenalised,
  };
  const failed = await preflight(lab, phase, 'bandit');
  if (failed?.error) return failed;
  if (opts.signal?.aborted) return { error: 'cancelled' };
  const { trainBanditPolicy } = await import('../bandit/policyStore');
  const info = await trainBanditPolicy(lab.store, lab.loaded.config, lab.loaded.labDir, { split: phase.split, includeSimulated: phase.includeSimulated, includePenalised: phase.includePenalised });
  const counts: Record<string, number> = { records: info.records };
  if (info.meanReward !== null) counts.meanReward = info.meanReward;
  return {
    checks: failed?.checks ?? [],
    counts,
    files: [path.relative(lab.loaded.labDir, path.resolve(lab.loaded.labDir, info.file)).split(path.sep).join('/')],
    produced: { kind: 'policy', id: info.version },
    note: `${usesSimulatedByDefault(lab, declared, opts) ? `${SIMULATED_USE}; ` : ''}policy ${info.version} (${info.algorithm}) is active; the Supervisor uses it when bandit.mode is "advise" or "decide"`,
  };
}

async function apoPhase(lab: Lab, phase: PhaseConfig, opts: RunPhaseOptions): Promise<PhaseResult> {
  const agents = phase.agents ?? [];
  if (agents.length === 0) return { error: `apo phase "${phase.name}" names no agents — add "agents": ["AgentName"] to it in training.phases` };
  const failed = await preflight(lab, phase, 'apo');
  if (failed?.error) return failed;
  const { optimizePrompt } = await import('../apo/optimizePrompt');
  const { applyPrompt } = await import('../apo/applyPrompt');
  const versions: string[] = [];
  const counts: Record<string, number> = {};
  const files: string[] = [];
  for (const agent of agents) {
    if (opts.signal?.aborted) return { error: 'cancelled' };
    const result = await optimizePrompt(lab, { agent, includeSimulated: phase.includeSimulated, signal: opts.signal, onRound: (r) => opts.log?.(`phase ${phase.name}: ${agent} round ${r.round}`) });
    if (opts.signal?.aborted) return { error: 'cancelled' };
    counts[`${agent}.rounds`] = result.rounds.length;
    if (result.best.score !== null) counts[`${agent}.score`] = result.best.score;
    if (result.best.version !== result.baseline.version) {
      const applied = await applyPrompt(lab, agent, result.best.text);
      versions.push(applied.version);
      files.push(path.relative(lab.loaded.labDir, applied.file).split(path.sep).join('/'));
    } else {
      versions.push(result.baseline.version);
    }
  }
  return {
    checks: failed?.checks ?? [],
    counts,
    files,
    produced: { kind: 'prompt', id: versions.join(',') },
    note: 'the best prompt of each agent is applied; the next rollouts record it as a new prompt version',
  };
}
