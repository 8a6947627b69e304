import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { PhaseConfig, TargetConfig, TrainerBackend } from '../../config/trainingSchema';
import { TargetSchema } from '../../config/trainingSchema';
import { errorMessage, RuntimeFailure, UsageError } from '../../errors';
import type { Lab } from '../../lab/lab';
import { registerTrainedModel, exportPhaseData, findPhase, pipelineDir, pipelinePhases, pipelineStateFile, runPhase, type RunPhaseOptions } from '../pipeline/pipeline';
import { emptyPhaseRecord, readPipelineState, writePhaseRecord, type PhaseRecord } from '../pipeline/pipelineState';
import { readRegistry, rollbackModelWhile } from '../../config/modelRegistry';
import { checkHyperparameters, referenceHyperparameters, writeBundle } from './jobBundle';
import { isActive, jobDir, listJobRecords, readJobRecord, updateJobRecord, writeJobRecord, type JobRecord } from './jobRecord';
import { parse as parseYaml } from 'yaml';
import { JOB_API_VERSION, JobSpecSchema, type JobKind, type JobSpec } from './jobSpec';
import type { JobExit, LaunchPlan, PortForward, PreparedJob } from './launcher';
import { withLocalPython } from './launchers/localPython';
import { launcherFor } from './launchers';
import { parseTrainerEvent, type TrainerEvent } from './trainerEvents';

/**
 * Training jobs from the lab: pre-flight and export of a phase's data, the
 * job bundle and spec, launching on a target, following its log and events,
 * fetching what it produced and registering the trained model version so the
 * next rollouts use it. The CLI (`rollout-lab train`, `rollout-lab jobs`) and
 * the editor (Launch Training Phase…, the Training view) both call these.
 */

type HyperValue = number | string | boolean | string[];

export interface TrainOptions {
  /** A phase name of the pipeline, or a kind (sft, grpo, bandit, apo: the first phase of that kind). */
  phase: string;
  /** A key of training.targets, or a kind (local, ssh, skypilot, k8s). */
  target?: string;
  baseModel?: string;
  /** The trainer's backend for this job (default training.trainer.backend): tiny (torch only, a CPU) or transformers (+ peft, a GPU). */
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

export interface JobHooks {
  log?: (line: string) => void;
  /** A line of the job's own output (its log). */
  onLine?: (jobId: string, line: string) => void;
  onEvent?: (jobId: string, event: TrainerEvent) => void;
  /** The job's record changed (state, handle, result). */
  onRecord?: (rec: JobRecord) => void;
  /** A phase's record changed. */
  onPhase?: (rec: PhaseRecord) => void;
  /** Stops following (a job keeps running on its target; a serve job's port forward closes). */
  signal?: AbortSignal;
}

export interface TrainResult {
  /** The training job (sft, grpo); null for a phase that runs here (bandit, apo). */
  job: JobRecord | null;
  /** The serve job started for the result, when one was. */
  serve: JobRecord | null;
  phase: PhaseRecord;
}

export interface DryRun {
  spec: JobSpec;
  plan: LaunchPlan;
  /** The exported data's counts (what the job would train on). */
  data: Record<string, number>;
}

const GPU_KINDS = new Set(['sft', 'grpo']);

/** The phase a `--phase` value names: a phase name first, else the first phase of that kind. */
export function resolvePhase(lab: Lab, name: string): PhaseConfig {
  const phases = pipelinePhases(lab.loaded.config);
  const byName = phases.find((p) => p.name === name);
  if (byName) return byName;
  const byKind = phases.find((p) => p.kind === name);
  if (byKind) return byKind;
  return findPhase(lab.loaded.config, name);
}

/** The target a `--target` value names: a key of training.targets, else a kind (the first target of it, or its defaults). */
export function resolveTarget(lab: Lab, name: string | undefined, phase?: PhaseConfig): { name: string; target: TargetConfig } {
  const { targets, trainer } = lab.loaded.config.training;
  const wanted = name ?? phase?.target ?? trainer.target ?? 'local';
  if (targets[wanted]) return { name: wanted, target: targets[wanted]! };
  const ofKind = Object.entries(targets).find(([, t]) => t.kind === wanted);
  if (ofKind) return { name: ofKind[0], target: ofKind[1] };
  if (wanted === 'local') return { name: 'local', target: TargetSchema.parse({ kind: 'local' }) };
  const kinds = ['ssh', 'skypilot', 'k8s'];
  const known = Object.keys(targets);
  throw new UsageError(
    kinds.includes(wanted)
      ? `no ${wanted} target in training.targets of ${lab.loaded.file} — add one, e.g. ${targetExample(wanted)}`
      : `no target "${wanted}" — use local, ssh, skypilot or k8s, or one of training.targets${known.length ? ` (${known.join(', ')})` : ''}`,
  );
}

function targetExample(kind: string): string {
  if (kind === 'ssh') return '"targets": {"gpu-box": {"kind": "ssh", "host": "me@gpu-box"}}';
  if (kind === 'skypilot') return '"targets": {"cloud": {"kind": "skypilot", "gpuType": "H100"}}';
  return '"targets": {"cluster": {"kind": "k8s", "namespace": "ml"}}';
}

export function trainingDir(lab: Lab): string {
  return pipelineDir(lab.loaded);
}

export function newJobId(phaseName: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15).toLowerCase();
  const base = phaseName.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 30) || 'job';
  return `${base}-${stamp}-${randomBytes(2).toString('hex')}`;
}

