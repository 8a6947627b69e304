import { parseArgs } from 'node:util';
import { errorMessage, UsageError } from '../../core/errors';
import { TINY_BACKEND_REMOVED, TrainerBackend } from '../../core/config/trainingSchema';
import type { JobRecord } from '../../core/train/jobs/jobRecord';
import type { TrainResult } from '../../core/train/jobs/trainPhase';
import { dryRunText } from '../../core/train/jobs/dryRunText';
import { parseTrainerEvent, type TrainerEvent } from '../../core/train/jobs/trainerEvents';
import { COMMON, err, intOption, out, type Values } from '../args';
import { duration, num } from '../../core/analysis/numberFormat';
import { table } from '../../core/analysis/textTable';
import { withRunningLab } from '../labSession';

const TRAIN_OPTIONS = {
  ...COMMON,
  phase: { type: 'string' },
  target: { type: 'string' },
  'base-model': { type: 'string' },
  backend: { type: 'string' },
  set: { type: 'string', multiple: true },
  'no-serve': { type: 'boolean' },
  detach: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  online: { type: 'boolean' },
  rounds: { type: 'string' },
  tasks: { type: 'string' },
  samples: { type: 'string' },
  'include-simulated': { type: 'boolean' },
  'keep-serving': { type: 'boolean' },
} as const;

const JOBS_OPTIONS = { ...COMMON, target: { type: 'string' } } as const;
const JOB_ACTIONS = 'list, show ID, logs ID, attach ID, cancel ID or serve ID';

function parseOrExplain<T extends Record<string, unknown>>(command: string, argv: string[], options: T): { values: Values; positionals: string[] } {
  try {
    const p = parseArgs({ args: argv, options: options as never, strict: true, allowPositionals: true });
    return { values: p.values as Values, positionals: p.positionals };
  } catch (e) {
    throw new UsageError(`${command}: ${errorMessage(e).replace(/\.$/, '')} — run \`rollout-lab ${command} --help\` for the options`);
  }
}

/** `--set lora_r=8 --set target_modules=q_proj,v_proj`: JSON values where they parse (numbers, booleans, lists), text otherwise. */
export function parseSetOptions(items: readonly string[]): Record<string, number | string | boolean | string[]> {
  const out: Record<string, number | string | boolean | string[]> = {};
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new UsageError(`--set takes NAME=VALUE, got "${item}" — e.g. --set learning_rate=5e-7`);
    const key = item.slice(0, eq).trim();
    const raw = item.slice(eq + 1).trim();
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // A bare word (e.g. token-mean) is a string.
    }
    if (Array.isArray(value) && value.every((x) => typeof x === 'string')) out[key] = value as string[];
    else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'string') out[key] = value;
    else throw new UsageError(`--set ${key}: the value must be a number, true/false, text or a list of names, got ${raw}`);
  }
  return out;
}

/** A job's output line as the terminal shows it: metrics events as a short line, other events quiet, log lines as they are. */
function showLine(line: string, ev: TrainerEvent | null): string | null {
  if (!ev) return line;
  if (ev.event === 'metrics') return `step ${ev.step}  ${Object.entries(ev.values).map(([k, v]) => `${k} ${num(v, 4)}`).join('  ')}`;
  if (ev.event === 'serving') return `serving ${ev.model} at ${ev.url}`;
  if (ev.event === 'error') return `trainer error: ${ev.message}`;
  return null;
}

function printer(json: boolean): { onLine: (id: string, line: string) => void; onEvent: (id: string, ev: TrainerEvent) => void } {
  return {
    onLine: (_id, line) => {
      if (json) return;
      const shown = showLine(line, parseTrainerEvent(line));
      if (shown !== null) err(shown);
    },
    onEvent: () => undefined,
  };
}

function backendOption(v: string): TrainerBackend {
  const parsed = TrainerBackend.safeParse(v);
  if (parsed.success) return parsed.data;
  if (v === 'tiny') throw new UsageError(`--backend: ${TINY_BACKEND_REMOVED}`);
  throw new UsageError(`--backend takes transformers (a Hugging Face model, or one built from training.trainer.modelConfig, + LoRA: transformers, peft and TRL), the only backend, not "${v}"`);
}

