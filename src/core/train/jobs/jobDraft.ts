import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { PhaseConfig, TargetConfig, TrainerBackend } from '../../config/trainingSchema';
import { readRegistry } from '../../config/modelRegistry';
import { RuntimeFailure, UsageError } from '../../errors';
import { checkHyperparameters, referenceHyperparameters, writeBundle } from './jobBundle';
import { resolvePhase, resolveTarget, type JobContext } from './jobContext';
import type { JobRecord } from './jobRecord';
import { JOB_API_VERSION, type JobKind, type JobSpec } from './jobSpec';
import type { LaunchPlan, PreparedJob } from './launcher';
import { withLocalPython, type LocalPythonCheck } from './launchers/localPython';
import { launcherFor } from './launchers';

/**
 * Drafting a job before it launches: which phase, target, base model and
 * hyper-parameters; the exported data it trains on (pre-flight first); the
 * secrets it gets; the bundle and spec written for its launcher.
 */

type HyperValue = number | string | boolean | string[];

export interface TrainOptions {
  /** A phase name of the pipeline, or a kind (sft, grpo, bandit, apo: the first phase of that kind). */
  phase: string;
  /** A key of training.targets, or a kind (local, ssh, skypilot, k8s, slurm). */
  target?: string;
  baseModel?: string;
  /** The trainer's backend for this job (default training.trainer.backend; transformers is the only one). */
  backend?: TrainerBackend;
  /** Over the phase's own hyper-parameters (which are over the reference defaults). */
  hyperparameters?: Record<string, HyperValue>;
  /** After training, serve the result on the target and register it as the model's active version (default true). */
  serve?: boolean;
  /** Environment values the job gets (from SecretStorage in the editor); by default this process's, for the names in training.trainer.secrets. */
  secrets?: Record<string, string>;
  /** Also train on simulated rollouts, whatever the phase's own includeSimulated says. */
  includeSimulated?: boolean;
  /** Train on this run's rollouts only (e.g. the served student's, not the teacher's that gathered the SFT data). */
  runId?: string;
  signal?: AbortSignal;
}

export interface DryRun {
  spec: JobSpec;
  plan: LaunchPlan;
  /** The exported data's counts (what the job would train on). */
  data: Record<string, number>;
  /** A local target: the python the job would run and whether it has torch (a dry run needs none); null for the other targets. */
  python: LocalPythonCheck | null;
}

export interface ServeRequest {
  phase: PhaseConfig;
  baseModel: string;
  target?: string;
  /** The adapter to serve (a folder on this machine); null: the base model alone. */
  adapter: string | null;
  /** The registry version the served policy becomes (a training job's id, or the serve job's own). */
  version: string | null;
  secrets?: Record<string, string>;
  /** The backend the adapter was trained with (default training.trainer.backend). */
  backend?: TrainerBackend;
}

export interface JobDraft {
  id: string;
  kind: JobKind;
  phase: PhaseConfig;
  model: string | null;
  baseModel: string;
  backend: TrainerBackend;
  target: { name: string; target: TargetConfig };
  hyperparameters: Record<string, HyperValue>;
  /** bundle-relative → source. */
  files: Record<string, string>;
  train: string | null;
  manifest: string | null;
  adapter: string | null;
  data: Record<string, number>;
  secrets: Record<string, string>;
  /** A local target's python, as checked (a dry run drafts one without torch). */
  python?: LocalPythonCheck;
}

/** The phase kinds that train on a target as a job; the others (gather, bandit, apo) run on this machine. */
export const GPU_KINDS = new Set(['sft', 'grpo']);

export function newJobId(phaseName: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15).toLowerCase();
  const base = phaseName.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 30) || 'job';
  return `${base}-${stamp}-${randomBytes(2).toString('hex')}`;
}

function secretsFor(ctx: JobContext, given: Record<string, string> | undefined, log: (l: string) => void): Record<string, string> {
  const names = ctx.loaded.config.training.trainer.secrets;
  const out: Record<string, string> = {};
  for (const name of names) {
    const v = given?.[name] ?? process.env[name];
    if (v) out[name] = v;
    else log(`note: ${name} is not set (Rollout Lab: Set API Key, or export it) — the job runs without it`);
  }
  return out;
}