function secretsFor(lab: Lab, given: Record<string, string> | undefined, log: (l: string) => void): Record<string, string> {
  const names = lab.loaded.config.training.trainer.secrets;
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

/** The adapter of the model's active version, when it has one on this machine: a new job continues from it. */
export function activeAdapter(lab: Lab, model: string | undefined): string | null {
  if (!model) return null;
  const entry = readRegistry(lab.loaded.labDir).models[model];
  const v = entry?.versions.find((x) => x.version === entry.active);
  if (!v?.adapter) return null;
  const abs = path.resolve(lab.loaded.labDir, v.adapter);
  return existsSync(abs) ? abs : null;
}

interface JobDraft {
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
}

function specOf(lab: Lab, d: JobDraft): JobSpec {
  const { trainer } = lab.loaded.config.training;
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
    serve: d.kind === 'serve' ? { host: t.kind === 'local' || t.kind === 'ssh' ? '127.0.0.1' : '0.0.0.0', port: t.kind === 'local' ? 0 : 8000 } : null,
    env: Object.keys(d.secrets).sort(),
    command: ['python3', '-m', 'rollout_trainer', d.kind, '--spec', 'job.yaml'],
  };
}

/** Pre-flight and export of a GPU phase's data; a failed pre-flight is an error that lists the checks. */
async function draftTraining(lab: Lab, opts: TrainOptions, log: (l: string) => void): Promise<JobDraft> {
  const phase = resolvePhase(lab, opts.phase);
  if (!GPU_KINDS.has(phase.kind)) throw new UsageError(`phase "${phase.name}" is a ${phase.kind} phase, which runs on this machine — run it with \`rollout-lab pipeline run ${phase.name}\``);
  const kind = phase.kind as 'sft' | 'grpo';
  const target = await withLocalPython(resolveTarget(lab, opts.target, phase), log);
  const hyperparameters = hyperparametersFor(kind, phase, opts.hyperparameters);
  log(`phase ${phase.name} (${kind}): pre-flight checks and export`);
  const exported = await exportPhaseData(lab, phase, { signal: opts.signal, ...(opts.includeSimulated ? { includeSimulated: true } : {}), ...(opts.runId ? { runId: opts.runId } : {}) });
  if (exported.error) throw new UsageError(`phase ${phase.name}: ${exported.error}`);
  const [dataRel, manifestRel] = exported.files ?? [];
  if (!dataRel) throw new RuntimeFailure(`phase ${phase.name}: the export wrote no data file`);
  const id = newJobId(phase.name);
  const files: Record<string, string> = { [`data/${path.basename(dataRel)}`]: path.resolve(lab.loaded.labDir, dataRel) };
  if (manifestRel) files[`data/${path.basename(manifestRel)}`] = path.resolve(lab.loaded.labDir, manifestRel);
  const adapterSrc = activeAdapter(lab, phase.model);
  if (adapterSrc) files.adapter = adapterSrc;
  return {
    id,
    kind,
    phase,
    model: phase.model ?? null,
    baseModel: opts.baseModel ?? phase.baseModel ?? lab.loaded.config.training.trainer.baseModel,
    backend: opts.backend ?? lab.loaded.config.training.trainer.backend,
    target,
    hyperparameters,
    files,
    train: `data/${path.basename(dataRel)}`,
    manifest: manifestRel ? `data/${path.basename(manifestRel)}` : null,
    adapter: adapterSrc ? 'adapter' : null,
    data: (exported.counts ?? {}) as Record<string, number>,
    secrets: secretsFor(lab, opts.secrets, log),
  };
}