/**
 * rollout-lab train: one training phase on a target. A GPU phase (sft, grpo)
 * is pre-flighted and exported, bundled with python-trainer and a job spec,
 * launched, followed to its end, and its result served and registered as the
 * model's active version; bandit and apo phases run here.
 */
export async function trainCommand(argv: string[], usage: string): Promise<number> {
  const { values: v } = parseOrExplain('train', argv, TRAIN_OPTIONS);
  if (v.help) return out(usage), 0;
  const phase = v.phase as string | undefined;
  if (!phase) throw new UsageError('train: name the phase — rollout-lab train --phase sft|grpo|bandit|apo (or a phase name of training.phases)');
  const json = Boolean(v.json);
  const hyperparameters = parseSetOptions(((v.set as unknown as string[] | undefined) ?? []) as string[]);
  return withRunningLab(v, async (lab, signal) => {
    const { labJobContext } = await import('../../core/train/pipeline/labJobContext');
    const { dryRunTraining } = await import('../../core/train/jobs/jobDraft');
    const { launchTraining, trainPhase } = await import('../../core/train/jobs/trainPhase');
    const jobs = labJobContext(lab);
    const opts = {
      phase,
      ...(v.target ? { target: v.target as string } : {}),
      ...(v['base-model'] ? { baseModel: v['base-model'] as string } : {}),
      ...(v.backend ? { backend: backendOption(v.backend as string) } : {}),
      hyperparameters,
      serve: !v['no-serve'],
      ...(v['include-simulated'] ? { includeSimulated: true } : {}),
      signal,
    };
    if (v['dry-run']) {
      const dry = await dryRunTraining(jobs, opts, err);
      if (json) out(JSON.stringify(dry, null, 2));
      else out(dryRunText(dry));
      return 0;
    }
    const hooks = { log: err, ...printer(json) };
    if (v.online) {
      const { onlineTraining } = await import('../../core/train/pipeline/onlineTraining');
      const { Lab } = await import('../../core/lab/lab');
      const rounds = intOption(v, 'rounds', 1) ?? 3;
      const tasks = intOption(v, 'tasks', 1);
      const samples = intOption(v, 'samples', 2);
      const reopen = (): ReturnType<typeof Lab.open> => Lab.open({ workspace: (v.workspace as string) ?? '.' });
      const r = await onlineTraining(lab, { ...opts, rounds, ...(tasks ? { tasks } : {}), ...(samples ? { samples } : {}), ...(v['keep-serving'] ? { keepServing: true } : {}) }, reopen, { ...hooks, signal });
      if (json) out(JSON.stringify(r, null, 2));
      else {
        out(table(['round', 'run', 'rollouts', 'mean reward', 'calls', 'version'], r.rounds.map((x) => [String(x.round), x.runId, String(x.rollouts), num(x.meanReward), String(x.records), x.version])));
        out(r.note);
      }
      return r.rounds.length ? 0 : 1;
    }
    if (v.detach) {
      const rec = await launchTraining(jobs, opts, hooks);
      if (json) out(JSON.stringify(rec, null, 2));
      else out(rec.state === 'failed' ? `job ${rec.id} failed: ${rec.error}` : `job ${rec.id} is running on ${rec.targetName}; follow it with: rollout-lab jobs attach ${rec.id}`);
      return rec.state === 'failed' ? 1 : 0;
    }
    const result = await trainPhase(jobs, opts, hooks);
    if (json) out(JSON.stringify(result, null, 2));
    else out(resultText(result));
    const failed = result.job ? result.job.state !== 'succeeded' : result.phase.state !== 'done';
    if (!failed && result.serve && result.serve.targetKind !== 'local' && !signal.aborted) {
      err(`the endpoint ${result.serve.serveUrl} is a port forward held by this process: Ctrl+C ends it (the server keeps running; rollout-lab jobs cancel ${result.serve.id} stops it, rollout-lab jobs attach ${result.serve.id} forwards it again)`);
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    }
    return failed ? 1 : 0;
  });
}

