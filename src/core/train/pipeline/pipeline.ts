import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { LoadedConfig } from '../../config/loader';
import { agentRoutes, readRegistry, registerModelVersion, type ModelRegistryEntry, type ModelVersion, type ModelVersionSpec, type RegisterOptions } from '../../config/modelRegistry';
import type { LabConfig } from '../../config/schema';
import type { PhaseConfig } from '../../config/trainingSchema';
import { errorMessage, UsageError } from '../../errors';
import { JUNIOR_AGENTS, SENIOR_AGENTS } from '../../graph/researchLab/outputs';
import type { Lab } from '../../lab/lab';
import { runRollouts } from '../../rollout/runner';
import {
  emptyPhaseRecord,
  finishedRecord,
  PIPELINE_FILE_NAME,
  readPipelineState,
  runningRecord,
  setRunningHere,
  writePhaseRecord,
  type PhaseRecord,
} from './pipelineState';
import { DEFAULT_SFT_MIN_REWARD, isResearchLabGraph, trainableAgents } from '../export/trainingDefaults';

/**
 * The phased training pipeline of the lab config: the phases lab.json
 * declares, or for the research-lab graph its reference pipeline (gather
 * rollouts with the baseline models, SFT the juniors on successes, GRPO the
 * seniors, train the Supervisor's bandit). A module graph has no reference
 * pipeline: its status shows how to declare one from its own agents. Each
 * phase runs on its own; its state lives in pipeline.json. The GPU phases
 * stop at exported, checked data here: the trained model comes back through
 * registerTrainedModel, which makes it the model the next rollouts use.
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
}

/** A phase as written in lab.json's training.phases (only the keys it sets). */
export interface PhaseExample {
  name: string;
  kind: 'gather' | 'sft' | 'grpo';
  agents?: string[];
  model?: string;
  samples?: number;
  minReward?: number;
}

export interface PhaseStatus {
  phase: PhaseConfig;
  record: PhaseRecord;
}

export interface ModelStatus {
  name: string;
  /** lab.json's own settings; null for a model the registry knows but lab.json no longer defines. */
  base: { model: string; baseUrl: string | null; version: string | null } | null;
  active: string | null;
  history: string[];
  versions: ModelVersion[];
  /** Each agent of lab.json on this model and the version it runs (null: lab.json's settings). */
  routes: Array<{ agent: string; version: string | null }>;
}

export interface PipelineStatus {
  /** The phases' folder, absolute. */
  outputDir: string;
  stateFile: string;
  /** Whether the phases come from lab.json (false: the research-lab graph's reference pipeline, or none for a module graph). */
  declared: boolean;
  phases: PhaseStatus[];
  /** A module graph with no training.phases: phases built from its own agents and models, ready to paste; null otherwise. */
  example: PhaseExample[] | null;
  models: ModelStatus[];
}

/**
 * The phases of the lab: the declared ones; when none is declared, the
 * reference pipeline of the research-lab graph, and none for a module graph
 * (whose agents have no reference roles; see pipelineExample).
 */
export function pipelinePhases(config: LabConfig): PhaseConfig[] {
  if (config.training.phases.length > 0) return config.training.phases;
  if (!isResearchLabGraph(config)) return [];
  const present = (agents: readonly string[]): string[] => agents.filter((a) => config.agents[a]);
  const sharedModel = (agents: string[]): string | undefined => {
    const models = new Set(agents.map((a) => config.agents[a]!.model));
    return models.size === 1 ? [...models][0] : undefined;
  };
  const juniors = present(JUNIOR_AGENTS);
  const seniors = present(SENIOR_AGENTS);
  const phase = (p: Partial<PhaseConfig> & Pick<PhaseConfig, 'name' | 'kind'>): PhaseConfig => ({
    split: 'train',
    credit: 'equal',
    gamma: 0.9,
    hyperparameters: {},
    includeSimulated: false,
    ...p,
  });
  const withAgents = (agents: string[]): Partial<PhaseConfig> => (agents.length ? { agents, ...optional('model', sharedModel(agents)) } : {});
  return [
    phase({ name: 'gather', kind: 'gather', samples: config.training.groupSize }),
    phase({ name: 'sft-juniors', kind: 'sft', minReward: DEFAULT_SFT_MIN_REWARD, ...withAgents(juniors) }),
    phase({ name: 'grpo-seniors', kind: 'grpo', credit: 'equal', ...withAgents(seniors) }),
    phase({ name: 'bandit-supervisor', kind: 'bandit' }),
  ];
}