function hyperparametersFor(kind: JobKind, phase: PhaseConfig, given: Record<string, HyperValue> | undefined): Record<string, HyperValue> {
  const hp = { ...phase.hyperparameters, ...(given ?? {}) };
  checkHyperparameters(kind, hp);
  return hp;
}

/** A phase's settings that also mean something to a serve job (its online GRPO updates). */
function pickKnown(kind: JobKind, hp: Record<string, HyperValue>): Record<string, HyperValue> {
  const known = referenceHyperparameters(kind);
  return Object.fromEntries(Object.entries(hp).filter(([k]) => k in known));
}

/** The adapter of the model's active version, when it has one on this machine: a new job continues from it. */
export function activeAdapter(ctx: JobContext, model: string | undefined): string | null {
  if (!model) return null;
  const entry = readRegistry(ctx.loaded.labDir).models[model];
  const v = entry?.versions.find((x) => x.version === entry.active);
  if (!v?.adapter) return null;
  const abs = path.resolve(ctx.loaded.labDir, v.adapter);
  return existsSync(abs) ? abs : null;
}

function specOf(ctx: JobContext, d: JobDraft): JobSpec {
  const { trainer } = ctx.loaded.config.training;
  const t = d.target.target;
  return {
    apiVersion: JOB_API_VERSION,
    kind: 'TrainingJob',
    id: d.id,
    phase: { name: d.phase.name, kind: d.kind },
    model: {
      base: d.baseModel,
      backend: d.backend,
      config: trainer.modelConfig ?? null,
      adapter: d.adapter,
      dtype: 'auto',
      servedName: d.kind === 'serve' ? d.id : null,
    },
    hyperparameters: d.hyperparameters,
    data: { train: d.train, manifest: d.manifest },
    output: { dir: 'out' },
    resources: { gpus: t.gpus, gpuType: t.gpuType ?? null, cpus: t.cpus ?? null, memoryGb: t.memoryGb ?? null },
    // A Slurm compute node is shared with other jobs: any free port there (the serving event says which).
    serve: d.kind === 'serve' ? { host: t.kind === 'local' || t.kind === 'ssh' ? '127.0.0.1' : '0.0.0.0', port: t.kind === 'local' || t.kind === 'slurm' ? 0 : 8000 } : null,
    env: Object.keys(d.secrets).sort(),
    command: ['python3', '-m', 'rollout_trainer', d.kind, '--spec', 'job.yaml'],
  };
}

/**
 * Pre-flight and export of a GPU phase's data; a failed pre-flight is an error that lists the checks. A
 * local target needs a python with torch, unless `requireTorch` is false (a dry run, which starts nothing).
 */
