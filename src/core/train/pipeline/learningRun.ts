import type { PhaseConfig } from '../../config/trainingSchema';
import { readRegistry, rollbackModelWhile } from '../../config/modelRegistry';
import { errorMessage, RuntimeFailure, UsageError } from '../../errors';
import { mean, meanConfidenceInterval, pairedTTest, type TTestResult } from '../../analysis/statistics';
import { Lab } from '../../lab/lab';
import { runRollouts } from '../../rollout/runner';
import { countFailures, failureCountsText, isTransportFailure, type FailureKind } from '../../store/failureKinds';
import { pipelinePhases } from '../phases/phases';
import { runPhase } from './runPhase';
import { isActive } from '../jobs/jobRecord';
import { onlineTraining } from './onlineTraining';
import type { JobHooks } from '../jobs/jobContext';
import { newJobId } from '../jobs/jobDraft';
import { cancelJob, startServe } from '../jobs/jobLifecycle';
import { readJob } from '../jobs/jobQueries';
import { trainPhase } from '../jobs/trainPhase';
import { labJobContext } from './labJobContext';

/**
 * The learning run of a lab with declared gather, sft and grpo phases (the
 * ticket-routing example): gather with the teacher, evaluate the untrained
 * student (the base model served from its config), SFT it and evaluate, GRPO
 * it (the offline phase on the served student's own rollouts, then the online
 * loop) and evaluate again. Every evaluation is an ordinary validation run
 * (params.stage says which stage it measures) over the same tasks with the
 * same seeds, so the store's records of the student's model version per
 * rollout are the learning curve. Serve jobs it starts are stopped at the end.
 */

export type LearningStage = 'untrained' | 'sft' | 'grpo';

export interface LearningRunOptions {
  workspace: string;
  /** Validation tasks per evaluation (default: the whole validation split). */
  valLimit?: number;
  /** Samples of each validation task per evaluation (default 4): a task's reward is their mean, which steadies the comparison. */
  evalSamples?: number;
  /** Training tasks the offline GRPO phase samples the served student on (default: the grpo phase's "limit", else 48). */
  grpoTasks?: number;
  /** Online rounds after the offline GRPO phase (default 2), each on `onlineTasks` tasks (default 16). */
  onlineRounds?: number;
  onlineTasks?: number;
  /** Over the sft phase's own hyper-parameters (a shorter run). */
  sftHyperparameters?: Record<string, number | string | boolean>;
  log?: (line: string) => void;
  signal?: AbortSignal;
}

export interface StageResult {
  stage: LearningStage;
  /** The student model's active version during the evaluation (the agent table's model_version). */
  version: string;
  runId: string;
  n: number;
  mean: number;
  ci: [number, number] | null;
  /** Rollouts evaluated: n tasks × samples each. */
  rollouts: number;
  /** Those of them that failed, by kind, each counted as reward 0: the student's own (no tool call, truncated), never the transport's, which are redone. */
  failed: Partial<Record<FailureKind, number>>;
  /** Reward per validation task (the mean of its samples), in task order (the same order at every stage). */
  rewards: number[];
  /** Paired over the same tasks against the previous stage; null for the first. */
  change: TTestResult | null;
}

export interface LearningRunResult {
  student: { agents: string[]; model: string };
  teacher: { runId: string; rollouts: number; meanReward: number | null; simulated: boolean };
  stages: StageResult[];
  /** Seconds per step of the run. */
  seconds: Record<string, number>;
}

function phaseOf(phases: PhaseConfig[], kind: PhaseConfig['kind']): PhaseConfig {
  const p = phases.find((x) => x.kind === kind);
  if (!p) throw new UsageError(`the learning run needs a "${kind}" phase in training.phases of .rollout-lab/lab.json (rollout-lab init --example ticket-routing writes one)`);
  return p;
}