/**
 * A pipeline for a module graph, from its own agents (those marked
 * trainable, else all of lab.json's) and their models: gather, then SFT and
 * GRPO of each model's agents, each registering a new version of that model.
 */
export function pipelineExample(config: LabConfig): PhaseExample[] {
  const marked = trainableAgents(config);
  const agents = marked.length ? marked : Object.keys(config.agents);
  const byModel = new Map<string, string[]>();
  for (const a of agents) {
    const model = config.agents[a]!.model;
    byModel.set(model, [...(byModel.get(model) ?? []), a]);
  }
  const many = byModel.size > 1;
  const groups = [...byModel.entries()];
  return [
    { name: 'gather', kind: 'gather', samples: config.training.groupSize },
    ...groups.map(([model, group]): PhaseExample => ({ name: many ? `sft-${model}` : 'sft', kind: 'sft', agents: group, model, minReward: DEFAULT_SFT_MIN_REWARD })),
    ...groups.map(([model, group]): PhaseExample => ({ name: many ? `grpo-${model}` : 'grpo', kind: 'grpo', agents: group, model })),
  ];
}

/** The example as lab.json text to paste: the "training" key with one phase a line. */
export function pipelineExampleText(example: readonly PhaseExample[]): string {
  const line = (p: PhaseExample): string => `{ ${Object.entries(p).map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v).replace(/","/g, '", "')}`).join(', ')} }`;
  return ['"training": {', '  "phases": [', example.map((p) => `    ${line(p)}`).join(',\n'), '  ]', '}'].join('\n');
}

/** One line: no pipeline is declared, and the phases to declare (a module graph without training.phases). */
export function undeclaredPipelineText(config: LabConfig): string {
  return `this lab runs its own graph (graph.kind "module") and lab.json declares no training.phases — add them to .rollout-lab/lab.json, e.g. "training": ${JSON.stringify({ phases: pipelineExample(config) })}`;
}

export function pipelineDir(loaded: Pick<LoadedConfig, 'labDir' | 'config'>): string {
  return path.resolve(loaded.labDir, loaded.config.training.outputDir);
}

export function pipelineStateFile(loaded: Pick<LoadedConfig, 'labDir' | 'config'>): string {
  return path.join(pipelineDir(loaded), PIPELINE_FILE_NAME);
}

/** Each phase with its state, and each logical model with its registered versions (read from disk now). */
export function pipelineStatus(lab: { loaded: LoadedConfig }): PipelineStatus {
  const { loaded } = lab;
  const stateFile = pipelineStateFile(loaded);
  const state = readPipelineState(stateFile);
  const phases = pipelinePhases(loaded.config).map((phase) => ({
    phase,
    record: state.phases[phase.name]?.kind === phase.kind ? state.phases[phase.name]! : emptyPhaseRecord(phase.name, phase.kind),
  }));
  const registry = readRegistry(loaded.labDir);
  const names = [...new Set([...Object.keys(loaded.baseModels), ...Object.keys(registry.models)])];
  const models = names.map((name): ModelStatus => {
    const base = loaded.baseModels[name];
    const entry: ModelRegistryEntry | undefined = registry.models[name];
    return {
      name,
      base: base ? { model: base.model, baseUrl: base.baseUrl ?? null, version: base.version ?? null } : null,
      active: entry?.active ?? null,
      history: entry?.history ?? [],
      versions: entry?.versions ?? [],
      routes: agentRoutes(loaded.config, name, entry),
    };
  });
  const declared = loaded.config.training.phases.length > 0;
  const example = declared || isResearchLabGraph(loaded.config) ? null : pipelineExample(loaded.config);
  return { outputDir: pipelineDir(loaded), stateFile, declared, phases, models, example };
}

/** Finds a phase by name; a clear error lists the names there are. */
export function findPhase(config: LabConfig, name: string): PhaseConfig {
  const phases = pipelinePhases(config);
  const phase = phases.find((p) => p.name === name);
  if (!phase && phases.length === 0) throw new UsageError(`no pipeline phase "${name}": ${undeclaredPipelineText(config)}`);
  if (!phase) throw new UsageError(`no pipeline phase "${name}" — the phases are ${phases.map((p) => p.name).join(', ')} (training.phases in .rollout-lab/lab.json)`);
  return phase;
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

/**
 * Registers a trained version of a logical model (it becomes active: the next
 * rollouts use it) and, when a phase is named, records it as what the phase
 * produced. It serves the agents given, else the phase's agents; when those
 * are all the model's agents it serves the model as a whole, and otherwise
 * only them: the model's other agents keep the version they ran.
 */
export function registerTrainedModel(
  loaded: LoadedConfig,
  logicalModel: string,
  spec: Omit<ModelVersionSpec, 'producedBy'> & { phase?: string; job?: string },
  opts: RegisterOptions = {},
): ModelRegistryEntry {
  if (!loaded.baseModels[logicalModel]) {
    throw new UsageError(`model "${logicalModel}" is not defined under "models" in ${loaded.file} — one of: ${Object.keys(loaded.baseModels).join(', ') || '(none)'}`);
  }
  const phase = spec.phase === undefined ? undefined : findPhase(loaded.config, spec.phase);
  const agents = servedAgents(loaded, logicalModel, spec.agents, phase);
  const file = pipelineStateFile(loaded);
  const prev = phase ? readPipelineState(file).phases[phase.name] : undefined;
  const job = spec.job ?? prev?.job ?? undefined;
  const entry = registerModelVersion(loaded.labDir, logicalModel, {
    version: spec.version,
    baseUrl: spec.baseUrl,
    model: spec.model,
    adapter: spec.adapter,
    ...(agents ? { agents } : {}),
    ...(phase ? { producedBy: { phase: phase.name, at: Date.now(), ...(job ? { job } : {}) } } : {}),
  }, opts);
  if (phase) {
    const base = prev?.kind === phase.kind ? prev : emptyPhaseRecord(phase.name, phase.kind);
    writePhaseRecord(file, {
      ...base,
      state: base.state === 'running' ? base.state : 'done',
      endedAt: base.state === 'running' ? base.endedAt : Date.now(),
      // A version registered over a failed phase: the old failure no longer describes it.
      ...(base.state === 'running' ? {} : { error: null, checks: [] }),
      job: job ?? null,
      produced: { kind: 'model', id: spec.version },
      note: `model "${logicalModel}" version ${spec.version} registered and active${agents ? ` for ${agents.join(', ')} (the model's other agents keep their version)` : ''}`,
    });
  }
  return entry;
}

/**
 * The agents a new version of the model serves: those named (each must be an
 * agent of the model), else those of the phase that run on it; undefined when
 * that is every agent of the model (the version serves the model).
 */
function servedAgents(loaded: LoadedConfig, logicalModel: string, named: readonly string[] | undefined, phase: PhaseConfig | undefined): string[] | undefined {
  const onModel = Object.keys(loaded.config.agents).filter((a) => loaded.config.agents[a]!.model === logicalModel);
  if (named) {
    const wrong = named.filter((a) => !onModel.includes(a));
    if (wrong.length) {
      const what = (a: string): string => (loaded.config.agents[a] ? `"${a}" runs on model "${loaded.config.agents[a]!.model}"` : `"${a}" is not an agent of lab.json`);
      throw new UsageError(
        `${wrong.map(what).join('; ')} — a version of model "${logicalModel}" can serve only its agents (${onModel.join(', ') || 'none: set agents.<Agent>.model'}); name those, or set agents.<Agent>.model to "${logicalModel}" in ${loaded.file}`,
      );
    }
  }
  const chosen = named ? [...new Set(named)] : phase?.agents?.filter((a) => onModel.includes(a));
  if (!chosen?.length || onModel.every((a) => chosen.includes(a))) return undefined;
  return chosen;
}

export type PhaseResult = Partial<PhaseRecord> & { error?: string | null };

/**
 * The phase as it runs now: a caller's includeSimulated (a CLI flag, an editor
 * option) over the phase's own; and the reference pipeline on a lab whose
 * every model is simulated uses the simulated rollouts, as there is nothing
 * else (declared phases stay as declared).
 */
function withSimulated(lab: Lab, phase: PhaseConfig, opts: Pick<RunPhaseOptions, 'includeSimulated'>): PhaseConfig {
  return !phase.includeSimulated && (opts.includeSimulated || simulatedOnlyReference(lab)) ? { ...phase, includeSimulated: true } : phase;
}

/** The research lab's reference pipeline (no training.phases) on a lab whose every model answers from the simulated endpoint. */
export function simulatedOnlyReference(lab: Pick<Lab, 'loaded' | 'router'>): boolean {
  const { config } = lab.loaded;
  const models = Object.keys(config.models);
  return config.training.phases.length === 0 && isResearchLabGraph(config) && models.length > 0 && lab.router.simulatedModels().length === models.length;
}

/** Whether a data phase takes simulated rollouts only because the lab has nothing else (said loudly in its output and note). */
function usesSimulatedByDefault(lab: Lab, phase: PhaseConfig, opts: Pick<RunPhaseOptions, 'includeSimulated'>): boolean {
  return phase.kind !== 'gather' && !opts.includeSimulated && !findPhase(lab.loaded.config, phase.name).includeSimulated && simulatedOnlyReference(lab);
}

const SIMULATED_USE =
  'SIMULATED: every model of the lab is on the simulated endpoint, so the reference pipeline uses its simulated rollouts — a demo of the pipeline that teaches a model nothing real; once a model has a baseUrl in .rollout-lab/lab.json they are left out again';

const SIMULATED_HINT = 'set "includeSimulated": true on the phase (or pass --include-simulated) to use them';

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
  const env = await lab.environment(ds.tasks);
  let runId: string | null = null;
  const progress = (done: number, succeeded: number, failed: number, total: number): void =>
    save({ ...rec, runId, counts: { rollouts: done, succeeded, failed, planned: total } });
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
  const succeeded = result.rollouts.filter((r) => r.status === 'succeeded').length;
  const rewards = result.rollouts.map((r) => r.finalReward).filter((x): x is number => x !== null);
  const out: Record<string, number> = { rollouts: result.rollouts.length, succeeded, failed: result.rollouts.length - succeeded, tasks: tasks.length, samples };
  if (rewards.length) out.meanReward = rewards.reduce((a, b) => a + b, 0) / rewards.length;
  return {
    runId: result.runId,
    counts: out,
    produced: { kind: 'data', id: result.runId },
    // The simulator is a test double: what it gathers demonstrates the pipeline and teaches a model nothing real.
    ...(lab.simulated
      ? {
          note: simulatedOnlyReference(lab)
            ? 'SIMULATED endpoint: these rollouts are a demo of the pipeline, not training data; while every model is simulated the reference pipeline\'s data phases use them (once a model has a baseUrl they are left out)'
            : 'SIMULATED endpoint: these rollouts are a demo of the pipeline, not training data; the data phases leave them out unless they set "includeSimulated": true',
        }
      : {}),
    ...(result.cancelled ? { error: 'cancelled' } : {}),
  };
}

async function preflight(lab: Lab, phase: PhaseConfig, kind: 'sft' | 'grpo' | 'bandit' | 'apo'): Promise<PhaseResult | null> {
  const { runPreflight } = await import('../export/preflight');
  await lab.store.refresh();
  const report = runPreflight(lab.store, lab.loaded.config, {
    phase: kind,
    ...(phase.agents ? { agents: phase.agents } : {}),
    ...(phase.minReward !== undefined || kind === 'sft' ? { minReward: phase.minReward ?? DEFAULT_SFT_MIN_REWARD } : {}),
    split: phase.split,
    includeSimulated: phase.includeSimulated,
    includeSimulatedHint: SIMULATED_HINT,
  });
  const checks = report.checks.filter((c) => c.severity !== 'info');
  if (report.ok) return { checks };
  const failing = checks.filter((c) => c.severity === 'error');
  // The report's full counts are in `rollout-lab preflight`; the phase keeps the ones that say how much data there was.
  const counts = Object.fromEntries(['rollouts', 'simulated', 'usable', 'groups', 'decisions'].filter((k) => report.counts[k] !== undefined).map((k) => [k, report.counts[k]!]));
  return {
    checks,
    counts,
    error: preflightFailure(failing),
  };
}

/** A failed pre-flight in one line: each failed check and its fix (with the lab.json key or flag to set), then what to do. */
export function preflightFailure(failing: ReadonlyArray<{ title: string; fix: string }>): string {
  const each = failing.map((c) => `${c.title} — fix: ${c.fix.replace(/\.$/, '')}`);
  return `pre-flight failed: ${each.join('; ') || 'see the checks'} — then run the phase again`;
}

/** Pre-flight and export of an sft or grpo phase's data (what a GPU job trains on). */
export async function exportPhaseData(lab: Lab, declared: PhaseConfig, opts: Pick<RunPhaseOptions, 'signal' | 'includeSimulated'> & { runId?: string }): Promise<PhaseResult> {
  const phase = withSimulated(lab, declared, opts);
  const kind = phase.kind as 'sft' | 'grpo';
  const failed = await preflight(lab, phase, kind);
  if (failed?.error) return failed;
  if (opts.signal?.aborted) return { error: 'cancelled' };
  const { exportTrainingData } = await import('../export/exportData');
  const dir = path.join(pipelineDir(lab.loaded), phase.name);
  const outFile = path.join(dir, kind === 'sft' ? 'sft.jsonl' : 'rl.jsonl');
  mkdirSync(dir, { recursive: true });
  const manifest = await exportTrainingData(
    lab.store,
    lab.loaded.config,
    {
      format: kind === 'sft' ? 'sft' : 'rl',
      ...(phase.agents ? { agents: phase.agents } : {}),
      ...(kind === 'sft' ? { minReward: phase.minReward ?? DEFAULT_SFT_MIN_REWARD } : phase.minReward !== undefined ? { minReward: phase.minReward } : {}),
      split: phase.split,
      includeSimulated: phase.includeSimulated,
      ...(opts.runId ? { runId: opts.runId } : {}),
      ...(kind === 'grpo' ? { credit: phase.credit, gamma: phase.gamma } : {}),
    },
    outFile,
  );
  const skipped = Object.values(manifest.counts.skipped).reduce((a, b) => a + b, 0);
  const counts: Record<string, number> = { rollouts: manifest.counts.rollouts, records: manifest.counts.records, skipped };
  if (manifest.counts.groups !== undefined) counts.groups = manifest.counts.groups;
  const simulated = manifest.counts.skipped.simulated ?? 0;
  if (simulated) counts.simulated = simulated;
  const rel = (f: string): string => path.relative(lab.loaded.labDir, f).split(path.sep).join('/');
  const model = phase.model ? ` "${phase.model}"` : '';
  return {
    checks: failed?.checks ?? [],
    counts,
    files: [rel(outFile), rel(`${outFile}.manifest.json`)],
    produced: { kind: 'data', id: manifest.sha256.slice(0, 12) },
    note: `${usesSimulatedByDefault(lab, declared, opts) ? `${SIMULATED_USE}; ` : ''}${simulated ? `${simulated} simulated rollouts left out (${SIMULATED_HINT}); ` : ''}data exported and checked; train on it with Launch Training Phase… or rollout-lab train --phase ${phase.name} --target local|ssh|skypilot|k8s (a model${model} trained elsewhere: rollout-lab pipeline register ${phase.model ?? 'MODEL'} --version V --phase ${phase.name})`,
  };
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
  };
  const failed = await preflight(lab, phase, 'bandit');
  if (failed?.error) return failed;
  if (opts.signal?.aborted) return { error: 'cancelled' };
  const { trainBanditPolicy } = await import('../bandit/policyStore');
  const info = await trainBanditPolicy(lab.store, lab.loaded.config, lab.loaded.labDir, { split: phase.split, includeSimulated: phase.includeSimulated });
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

function optional<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, V>);
}