export async function draftTraining(ctx: JobContext, opts: TrainOptions, log: (l: string) => void, draft: { requireTorch?: boolean } = {}): Promise<JobDraft> {
  const phase = resolvePhase(ctx, opts.phase);
  if (!GPU_KINDS.has(phase.kind)) throw new UsageError(`phase "${phase.name}" is a ${phase.kind} phase, which runs on this machine — run it with \`rollout-lab pipeline run ${phase.name}\``);
  const kind = phase.kind as 'sft' | 'grpo';
  const { python, ...target } = await withLocalPython(resolveTarget(ctx, opts.target, phase), log, draft);
  const hyperparameters = hyperparametersFor(kind, phase, opts.hyperparameters);
  log(`phase ${phase.name} (${kind}): pre-flight checks and export`);
  const exported = await ctx.exportPhaseData(phase, { signal: opts.signal, ...(opts.includeSimulated ? { includeSimulated: true } : {}), ...(opts.runId ? { runId: opts.runId } : {}) });
  if (exported.error) throw new UsageError(`phase ${phase.name}: ${exported.error}`);
  const [dataRel, manifestRel] = exported.files ?? [];
  if (!dataRel) throw new RuntimeFailure(`phase ${phase.name}: the export wrote no data file`);
  const id = newJobId(phase.name);
  const files: Record<string, string> = { [`data/${path.basename(dataRel)}`]: path.resolve(ctx.loaded.labDir, dataRel) };
  if (manifestRel) files[`data/${path.basename(manifestRel)}`] = path.resolve(ctx.loaded.labDir, manifestRel);
  const adapterSrc = activeAdapter(ctx, phase.model);
  if (adapterSrc) files.adapter = adapterSrc;
  return {
    id,
    kind,
    phase,
    model: phase.model ?? null,
    baseModel: opts.baseModel ?? phase.baseModel ?? ctx.loaded.config.training.trainer.baseModel,
    backend: opts.backend ?? ctx.loaded.config.training.trainer.backend,
    target,
    hyperparameters,
    files,
    train: `data/${path.basename(dataRel)}`,
    manifest: manifestRel ? `data/${path.basename(manifestRel)}` : null,
    adapter: adapterSrc ? 'adapter' : null,
    data: (exported.counts ?? {}) as Record<string, number>,
    secrets: secretsFor(ctx, opts.secrets, log),
    ...(python ? { python } : {}),
  };
}

/** A serve job for an adapter (or the base model alone) under the given id. */
export async function draftServe(ctx: JobContext, id: string, req: ServeRequest, log: (l: string) => void): Promise<JobDraft> {
  return {
    id,
    kind: 'serve',
    phase: req.phase,
    model: req.phase.model ?? null,
    baseModel: req.baseModel,
    backend: req.backend ?? ctx.loaded.config.training.trainer.backend,
    target: await withLocalPython(resolveTarget(ctx, req.target, req.phase), log),
    hyperparameters: hyperparametersFor('serve', { ...req.phase, hyperparameters: pickKnown('serve', req.phase.hyperparameters) }, undefined),
    files: req.adapter ? { adapter: req.adapter } : {},
    train: null,
    manifest: null,
    adapter: req.adapter ? 'adapter' : null,
    data: {},
    secrets: secretsFor(ctx, req.secrets, log),
  };
}

/** Writes the draft's bundle (spec and files) into the job's folder: what its launcher runs. */
export function prepare(ctx: JobContext, d: JobDraft, dir: string): PreparedJob {
  const spec = writeBundle(path.join(dir, 'bundle'), { spec: specOf(ctx, d), files: d.files });
  return { spec, bundleDir: path.join(dir, 'bundle'), jobDir: dir, targetName: d.target.name, target: d.target.target, secrets: d.secrets };
}

/**
 * What `train` would do, run nothing: the spec and the target's exact commands (the data is exported to see
 * its counts). It needs no torch: on a local target without it, the plan shows the python it would run and
 * `python` says what that python lacks.
 */
export async function dryRunTraining(ctx: JobContext, opts: TrainOptions, log: (l: string) => void = () => undefined): Promise<DryRun> {
  const d = await draftTraining(ctx, opts, log, { requireTorch: false });
  const dir = mkdtempSync(path.join(tmpdir(), 'rollout-lab-dry-run-'));
  try {
    const job = prepare(ctx, d, dir);
    return { spec: job.spec, plan: launcherFor(job.target.kind).plan(job), data: d.data, python: d.python ?? null };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The record of a drafted job about to launch. */
export function newRecord(d: JobDraft): JobRecord {
  return {
    id: d.id,
    kind: d.kind,
    phase: d.phase.name,
    model: d.model,
    baseModel: d.baseModel,
    targetName: d.target.name,
    targetKind: d.target.target.kind,
    state: 'launching',
    createdAt: Date.now(),
    endedAt: null,
    handle: null,
    exitCode: null,
    error: null,
    hyperparameters: d.hyperparameters,
    data: d.data,
    registered: null,
    serveJob: null,
    serves: null,
    serveOnSuccess: false,
    serveUrl: null,
    result: null,
  };
}
