import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { LoadedConfig } from '../../core/config/loader';
import { errorMessage, UsageError } from '../../core/errors';
import type { PipelineStatus } from '../../core/train/pipeline/pipelineStatus';
import type { PhaseRecord } from '../../core/train/phases/pipelineState';
import { COMMON, BATCH_OPTIONS, err, intOption, out, type Values } from '../args';
import { num } from '../../core/analysis/numberFormat';
import { learningCurveTable } from '../format';
import { table } from '../../core/analysis/textTable';
import { withRunningLab } from '../labSession';

const OPTIONS = {
  ...COMMON,
  limit: BATCH_OPTIONS.limit,
  samples: BATCH_OPTIONS.samples,
  version: { type: 'string' },
  adapter: { type: 'string' },
  phase: { type: 'string' },
  agents: { type: 'string' },
  'include-simulated': { type: 'boolean' },
  agent: { type: 'string' },
  'real-only': { type: 'boolean' },
} as const;

const ACTIONS = 'status, run PHASE, curve, rollback MODEL or register MODEL --version V [--agents A,B]';

/**
 * rollout-lab pipeline: the phased training pipeline of lab.json and the
 * model version registry. `run` runs one phase now; `register` makes a trained
 * model version the one the next rollouts use; `rollback` goes back one.
 */
export async function pipelineCommand(argv: string[], usage: string): Promise<number> {
  let v: Values;
  let positionals: string[];
  try {
    const parsed = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: true });
    v = parsed.values as Values;
    positionals = parsed.positionals;
  } catch (e) {
    throw new UsageError(`pipeline: ${errorMessage(e).replace(/\.$/, '')} — run \`rollout-lab pipeline --help\` for the options`);
  }
  if (v.help) {
    out(usage);
    return 0;
  }
  const [action, target, ...extra] = positionals;
  if (extra.length) throw new UsageError(`pipeline: unexpected "${extra.join(' ')}" — one of ${ACTIONS}`);
  switch (action) {
    case 'status':
    case undefined:
      return status(v);
    case 'run':
      return run(v, need(target, 'run', 'PHASE'));
    case 'curve':
      if (target) throw new UsageError(`pipeline curve takes no ${JSON.stringify(target)} — name an agent with --agent A or a model with --model M`);
      return curve(v);
    case 'rollback':
      return rollback(v, need(target, 'rollback', 'MODEL'));
    case 'register':
      return register(v, need(target, 'register', 'MODEL'));
    default:
      throw new UsageError(`pipeline: unknown action "${action}" — one of ${ACTIONS}`);
  }
}

function need(value: string | undefined, action: string, what: string): string {
  if (!value) throw new UsageError(`pipeline ${action}: name the ${what.toLowerCase()} — rollout-lab pipeline ${action} ${what}`);
  return value;
}

async function loaded(v: Values): Promise<LoadedConfig> {
  const { loadConfig } = await import('../../core/config/loader');
  return loadConfig(resolve((v.workspace as string | undefined) ?? '.'));
}

async function status(v: Values): Promise<number> {
  const { pipelineExampleText } = await import('../../core/train/phases/phases');
  const { pipelineStatus } = await import('../../core/train/pipeline/pipelineStatus');
  const { routesText } = await import('../../core/config/modelRegistry');
  const l = await loaded(v);
  const s = pipelineStatus({ loaded: l });
  if (v.json) {
    out(JSON.stringify(s, null, 2));
    return 0;
  }
  if (s.example) {
    out(`No training pipeline is declared: this lab runs its own graph (graph.kind "${l.config.graph.kind}"), which has no reference pipeline.`);
    out(`Declare one under "training" in ${l.file}; built from this lab's agents and models, for example:`);
    out('');
    out(pipelineExampleText(s.example));
    out('');
    out('(merge "phases" into an existing "training" object; then `rollout-lab pipeline run gather` runs the first phase)');
  } else {
    printPhases(s);
  }
  out('');
  out('Models');
  out(
    table(
      ['model', 'active', 'history', 'routes', 'lab.json'],
      s.models.map((m) => [
        m.name,
        m.active ?? '(lab.json)',
        m.history.length ? m.history.join(' → ') : '-',
        routesText(m.routes),
        m.base ? `${m.base.model}${m.base.baseUrl ? ` @ ${m.base.baseUrl}` : ''}` : '(not in lab.json)',
      ]),
    ),
  );
  return 0;
}

function printPhases(s: PipelineStatus): void {
  out(`Pipeline (${s.declared ? 'training.phases' : 'the reference pipeline of the research-lab graph: no training.phases in lab.json'}), state in ${s.stateFile}`);
  out(
    table(
      ['phase', 'kind', 'state', 'counts', 'produced', 'ended'],
      s.phases.map(({ phase, record }) => [
        phase.name,
        phase.kind,
        record.state,
        countsText(record.counts),
        record.produced ? `${record.produced.kind} ${record.produced.id}` : '-',
        record.endedAt ? new Date(record.endedAt).toISOString().replace('T', ' ').slice(0, 19) : '-',
      ]),
    ),
  );
  for (const { record } of s.phases) {
    if (record.error) out(`${record.name}: ${record.error}`);
    else if (record.note && record.state === 'done') out(`${record.name}: ${record.note}`);
  }
}