export async function learningRun(opts: LearningRunOptions): Promise<LearningRunResult> {
  const log = opts.log ?? ((): void => undefined);
  const open = (): Promise<Lab> => Lab.open({ workspace: opts.workspace });
  const hooks: JobHooks = { log, ...(opts.signal ? { signal: opts.signal } : {}) };
  const seconds: Record<string, number> = {};
  const timed = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const t0 = Date.now();
    try {
      return await fn();
    } finally {
      seconds[name] = (Date.now() - t0) / 1000;
    }
  };
  let lab = await open();
  const serveJobs: string[] = [];
  const stopServing = async (): Promise<void> => {
    const jobs = labJobContext(lab);
    for (const id of serveJobs.splice(0)) {
      try {
        // No rollback between stages: the next stage trains on from the version this server served (its saved weights).
        if (isActive(readJob(jobs, id))) await cancelJob(jobs, id, { rollback: false });
      } catch (err) {
        log(`note: stopping serve job ${id} failed: ${errorMessage(err)} — rollout-lab jobs cancel ${id}`);
      }
    }
  };
  try {
    const phases = pipelinePhases(lab.loaded.config);
    const gather = phaseOf(phases, 'gather');
    const sft = phaseOf(phases, 'sft');
    const grpo = phaseOf(phases, 'grpo');
    const model = sft.model;
    if (!model || grpo.model !== model) throw new UsageError(`the sft and grpo phases must name the same "model" (the student's logical model) in training.phases`);
    const agents = sft.agents ?? [];
    const stages: StageResult[] = [];
    // A workspace that ran before: the student goes back to lab.json's own settings, so the teacher gathers again.
    const labDir = lab.loaded.labDir;
    if (rollbackModelWhile(labDir, model)) {
      log(`model "${model}" is back on lab.json's own settings (the teacher) for the gather phase; its trained versions stay in the registry`);
      await lab.close();
      lab = await open();
    }

    const evaluate = async (stage: LearningStage): Promise<StageResult> =>
      timed(`eval ${stage}`, async () => {
        const evalLab = await open();
        try {
          const cfg = evalLab.loaded.config;
          const ds = await evalLab.loadDataset();
          const tasks = evalLab.selectTasks(ds, { split: 'val', limit: opts.valLimit, seed: cfg.runner.seed });
          const env = await evalLab.environment(ds.tasks);
          const version = readRegistry(evalLab.loaded.labDir).models[model]?.active ?? 'base';
          const samples = opts.evalSamples ?? 4;
          log(`evaluate ${stage}: ${tasks.length} validation tasks × ${samples} samples, model "${model}" version ${version}`);
          const request = {
            tasks,
            samples,
            concurrency: cfg.runner.concurrency,
            params: { command: 'eval', split: 'val', limit: opts.valLimit ?? null, samples, seed: cfg.runner.seed, stage },
            seed: cfg.runner.seed,
            ...(opts.signal ? { signal: opts.signal } : {}),
          };
          let run = await runRollouts(env, request);
          // A call that never reached the student (timeout, connection, 5xx, 429) says nothing of it: redone once, as run --resume would.
          let lost = run.rollouts.filter((r) => isTransportFailure(r.failure));
          if (!run.cancelled && lost.length) {
            log(`evaluate ${stage}: ${lost.length} rollouts failed on the way to the model (${failureCountsText(countFailures(lost))}); redoing them`);
            run = await runRollouts(env, { ...request, resumeRunId: run.runId });
            lost = run.rollouts.filter((r) => isTransportFailure(r.failure));
          }
          if (run.cancelled) throw new RuntimeFailure(`the ${stage} evaluation was cancelled`);
          if (lost.length) {
            throw new RuntimeFailure(
              `the ${stage} evaluation's figure would measure the server, not the student: ${lost.length} of its rollouts failed twice on the way to model "${model}" (${failureCountsText(countFailures(lost))}; run ${run.runId}, rollout-lab traces --run ${run.runId})`,
            );
          }
          const byTask = new Map<string, number[]>();
          for (const r of run.rollouts) byTask.set(r.taskId, [...(byTask.get(r.taskId) ?? []), r.finalReward ?? 0]);
          // A rollout that failed (no reward) counts as 0, as a wrong queue does.
          const rewards = tasks.map((t) => (byTask.get(t.id)?.reduce((a, b) => a + b, 0) ?? 0) / samples);
          const failed = countFailures(run.rollouts);
          const prev = stages.at(-1);
          const result: StageResult = {
            stage,
            version,
            runId: run.runId,
            n: rewards.length,
            rollouts: run.rollouts.length,
            failed,
            mean: mean(rewards) ?? 0,
            ci: meanConfidenceInterval(rewards),
            rewards,
            change: prev ? pairedTTest(prev.rewards, rewards) : null,
          };
          log(`${stage}: mean validation reward ${result.mean.toFixed(3)} over ${result.n} tasks (run ${run.runId})${Object.keys(failed).length ? `; rollouts that failed, each counted as 0: ${failureCountsText(failed)}` : ''}`);
          stages.push(result);
          return result;
        } finally {
          await evalLab.close();
        }
      });

    // 1. The teacher gathers the SFT data (the simulated endpoint with canned answers, marked simulated).
    const gathered = await timed('gather', () => runPhase(lab, gather.name, { log, ...(opts.signal ? { signal: opts.signal } : {}) }));
    if (gathered.state !== 'done') throw new RuntimeFailure(`phase ${gather.name} failed: ${gathered.error}`);
    const teacher = { runId: gathered.runId ?? '', rollouts: gathered.counts.rollouts ?? 0, meanReward: gathered.counts.meanReward ?? null, simulated: lab.simulated };

    // 2. The untrained student: the base model built from the trainer's config, served with no adapter.
    const baseModel = sft.baseModel ?? lab.loaded.config.training.trainer.baseModel;
    const base = await timed('serve untrained', () => startServe(labJobContext(lab), { phase: sft, baseModel, adapter: null, version: newJobId('untrained') }, hooks));
    serveJobs.push(base.id);
    await evaluate('untrained');
    await stopServing();

    // 3. SFT on this gather run's rollouts over the reward threshold (not an earlier run's); served and registered.
    const sftRun = await timed('sft', () => trainPhase(labJobContext(lab), { phase: sft.name, serve: true, runId: teacher.runId, ...(opts.sftHyperparameters ? { hyperparameters: opts.sftHyperparameters } : {}), ...(opts.signal ? { signal: opts.signal } : {}) }, hooks));
    if (sftRun.serve) serveJobs.push(sftRun.serve.id);
    if (sftRun.job?.state !== 'succeeded' || !sftRun.serve) throw new RuntimeFailure(`phase ${sft.name} failed: ${sftRun.job?.error ?? sftRun.phase.error ?? 'no model was served'}`);
    await evaluate('sft');

    // 4. GRPO, offline: the served student's own rollouts on training tasks, one group per task.
    const samples = grpo.samples ?? lab.loaded.config.training.groupSize;
    const studentRun = await timed('grpo rollouts', async () => {
      const runLab = await open();
      try {
        const cfg = runLab.loaded.config;
        const ds = await runLab.loadDataset();
        const tasks = runLab.selectTasks(ds, { split: 'train', limit: opts.grpoTasks ?? grpo.limit ?? 48, seed: cfg.runner.seed });
        log(`phase ${grpo.name}: the served student on ${tasks.length} training tasks × ${samples} samples`);
        const env = await runLab.environment(ds.tasks);
        return await runRollouts(env, {
          tasks,
          samples,
          concurrency: cfg.runner.concurrency,
          params: { command: 'pipeline', phase: grpo.name, split: 'train', samples, seed: cfg.runner.seed + 1 },
          seed: cfg.runner.seed + 1,
          signal: opts.signal,
        });
      } finally {
        await runLab.close();
      }
    });
    await stopServing();
    const grpoRun = await timed('grpo', () => trainPhase(labJobContext(lab), { phase: grpo.name, serve: true, runId: studentRun.runId, ...(opts.signal ? { signal: opts.signal } : {}) }, hooks));
    if (grpoRun.serve) serveJobs.push(grpoRun.serve.id);
    if (grpoRun.job?.state !== 'succeeded') throw new RuntimeFailure(`phase ${grpo.name} failed: ${grpoRun.job?.error ?? grpoRun.phase.error}`);
    await stopServing();

    // 5. GRPO, online: rounds of rollouts against the served policy, each one update; the server stays up for the evaluation.
    const online = await timed('grpo online', () =>
      onlineTraining(
        lab,
        { phase: grpo.name, rounds: opts.onlineRounds ?? 2, tasks: opts.onlineTasks ?? 16, samples, includeSimulated: true, keepServing: true, ...(opts.signal ? { signal: opts.signal } : {}) },
        open,
        hooks,
      ),
    );
    serveJobs.push(online.serveJob);
    await evaluate('grpo');
    return { student: { agents, model }, teacher, stages, seconds };
  } finally {
    await stopServing();
    // Nothing serves the student now: it goes back to lab.json's own settings (the teacher), its versions stay in the registry.
    const labDir = lab.loaded.labDir;
    const model = pipelinePhases(lab.loaded.config).find((p) => p.kind === 'sft')?.model;
    if (model && rollbackModelWhile(labDir, model)) {
      log(`the student's servers are stopped: model "${model}" is back on lab.json's own settings; its trained versions stay in the registry (rollout-lab jobs serve JOB serves one again)`);
    }
    await lab.close();
  }
}

/** The before/after table's one-sentence summary: what improved by how much, with the paired p-values. */
export function learningSummary(r: LearningRunResult): string {
  const [first, ...rest] = r.stages;
  if (!first || !rest.length) return 'no stages were evaluated';
  const last = r.stages.at(-1)!;
  const steps = rest.map((s) => `${s.stage} ${s.change && s.change.delta >= 0 ? '+' : ''}${s.change?.delta.toFixed(3) ?? '?'} (paired p ${s.change ? pValueText(s.change.pValue) : '?'})`);
  return `The ${r.student.agents.join(', ') || 'student'} agent's mean validation reward went from ${first.mean.toFixed(3)} (${first.stage}) to ${last.mean.toFixed(3)} (${last.stage}) on the same ${last.n} validation tasks: ${steps.join(', ')}${r.teacher.simulated ? '; the teacher that gathered the SFT data was the simulated endpoint' : ''}.`;
}

export function pValueText(p: number): string {
  return p < 0.001 ? '< 0.001' : p.toFixed(3);
}