function prepare(lab: Lab, d: JobDraft, dir: string): PreparedJob {
  const spec = writeBundle(path.join(dir, 'bundle'), { spec: specOf(lab, d), files: d.files });
  return { spec, bundleDir: path.join(dir, 'bundle'), jobDir: dir, targetName: d.target.name, target: d.target.target, secrets: d.secrets };
}

/** What `train` would do, run nothing: the spec and the target's exact commands (the data is exported to see its counts). */
export async function dryRunTraining(lab: Lab, opts: TrainOptions, log: (l: string) => void = () => undefined): Promise<DryRun> {
  const d = await draftTraining(lab, opts, log);
  const dir = mkdtempSync(path.join(tmpdir(), 'rollout-lab-dry-run-'));
  try {
    const job = prepare(lab, d, dir);
    return { spec: job.spec, plan: launcherFor(job.target.kind).plan(job), data: d.data };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function newRecord(d: JobDraft): JobRecord {
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

/** Launches a drafted job: bundle, record, launcher. The record says failed (with why) when the launch itself fails. */
async function launchDraft(lab: Lab, d: JobDraft, hooks: JobHooks, serves: string | null = null, serveOnSuccess = false): Promise<JobRecord> {
  const dir = jobDir(trainingDir(lab), d.id);
  const log = hooks.log ?? ((): void => undefined);
  let rec = { ...newRecord(d), serves, serveOnSuccess };
  writeJobRecord(dir, rec);
  hooks.onRecord?.(rec);
  try {
    const job = prepare(lab, d, dir);
    log(`job ${d.id}: launching on ${d.target.name} (${d.target.target.kind})`);
    const handle = await launcherFor(job.target.kind).launch(job, log);
    rec = updateJobRecord(dir, (r) => ({ ...r, state: 'running', handle }));
  } catch (err) {
    rec = updateJobRecord(dir, (r) => ({ ...r, state: 'failed', endedAt: Date.now(), error: `launch failed: ${errorMessage(err)}` }));
  }
  hooks.onRecord?.(rec);
  return rec;
}

/** Writes first, then tells: `hooks.onPhase?.(write())` would skip the write when nobody listens. */
function notifyPhase(hooks: JobHooks, rec: PhaseRecord): void {
  hooks.onPhase?.(rec);
}

function setPhaseJob(lab: Lab, phaseName: string, kind: PhaseRecord['kind'], change: (r: PhaseRecord) => PhaseRecord): PhaseRecord {
  const file = pipelineStateFile(lab.loaded);
  const prev = readPipelineState(file).phases[phaseName];
  const next = change(prev?.kind === kind ? prev : emptyPhaseRecord(phaseName, kind));
  writePhaseRecord(file, next);
  return next;
}

/**
 * Runs a phase the way the Training view and `rollout-lab train` do: a GPU
 * phase (sft, grpo) becomes a job on the target, followed to its end; on
 * success the result is served and registered (unless serve is false); a
 * local phase (bandit, apo) runs here.
 */
export async function trainPhase(lab: Lab, opts: TrainOptions, hooks: JobHooks = {}): Promise<TrainResult> {
  const phase = resolvePhase(lab, opts.phase);
  if (!GPU_KINDS.has(phase.kind)) {
    const runOpts: RunPhaseOptions = {
      signal: opts.signal,
      ...(opts.includeSimulated ? { includeSimulated: true } : {}),
      ...(hooks.log ? { log: hooks.log } : {}),
      ...(hooks.onPhase ? { onUpdate: hooks.onPhase } : {}),
    };
    return { job: null, serve: null, phase: await runPhase(lab, phase.name, runOpts) };
  }
  const launched = await launchTraining(lab, opts, hooks);
  const job = launched.state === 'failed' ? launched : await followJob(lab, launched.id, { ...hooks, signal: opts.signal }, { ...(opts.secrets ? { secrets: opts.secrets } : {}) });
  return { job, serve: job.serveJob ? readJob(lab, job.serveJob) : null, phase: readPipelineState(pipelineStateFile(lab.loaded)).phases[phase.name]! };
}

/** Pre-flight, export, bundle and launch of a GPU phase, without following it (`train --detach`; the editor follows it itself). */
export async function launchTraining(lab: Lab, opts: TrainOptions, hooks: JobHooks = {}): Promise<JobRecord> {
  const phase = resolvePhase(lab, opts.phase);
  if (!GPU_KINDS.has(phase.kind)) throw new UsageError(`phase "${phase.name}" is a ${phase.kind} phase, which runs on this machine — run it with \`rollout-lab train --phase ${phase.name}\``);
  const kind = phase.kind as 'sft' | 'grpo';
  let d: JobDraft;
  try {
    d = await draftTraining(lab, opts, hooks.log ?? ((): void => undefined));
  } catch (err) {
    const cancelled = opts.signal?.aborted === true;
    notifyPhase(hooks, setPhaseJob(lab, phase.name, kind, (r) => ({ ...r, state: cancelled ? 'cancelled' : 'failed', endedAt: Date.now(), error: cancelled ? 'cancelled' : errorMessage(err), pid: null, host: null })));
    throw err;
  }
  notifyPhase(
    hooks,
    setPhaseJob(lab, phase.name, kind, (r) => ({
      ...emptyPhaseRecord(r.name, r.kind),
      state: 'running',
      startedAt: Date.now(),
      job: d.id,
      counts: d.data,
      files: [`${path.relative(lab.loaded.labDir, jobDir(trainingDir(lab), d.id)).split(path.sep).join('/')}/bundle/${d.train}`],
      note: `job ${d.id} on ${d.target.name}`,
    })),
  );
  const rec = await launchDraft(lab, d, hooks, null, opts.serve ?? true);
  if (rec.state === 'failed') notifyPhase(hooks, setPhaseJob(lab, phase.name, kind, (r) => ({ ...r, state: 'failed', endedAt: Date.now(), error: rec.error })));
  return rec;
}

export function jobLogFile(lab: Lab, id: string): string {
  return path.join(jobDir(trainingDir(lab), id), 'job.log');
}

export function readJob(lab: Lab, id: string): JobRecord {
  return readJobRecord(jobDir(trainingDir(lab), id));
}

export function listJobs(lab: Lab): JobRecord[] {
  return listJobRecords(trainingDir(lab));
}

/** The events a job printed so far (from its local copy of the log). */
export function jobEvents(lab: Lab, id: string): TrainerEvent[] {
  const file = jobLogFile(lab, id);
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .map(parseTrainerEvent)
    .filter((e): e is TrainerEvent => e !== null);
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
export async function followJob(lab: Lab, id: string, hooks: JobHooks, fo: FollowOptions = {}): Promise<JobRecord> {
  const dir = jobDir(trainingDir(lab), id);
  let rec = readJobRecord(dir);
  if (!rec.handle || !isActive(rec)) return rec;
  const launcher = launcherFor(rec.targetKind);
  const job = jobContext(lab, rec);
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
          void onServing(lab, dir, rec, ev.url, hooks, fo.onServeFailed).then((f) => (forward = f));
        }
      },
    }, job);
  } finally {
    (forward as PortForward | null)?.close();
  }
  if (exit.state === 'cancelled') return readJobRecord(dir);
  return finishJob(lab, id, exit, hooks, fo, job);
}