async function run(v: Values, phase: string): Promise<number> {
  const { findPhase } = await import('../../core/train/phases/phases');
  const { runPhase } = await import('../../core/train/pipeline/runPhase');
  // An unknown phase is a usage error before the lab (and its simulated endpoint) is opened.
  findPhase((await loaded(v)).config, phase);
  const limit = intOption(v, 'limit', 1);
  const samples = intOption(v, 'samples', 1);
  return withRunningLab(v, async (lab, signal) => {
    const rec = await runPhase(lab, phase, { signal, log: err, limit, samples, workerCli: { cli: [process.execPath, ...process.execArgv, process.argv[1]!] }, ...(v['include-simulated'] ? { includeSimulated: true } : {}) });
    if (v.json) out(JSON.stringify(rec, null, 2));
    else out(phaseLine(rec));
    return rec.state === 'done' ? 0 : 1;
  });
}

/** The learning curve: validation reward per version of each trained model, as a table or one JSON object. */
async function curve(v: Values): Promise<number> {
  const { learningCurve } = await import('../../core/train/pipeline/learningCurve');
  const { TraceStore } = await import('../../core/store/traceStore');
  const l = await loaded(v);
  const store = await TraceStore.open(l.workspaceDir, { readOnly: true });
  try {
    const c = learningCurve(store, l, {
      ...(typeof v.agent === 'string' ? { agent: v.agent } : {}),
      ...(typeof v.model === 'string' ? { model: v.model } : {}),
      ...(v['real-only'] ? { excludeSimulated: true } : {}),
    });
    if (v.json) out(JSON.stringify(c));
    else out(learningCurveTable(c));
  } finally {
    await store.close();
  }
  return 0;
}

async function rollback(v: Values, model: string): Promise<number> {
  const { agentRoutes, rollbackModelVersion, routesText } = await import('../../core/config/modelRegistry');
  const l = await loaded(v);
  if (!l.baseModels[model]) throw new UsageError(`model "${model}" is not defined under "models" in ${l.file} — one of: ${Object.keys(l.baseModels).join(', ')}`);
  const entry = rollbackModelVersion(l.labDir, model);
  const routes = agentRoutes(l.config, model, entry);
  if (v.json) out(JSON.stringify({ model, ...entry, routes }, null, 2));
  else out(`model "${model}" rolled back one step: ${routesText(routes, "lab.json's own settings")}; the next rollouts use it`);
  return 0;
}

async function register(v: Values, model: string): Promise<number> {
  if (typeof v.version !== 'string' || !v.version) throw new UsageError('pipeline register: --version V is required (the label rollouts will record)');
  const { registerTrainedModel } = await import('../../core/train/phases/trainedModel');
  const { agentRoutes, routesText } = await import('../../core/config/modelRegistry');
  const l = await loaded(v);
  const agents = typeof v.agents === 'string' ? v.agents.split(',').map((a) => a.trim()).filter(Boolean) : undefined;
  if (agents?.length === 0) throw new UsageError('pipeline register: --agents takes agent names separated by commas, e.g. --agents Geneticist,Neurologist');
  const entry = registerTrainedModel(l, model, {
    version: v.version,
    ...(typeof v['base-url'] === 'string' ? { baseUrl: v['base-url'] } : {}),
    ...(typeof v.model === 'string' ? { model: v.model } : {}),
    ...(typeof v.adapter === 'string' ? { adapter: v.adapter } : {}),
    ...(typeof v.phase === 'string' ? { phase: v.phase } : {}),
    ...(agents ? { agents } : {}),
  });
  const routes = agentRoutes(l.config, model, entry);
  const served = entry.versions.find((x) => x.version === v.version)?.agents;
  if (v.json) out(JSON.stringify({ model, ...entry, routes }, null, 2));
  else {
    const whom = served ? `for ${served.join(', ')} (the model's other agents keep theirs)` : 'for all its agents';
    out(`registered version ${v.version} of model "${model}" and made it active ${whom}: ${routesText(routes)}; the next rollouts use it (roll back with \`rollout-lab pipeline rollback ${model}\`)`);
  }
  return 0;
}

function countsText(counts: Record<string, number>): string {
  const parts = Object.entries(counts).map(([k, n]) => `${k} ${Number.isInteger(n) ? n : num(n)}`);
  return parts.length ? parts.join(', ') : '-';
}

function phaseLine(rec: PhaseRecord): string {
  const produced = rec.produced ? `; produced ${rec.produced.kind} ${rec.produced.id}` : '';
  const run = rec.runId ? `; run ${rec.runId}` : '';
  const files = rec.files.length ? `; files ${rec.files.join(', ')}` : '';
  const tail = rec.error ? ` — ${rec.error}` : rec.note ? ` — ${rec.note}` : '';
  return `phase ${rec.name}: ${rec.state} (${countsText(rec.counts)})${run}${produced}${files}${tail}`;
}