function resultText(r: TrainResult): string {
  if (!r.job) return `phase ${r.phase.name} (${r.phase.kind}): ${r.phase.state}${r.phase.error ? ` — ${r.phase.error}` : ''}${r.phase.note ? `\n${r.phase.note}` : ''}`;
  const j = r.job;
  const lines = [`job ${j.id}: ${j.state}${j.error ? ` — ${j.error}` : ''}`];
  if (j.registered) lines.push(`model "${j.registered.model}" version ${j.registered.version} is active${r.serve?.serveUrl ? `, served at ${r.serve.serveUrl} (job ${r.serve.id})` : ''}`);
  if (r.phase.note && !j.registered) lines.push(r.phase.note);
  return lines.join('\n');
}

/** rollout-lab jobs: the lab's training jobs; reattach, logs, cancel, serve a result. */
export async function jobsCommand(argv: string[], usage: string): Promise<number> {
  const { values: v, positionals } = parseOrExplain('jobs', argv, JOBS_OPTIONS);
  if (v.help) return out(usage), 0;
  const [action = 'list', id, ...extra] = positionals;
  if (extra.length) throw new UsageError(`jobs: unexpected "${extra.join(' ')}" — one of ${JOB_ACTIONS}`);
  if (action !== 'list' && !id) throw new UsageError(`jobs ${action}: name the job — rollout-lab jobs ${action} ID (rollout-lab jobs lists them)`);
  const json = Boolean(v.json);
  return withRunningLab(v, async (lab, signal) => {
    const { labJobContext } = await import('../../core/train/pipeline/labJobContext');
    const { jobEvents, jobLogFile, listJobs, readJob } = await import('../../core/train/jobs/jobQueries');
    const { cancelJob, followJob, serveJobResult } = await import('../../core/train/jobs/jobLifecycle');
    const jobs = labJobContext(lab);
    switch (action) {
      case 'list': {
        const list = listJobs(jobs);
        if (json) out(JSON.stringify(list, null, 2));
        else if (!list.length) out('no training jobs yet — rollout-lab train --phase sft|grpo --target local|ssh|skypilot|k8s|slurm');
        else out(table(['job', 'kind', 'phase', 'target', 'state', 'took', 'result'], list.map(jobRow)));
        return 0;
      }
      case 'show': {
        const rec = readJob(jobs, id!);
        out(JSON.stringify(json ? rec : { ...rec, events: jobEvents(jobs, id!).length }, null, 2));
        return 0;
      }
      case 'logs': {
        const { readFileSync, existsSync } = await import('node:fs');
        const file = jobLogFile(jobs, id!);
        readJob(jobs, id!);
        if (existsSync(file)) process.stdout.write(readFileSync(file, 'utf8'));
        return 0;
      }
      case 'attach': {
        const rec = await followJob(jobs, id!, { log: err, signal, ...printer(json) });
        if (json) out(JSON.stringify(rec, null, 2));
        else out(`job ${rec.id}: ${rec.state}${rec.error ? ` — ${rec.error}` : ''}`);
        return rec.state === 'failed' ? 1 : 0;
      }
      case 'cancel': {
        const rec = await cancelJob(jobs, id!);
        out(json ? JSON.stringify(rec, null, 2) : `job ${rec.id}: ${rec.error ?? 'cancelled'}`);
        return 0;
      }
      case 'serve': {
        const rec = await serveJobResult(jobs, id!, { ...(v.target ? { target: v.target as string } : {}) }, { log: err, signal, ...printer(json) });
        out(json ? JSON.stringify(rec, null, 2) : `job ${rec.id} serves ${id} at ${rec.serveUrl}${rec.registered ? `; model "${rec.registered.model}" version ${rec.registered.version} is active` : ''}`);
        if (rec.targetKind !== 'local' && !signal.aborted) await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        return 0;
      }
      default:
        throw new UsageError(`jobs: unknown action "${action}" — one of ${JOB_ACTIONS}`);
    }
  });
}

function jobRow(j: JobRecord): string[] {
  const took = j.endedAt ? duration(j.endedAt - j.createdAt) : 'running';
  const result = j.registered ? `${j.registered.model} ${j.registered.version}` : j.serveUrl ?? j.error ?? (typeof j.result?.steps === 'number' ? `${j.result.steps} steps` : '');
  return [j.id, j.kind, j.phase, `${j.targetName} (${j.targetKind})`, j.state, took, result];
}