function jobContext(lab: Lab, rec: JobRecord): Pick<PreparedJob, 'spec' | 'target'> {
  const bundleSpec = path.join(jobDir(trainingDir(lab), rec.id), 'bundle', 'job.yaml');
  const target = resolveTarget(lab, rec.targetName).target;
  // The spec as written into the bundle, for the launcher's paths and ports.
  const spec = JobSpecSchema.parse(parseYaml(readFileSync(bundleSpec, 'utf8')));
  return { spec, target };
}

async function finishJob(lab: Lab, id: string, exit: JobExit, hooks: JobHooks, fo: FollowOptions, job: Pick<PreparedJob, 'spec' | 'target'>): Promise<JobRecord> {
  const dir = jobDir(trainingDir(lab), id);
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
  if (rec.kind === 'serve') return endServe(lab, dir, exit, result, fetchError, hooks);
  const ok = exit.state === 'succeeded' && result?.status === 'succeeded';
  const error = ok
    ? null
    : (typeof result?.error === 'string' && result.error) || exit.detail || fetchError || `the trainer exited with status ${exit.exitCode ?? 'unknown'}${result ? '' : ' and wrote no result.json'} — see ${path.join(dir, 'job.log')}`;
  rec = updateJobRecord(dir, (r) => ({ ...r, state: ok ? 'succeeded' : 'failed', endedAt: Date.now(), error, result }));
  hooks.onRecord?.(rec);
  log(`job ${id}: ${rec.state}${error ? ` — ${error}` : ''}`);
  const phaseKind = rec.kind as 'sft' | 'grpo';
  if (!ok) {
    notifyPhase(hooks, setPhaseJob(lab, rec.phase, phaseKind, (r) => ({ ...r, state: 'failed', endedAt: Date.now(), error, job: id })));
    return rec;
  }
  const adapter = typeof result?.adapter === 'string' ? path.join(dir, result.adapter.replace(/^out\//, 'out/')) : null;
  const adapterRel = adapter ? path.relative(lab.loaded.labDir, adapter).split(path.sep).join('/') : null;
  const metrics = (result?.metrics ?? {}) as Record<string, unknown>;
  const counts = { ...rec.data, ...Object.fromEntries(Object.entries(metrics).filter(([, v]) => typeof v === 'number')) } as Record<string, number>;
  if (!(fo.serve ?? rec.serveOnSuccess) || !rec.model) {
    const note = !rec.model
      ? `trained adapter in ${adapterRel}; the phase names no "model", so no model version was registered`
      : `trained adapter in ${adapterRel}; serve it to use it: rollout-lab jobs serve ${id}`;
    notifyPhase(hooks, setPhaseJob(lab, rec.phase, phaseKind, (r) => ({ ...r, state: 'done', endedAt: Date.now(), error: null, job: id, counts, produced: { kind: 'model', id }, note })));
    return rec;
  }
  const served = await serveJobResult(lab, id, { target: rec.targetName, ...(fo.secrets ? { secrets: fo.secrets } : {}) }, hooks);
  notifyPhase(
    hooks,
    setPhaseJob(lab, rec.phase, phaseKind, (r) => ({
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
export async function serveJobResult(lab: Lab, trainJobId: string, so: ServeOptions, hooks: JobHooks = {}): Promise<JobRecord> {
  const trained = readJob(lab, trainJobId);
  if (trained.state !== 'succeeded') throw new UsageError(`job ${trainJobId} has not succeeded (it is ${trained.state}) — only a finished training job can be served`);
  const adapterRel = typeof trained.result?.adapter === 'string' ? trained.result.adapter : 'out/adapter';
  const adapter = path.join(jobDir(trainingDir(lab), trainJobId), adapterRel);
  if (!existsSync(adapter)) throw new UsageError(`job ${trainJobId} has no adapter at ${adapter} — was its output fetched?`);
  const backend = backendOfJob(lab, trainJobId);
  return startServe(lab, { phase: resolvePhase(lab, trained.phase), baseModel: trained.baseModel, target: so.target ?? trained.targetName, adapter, version: trainJobId, secrets: so.secrets, ...(backend ? { backend } : {}) }, hooks);
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

/** The backend a training job ran (its bundle's job.yaml), so its result is served by the same one. */
function backendOfJob(lab: Lab, id: string): TrainerBackend | undefined {
  try {
    const spec = JobSpecSchema.parse(parseYaml(readFileSync(path.join(jobDir(trainingDir(lab), id), 'bundle', 'job.yaml'), 'utf8')));
    return spec.model.backend;
  } catch {
    return undefined;
  }
}

export async function startServe(lab: Lab, req: ServeRequest, hooks: JobHooks): Promise<JobRecord> {
  const log = hooks.log ?? ((): void => undefined);
  const id = req.version ? `${req.version.slice(0, 45)}-serve` : newJobId(`${req.phase.name}-serve`);
  // Serving a version again reuses its serve job's id (and folder), once the old one has stopped.
  const previous = listJobs(lab).find((j) => j.id === id);
  if (previous && isActive(previous)) {
    throw new UsageError(`job ${id} still serves ${req.version}${previous.serveUrl ? ` at ${previous.serveUrl}` : ''} (it is ${previous.state}) — use it, or stop it first: rollout-lab jobs cancel ${id}`);
  }
  const d: JobDraft = {
    id,
    kind: 'serve',
    phase: req.phase,
    model: req.phase.model ?? null,
    baseModel: req.baseModel,
    backend: req.backend ?? lab.loaded.config.training.trainer.backend,
    target: await withLocalPython(resolveTarget(lab, req.target, req.phase), log),
    hyperparameters: hyperparametersFor('serve', { ...req.phase, hyperparameters: pickKnown('serve', req.phase.hyperparameters) }, undefined),
    files: req.adapter ? { adapter: req.adapter } : {},
    train: null,
    manifest: null,
    adapter: req.adapter ? 'adapter' : null,
    data: {},
    secrets: secretsFor(lab, req.secrets, log),
  };
  const launched = await launchDraft(lab, d, hooks, req.version ?? id);
  if (launched.state === 'failed') throw new RuntimeFailure(`serving failed: ${launched.error}`);
  return waitForServing(lab, launched.id, hooks);
}

/** A phase's settings that also mean something to a serve job (its online GRPO updates). */
function pickKnown(kind: JobKind, hp: Record<string, HyperValue>): Record<string, HyperValue> {
  const known = referenceHyperparameters(kind);
  return Object.fromEntries(Object.entries(hp).filter(([k]) => k in known));
}

/**
 * Follows a serve job in the background until it serves; resolves with its record (serveUrl set, version registered).
 * Rejects when the job ends first, or when its endpoint cannot be forwarded or registered (the job is stopped then):
 * it never waits on a server that will not be used.
 */
function waitForServing(lab: Lab, serveId: string, hooks: JobHooks): Promise<JobRecord> {
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
      void cancelJob(lab, serveId)
        .catch(() => undefined)
        .then(() => {
          const rec = updateJobRecord(jobDir(trainingDir(lab), serveId), (r) => ({ ...r, state: 'failed', error: `stopped: ${why}` }));
          hooks.onRecord?.(rec);
        })
        .catch(() => undefined)
        .finally(() => reject(new RuntimeFailure(`serving failed: job ${serveId} was stopped because ${why}`)));
    };
    void followJob(lab, serveId, {
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

/** A serve job announced its endpoint: forward it here and register the version it serves. */
async function onServing(lab: Lab, dir: string, rec: JobRecord, url: string, hooks: JobHooks, onFailed?: (err: unknown) => void): Promise<PortForward | null> {
  const job = jobContext(lab, rec);
  const port = Number(new URL(url).port);
  // A reattach forwards to the same local port, so the registered endpoint stays valid.
  const localPort = rec.serveUrl ? Number(new URL(rec.serveUrl).port) : undefined;
  try {
    const forward = await launcherFor(rec.targetKind).forwardPort(rec.handle!, job, port, localPort);
    let registered: JobRecord['registered'] = rec.registered;
    // A reattach that got its old endpoint back keeps the registration as it is (a rollback since stays rolled back).
    if (rec.model && rec.serves && !(registered && rec.serveUrl === forward.url)) {
      const adapter = job.spec.model.adapter ? path.relative(lab.loaded.labDir, path.join(dir, 'bundle', job.spec.model.adapter)).split(path.sep).join('/') : undefined;
      // A version served again (a new endpoint for the same adapter) takes its new settings.
      registerTrainedModel(
        lab.loaded,
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
function endServe(lab: Lab, dir: string, exit: JobExit, result: Record<string, unknown> | null, fetchError: string | null, hooks: JobHooks): JobRecord {
  const before = readJobRecord(dir);
  const why =
    (typeof result?.error === 'string' && result.error) ||
    exit.detail ||
    (exit.state === 'succeeded' ? 'the server was stopped from outside Rollout Lab' : `the server exited with status ${exit.exitCode ?? 'unknown'}`) + (fetchError ? ` (${fetchError})` : '');
  const rolledBack = rollBackServed(lab, before);
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
function rollBackServed(lab: Lab, rec: JobRecord): string | null {
  if (rec.kind !== 'serve' || !rec.registered || !rec.serveUrl) return null;
  const { model } = rec.registered;
  const entry = rollbackModelWhile(lab.loaded.labDir, model, (v) => v.baseUrl === rec.serveUrl);
  return entry ? `model "${model}" rolled back to ${entry.active ? `version ${entry.active}` : "lab.json's settings"}` : null;
}

/**
 * Stops a job on its target; its record says cancelled (before the process goes, so a follower elsewhere does not
 * take the end for a failure). A serve job's model first goes back to the version before it, when its version is the
 * active one, and the record's error says so (not with `rollback: false`: a caller that serves the next version itself).
 */
export async function cancelJob(lab: Lab, id: string, opts: { rollback?: boolean } = {}): Promise<JobRecord> {
  const dir = jobDir(trainingDir(lab), id);
  const rec = readJobRecord(dir);
  if (!isActive(rec)) throw new UsageError(`job ${id} is not running (it is ${rec.state})`);
  updateJobRecord(dir, (r) => ({ ...r, state: 'cancelled', endedAt: Date.now(), error: 'cancelled' }));
  try {
    if (rec.handle) await launcherFor(rec.targetKind).cancel(rec.handle, jobContext(lab, rec));
  } catch (err) {
    // Still running: the record says so again.
    updateJobRecord(dir, (r) => ({ ...r, state: rec.state, endedAt: rec.endedAt, error: rec.error }));
    throw err;
  }
  const rolledBack = opts.rollback === false ? null : rollBackServed(lab, rec);
  const next = updateJobRecord(dir, (r) => ({ ...r, state: 'cancelled', endedAt: Date.now(), error: rolledBack ? `cancelled; ${rolledBack}` : 'cancelled' }));
  if (next.kind !== 'serve') setPhaseJob(lab, next.phase, next.kind, (r) => (r.job === id ? { ...r, state: 'cancelled', endedAt: Date.now(), error: `job ${id} cancelled` } : r));
  return next;
}
