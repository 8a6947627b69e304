import type { ParseArgsConfig } from 'node:util';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { LabError, UsageError, errorMessage } from '../core/errors';
import { BATCH_OPTIONS, COMMON, err, givenSplit, intOption, out, parse, type Values } from './args';
import { printWarnings, retryTeller, tellWarning, withRunningLab } from './labSession';
import { rescoreCommand } from './commands/rescore';
import { reportCommand } from './commands/report';
import { compareCommand } from './commands/compare';
import { exportCommand } from './commands/export';
import { preflightCommand } from './commands/preflight';
import { banditCommand } from './commands/bandit';
import { optimizeCommand } from './commands/optimize';
import { pipelineCommand } from './commands/pipeline';
import { jobsCommand, trainCommand } from './commands/train';
import { collectCommand, tracesExportCommand } from './commands/otlp';
import { initWorkspace } from '../core/lab/init';
import { LEARNING_EXAMPLES } from '../core/lab/exampleLabs';
import { initDatasetNote } from '../core/lab/initDatasetNote';
import { startSimServer } from '../core/sim/simServer';
import type { RunProgress } from '../core/rollout/runner';
import type { RunWarning } from '../core/rollout/runWarnings';
import { COORDINATED_ENV, parseBatchPlan } from '../core/rollout/batchPlan';
import { runBatch } from '../core/lab/batch';
import type { EvalMetrics } from '../core/analysis/metrics';
import { metricsTable } from '../core/analysis/metricsTable';
import { runOutcomeText, type RunOutcome } from '../core/analysis/runOutcome';
import { resumeSummaryText } from '../core/rollout/resumePlan';
import type { RolloutRecord } from '../core/store/types';
import { statusText } from '../core/store/failureKinds';
import { duration, num } from '../core/analysis/numberFormat';
import { table } from '../core/analysis/textTable';
import { spanTreeText } from './spanTree';
import { cappedAttributes, MAX_PRINTED_VALUE_CHARS } from './cappedValues';
import { terminalSafe } from '../core/analysis/terminalText';
import type { SpanRecord } from '../core/trace/span';
import { COMMAND_NAMES, commandUsage, globalUsage, isCommandName } from './usage';
import { runWorkers, workersOption } from './commands/workers';
import { parseShard, shardText } from '../core/rollout/shards';

const RUN_OPTIONS = {
  ...COMMON,
  ...BATCH_OPTIONS,
  resume: { type: 'string' },
  'retry-failed': { type: 'boolean' },
  shard: { type: 'string' },
  workers: { type: 'string' },
  on: { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

/** The start of a rollout id that progress lines show: what `traces --rollout` takes. */
const SHORT_ID = 8;

function progressLine(p: RunProgress, simulated: boolean): string {
  const r = p.last;
  const what = r
    ? `${r.id.slice(0, SHORT_ID)}  ${terminalSafe(r.taskId).padEnd(10)} ${terminalSafe(r.decision ?? '-').padEnd(5)} reward ${num(r.finalReward)}  ${r.turns ?? '-'} turns  ${statusText(r)}${r.error ? `: ${terminalSafe(r.error)}` : ''}`
    : '';
  return `[${String(p.done).padStart(String(p.total).length)}/${p.total}] ${what}  mean ${num(p.meanReward)}  eta ${duration(p.etaMs)}${simulated ? '  SIMULATED' : ''}`;
}

interface BatchOutput {
  runId: string;
  simulated: boolean;
  rollouts: number;
  succeeded: number;
  failed: number;
  cancelled: boolean;
  skipped: number;
  /** Every planned rollout by where it stands in the store (succeeded, failed, cancelled, not started, superseded). */
  outcome: RunOutcome;
  metrics: EvalMetrics;
  /** Per kind, over the rollouts this invocation ran. */
  warnings: RunWarning[];
  /** A worker's slice (--shard): `rollouts`, `succeeded`, `failed` and `metrics` are the slice's; `runDone` whether the whole run stands now (null for a worker its coordinator follows: the coordinator checks). */
  shard?: { index: number; count: number; planned: number; runDone: boolean | null };
}

async function batch(command: 'run' | 'eval', v: Values): Promise<number> {
  const json = Boolean(v.json);
  // Checked before the lab opens: a wrong option starts no store and no simulator.
  const workers = workersOption(v);
  const shard = v.shard === undefined ? undefined : parseShard(String(v.shard));
  const plan = parseBatchPlan({
    command,
    dataset: v.dataset,
    split: givenSplit(v, ''),
    limit: intOption(v, 'limit', 1),
    samples: intOption(v, 'samples', 1),
    concurrency: intOption(v, 'concurrency', 1),
    seed: intOption(v, 'seed', 0),
    resume: v.resume,
    retryFailed: v['retry-failed'] === true ? true : undefined,
    shard,
    coordinated: shard && v.resume !== undefined && process.env[COORDINATED_ENV] === '1' ? true : undefined,
  });
  if (workers !== undefined) return runWorkers(command, v, plan, workers);
  return withRunningLab(v, async (lab, signal) => {
    const result = await runBatch(lab, plan, {
      signal,
      onPlanned: ({ params, concurrency, tasks, datasetFile, shard: slice }) => {
        const { samples } = params;
        err(
          `${command}: ${tasks} tasks × ${samples} sample${samples > 1 ? 's' : ''} from ${datasetFile} (${params.split} split)${slice && slice.count > 1 ? `, slice ${shardText(slice)} of them` : ''}, concurrency ${concurrency}${lab.simulated ? ' — SIMULATED endpoint' : ''}`,
        );
      },
      onStart: ({ runId, total, skipped, resume }) => err(`run ${runId}: ${resume ? resumeSummaryText(resume) : `${total} rollouts to do${skipped ? `, ${skipped} already done` : ''}`}`),
      onProgress: (p) => err(progressLine(p, lab.simulated)),
      onWarning: (w) => tellWarning(w),
      onRetry: retryTeller(),
    });
    const { metrics, simulated } = result;
    const doc: BatchOutput = {
      runId: result.runId,
      simulated,
      rollouts: result.rollouts.length,
      succeeded: metrics.succeeded,
      failed: metrics.failed,
      cancelled: result.cancelled,
      skipped: result.skipped,
      outcome: result.outcome,
      metrics,
      warnings: result.warnings,
      ...(result.shard ? { shard: result.shard } : {}),
    };
    if (json) out(JSON.stringify(doc));
    else {
      if (simulated) out('SIMULATED endpoint: outputs and rewards below come from the built-in simulator, not a model.');
      out(`run ${result.runId}${result.cancelled ? ' cancelled' : ''}: ${runOutcomeText(result.outcome)}`);
      if (result.shard && result.shard.count > 1) {
        const s = result.shard;
        out(`slice ${shardText(s)}: ${result.rollouts.length} of its ${s.planned} rollouts finished; the run is ${s.runDone === null ? "its coordinator's to end" : s.runDone ? 'done: every slice stands' : 'not done yet (other slices)'}; the table is this slice's`);
      }
      out(metricsTable(metrics, simulated));
      printWarnings(result.warnings, result.ranNow);
      out(`store: ${lab.store.dir}`);
    }
    if (result.cancelled) {
      const slice = result.shard && result.shard.count > 1 ? ` --shard ${shardText(result.shard)}` : '';
      err(`cancelled — resume with: rollout-lab ${command} --resume ${result.runId}${slice}${v.workspace ? ` --workspace ${String(v.workspace)}` : ''}`);
      return 1;
    }
    // Some failed rollouts are data (recorded, counted); a batch where every rollout failed is a runtime failure.
    if (result.allFailedError !== null) {
      err(`every rollout failed; the first error was: ${result.allFailedError}`);
      return 1;
    }
    return 0;
  });
}

function rolloutSummary(r: RolloutRecord): Record<string, unknown> {
  return { id: r.id, runId: r.runId, taskId: r.taskId, status: r.status, failure: r.failure ?? null, supersededBy: r.supersededBy ?? null, finalReward: r.finalReward, startTime: r.startTime, endTime: r.endTime, split: r.split, sample: r.sample, decision: r.decision, turns: r.turns, simulated: r.simulated, error: r.error };
}

async function traces(v: Values): Promise<number> {
  const { TraceStore } = await import('../core/store/traceStore');
  const { loadConfig } = await import('../core/config/loader');
  const loaded = await loadConfig(resolve((v.workspace as string) ?? '.'));
  const store = await TraceStore.open(loaded.workspaceDir, { readOnly: true });
  try {
    if (v.rollout) {
      const rollout = store.resolveRolloutId(v.rollout as string);
      if (!rollout) throw new UsageError(`rollout "${String(v.rollout)}" is not in the store — list rollouts with \`rollout-lab traces\` (the whole id, or the start of it that progress lines show)`);
      const spans = store.getSpans(rollout.id);
      const counter = { cut: 0 };
      const values = (s: SpanRecord): SpanRecord['attributes'] => (v.full ? s.attributes : cappedAttributes(s.attributes, counter));
      if (v.json) {
        const doc = { rollout, spans: spans.map((s) => ({ spanId: s.spanId, parentSpanId: s.parentSpanId, name: s.name, kind: s.kind, startTime: s.startTime, endTime: s.endTime, status: s.status, statusMessage: s.statusMessage, attributes: values(s) })) };
        out(JSON.stringify(counter.cut ? { ...doc, truncatedValues: counter.cut } : doc));
        if (counter.cut) err(`${counter.cut} attribute value${counter.cut === 1 ? ' was' : 's were'} over ${MAX_PRINTED_VALUE_CHARS} characters and cut ("… (N more bytes; --full to print all)"); add --full for the whole values`);
      } else {
        if (rollout.simulated) out('SIMULATED endpoint rollout');
        out(`rollout ${rollout.id} · task ${terminalSafe(rollout.taskId)} · ${statusText(rollout)}${rollout.supersededBy ? ` by ${rollout.supersededBy}` : ''} · reward ${num(rollout.finalReward)} · ${terminalSafe(rollout.decision ?? 'no decision')} · ${spans.length} spans`);
        if (rollout.error) out(`error: ${terminalSafe(rollout.error)}`);
        const tree = spanTreeText(spans);
        out(tree.text);
        for (const w of tree.warnings) err(`warning: ${w}`);
      }
      return 0;
    }
    // A script reading --json gets every rollout unless it asks for fewer; a terminal gets a screenful.
    const limit = intOption(v, 'limit', 1) ?? (v.json ? Number.MAX_SAFE_INTEGER : 50);
    const { rollouts, total } = store.listRollouts({ runId: v.run as string | undefined, sort: 'startTime', order: 'desc', limit });
    if (v.json) {
      out(JSON.stringify({ total, rollouts: rollouts.map(rolloutSummary) }));
      return 0;
    }
    if (rollouts.some((r) => r.simulated)) out('SIMULATED endpoint rollouts are marked "sim"');
    out(
      table(
        ['rollout', 'run', 'task', 'status', 'reward', 'decision', 'turns', 'duration', ''],
        rollouts.map((r) => [r.id, r.runId, r.taskId, statusText(r), num(r.finalReward), r.decision ?? '-', String(r.turns ?? '-'), duration(r.endTime ? r.endTime - r.startTime : null), r.simulated ? 'sim' : '']),
      ),
    );
    out(`${rollouts.length} of ${total} rollouts${total > rollouts.length ? ' (use --limit N or --run RUN_ID)' : ''}`);
    return 0;
  } finally {
    await store.close();
  }
}

/** Moves finished journals into compressed segments (safe while other processes use the store). */
async function compact(v: Values): Promise<number> {
  const { TraceStore } = await import('../core/store/traceStore');
  const { loadConfig } = await import('../core/config/loader');
  const loaded = await loadConfig(resolve((v.workspace as string) ?? '.'));
  const store = await TraceStore.open(loaded.workspaceDir);
  try {
    const r = await store.compact();
    if (v.json) out(JSON.stringify(r));
    else if (r.skipped) out(r.skipped === 'busy' ? 'another process is compacting this store; try again when it is done' : 'nothing to compact: every journal still belongs to a running writer or is already compacted');
    else {
      const mb = (b: number): string => (b / 1024 / 1024).toFixed(1);
      out(`compacted ${r.traces} rollouts (${r.spans} spans) from ${r.journalsRetired} journals into ${r.segmentsWritten} segments: ${mb(r.bytesBefore)} MiB → ${mb(r.bytesAfter)} MiB`);
    }
    return 0;
  } finally {
    await store.close();
  }
}

async function sim(v: Values): Promise<number> {
  const port = intOption(v, 'port', 0) ?? 8089;
  const server = await startSimServer({ port, latencyMs: intOption(v, 'latency-ms', 0) ?? 0 });
  out(`SIMULATED OpenAI-compatible endpoint listening on ${server.url} (not a model: it answers research-lab roles with generated JSON). Ctrl+C stops it.`);
  await new Promise<void>((done) => {
    const stop = (): void => void server.close().then(done);
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  return 0;
}

function exampleNextSteps(dir: string, example: string): string {
  if (example === 'command-agents') {
    return [
      'Models have no baseUrl: the simulated endpoint answers with sim/answers.jsonl until you set models.main.baseUrl in .rollout-lab/lab.json.',
      `Run the Python agent on 8 tickets: rollout-lab run --workspace ${dir} --limit 8`,
      'For the Node agent: npm install in node/, then set "graph": {"kind": "command", "command": ["node", "node/agent.mjs"]} in .rollout-lab/lab.json.',
    ].join('\n');
  }
  return [
    'Models have no baseUrl: the simulated endpoint plays the teacher (its canned answers) until a phase registers a trained model.',
    `Run the whole learning run (untrained → SFT → GRPO, evaluated on the validation tasks): rollout-lab demo --train --workspace ${dir}`,
  ].join('\n');
}

/** `demo --train`: the example workspace (created when missing), the learning run, and its before/after table. */
async function demoTrain(v: Values): Promise<number> {
  const example = (v.example as string | undefined) ?? 'ticket-routing';
  if (!(LEARNING_EXAMPLES as readonly string[]).includes(example)) throw new UsageError(`demo --train runs the learning run of ${LEARNING_EXAMPLES.join(' or ')}, not "${example}"`);
  // Each example its own default folder, so trying the second after the first sets it up instead of rerunning the first.
  const workspace = resolve((v.workspace as string) ?? (example === 'ticket-routing' ? 'demo-train-workspace' : `demo-train-${example}`));
  if (!existsSync(resolve(workspace, '.rollout-lab/lab.json'))) {
    const r = await initWorkspace(workspace, { example });
    err(`initialised ${workspace} from the ${example} example (${r.created.length} files)`);
  } else if (v.example !== undefined) {
    err(`note: ${workspace} is set up already, so --example ${example} does not change it; the learning run uses its lab.json`);
  }
  const { learningRun, learningSummary } = await import('../core/train/pipeline/learningRun');
  const { learningTable } = await import('./learningTable');
  const controller = new AbortController();
  const stop = (): void => controller.abort();
  process.once('SIGINT', stop);
  try {
    const result = await learningRun({ workspace, log: err, signal: controller.signal });
    if (v.json) out(JSON.stringify(result, null, 2));
    else {
      out(learningTable(result));
      out(learningSummary(result));
    }
    return 0;
  } finally {
    process.off('SIGINT', stop);
  }
}

async function demo(v: Values): Promise<number> {
  if (v.train) return demoTrain(v);
  if (v.example !== undefined) throw new UsageError('--example chooses the learning run\'s example: pass it with --train (rollout-lab demo --train --example stock-lookup)');
  const workspace = resolve((v.workspace as string) ?? 'demo-workspace');
  const limit = intOption(v, 'limit', 1) ?? 10;
  if (!existsSync(resolve(workspace, '.rollout-lab/lab.json'))) {
    // The full set beside the working folder or beside the clone; else init falls back to the bundled sample.
    const shared = [resolve('../shared/data/pubmedqa/ori_pqal.json'), resolve(__dirname, '../../shared/data/pubmedqa/ori_pqal.json')].find((p) => existsSync(p));
    const r = await initWorkspace(workspace, { dataset: shared });
    err(`initialised ${workspace} (${r.created.length} files)`);
    if (r.dataset) err(initDatasetNote(shared ? { ...r.dataset, source: 'shared' } : r.dataset, 'clone'));
  } else {
    const { loadConfig } = await import('../core/config/loader');
    // A demo folder an older version set up without ../shared has no dataset: say how to get the sample instead of "no dataset given".
    if (Object.keys((await loadConfig(workspace)).config.datasets).length === 0) {
      throw new UsageError(`${workspace} has no dataset (set up by an older version with nothing beside the clone) — remove that folder and run the demo again: it sets it up on the bundled PubMedQA sample`);
    }
  }
  const common = { workspace, 'base-url': v['base-url'], model: v.model, limit: String(limit) };
  err(`demo: gather ${limit} training rollouts, then evaluate on ${limit} validation tasks`);
  const code = await batch('run', { ...common, split: 'train', concurrency: '4' });
  if (code !== 0) return code;
  return batch('eval', { ...common, split: 'val', concurrency: '4' });
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    // `rollout-lab help run` is `rollout-lab run --help`.
    const topic = command === 'help' ? rest[0] : undefined;
    if (topic === undefined) {
      out(globalUsage());
      return command ? 0 : 2;
    }
    if (!isCommandName(topic)) throw new UsageError(`no command "${topic}" — one of ${COMMAND_NAMES.join(', ')}`);
    out(commandUsage(topic));
    return 0;
  }
  if (!isCommandName(command)) throw new UsageError(`unknown command "${command}" — one of ${COMMAND_NAMES.join(', ')} (rollout-lab --help)`);
  const usage = commandUsage(command);
  switch (command) {
    case 'init': {
      const v = parse('init', rest, { ...COMMON, dataset: { type: 'string' }, graph: { type: 'string' }, export: { type: 'string' }, example: { type: 'string' }, force: { type: 'boolean' } });
      if (v.help) return out(usage), 0;
      if (v.example !== undefined && (v.graph !== undefined || v.dataset !== undefined)) throw new UsageError('--example sets up its own graph and dataset: pass it without --graph and --dataset');
      if (v.export !== undefined && v.graph === undefined) throw new UsageError('--export names an export of a graph module: pass it together with --graph FILE');
      const dir = resolve((v.workspace as string) ?? '.');
      const r = await initWorkspace(dir, {
        force: Boolean(v.force),
        dataset: v.dataset as string | undefined,
        graph: v.graph as string | undefined,
        graphExport: v.export as string | undefined,
        example: v.example as string | undefined,
      });
      if (v.json) out(JSON.stringify({ workspace: dir, ...r }));
      else {
        for (const f of r.created) out(`created ${f}`);
        for (const f of r.skipped) out(`kept    ${f} (exists; --force overwrites)`);
        if (r.dataset) out(initDatasetNote(r.dataset, 'workspace'));
        if (r.agents) out(`agents (${r.agents.source === 'factory' ? "named by the factory's ctx.model() / ctx.prompt() calls" : "the graph's agent nodes"}): ${r.agents.names.join(', ')}`);
        if (v.example !== undefined) out(exampleNextSteps(dir, String(v.example)));
        else out('Models have no baseUrl yet, so runs use the SIMULATED endpoint until you set one in .rollout-lab/lab.json.');
      }
      return 0;
    }
    case 'run':
    case 'eval': {
      const v = parse(command, rest, RUN_OPTIONS);
      if (v.help) return out(usage), 0;
      return batch(command, v);
    }
    case 'traces': {
      if (rest[0] === 'export') return tracesExportCommand(rest.slice(1), usage);
      // The export options are listed in traces' help: accepted here so that help works, refused without `export`.
      const v = parse('traces', rest, { ...COMMON, rollout: { type: 'string' }, full: { type: 'boolean' }, run: { type: 'string' }, limit: { type: 'string' }, otlp: { type: 'string' }, headers: { type: 'string' }, protocol: { type: 'string' } });
      if (v.help) return out(usage), 0;
      if (v.otlp !== undefined || v.headers !== undefined || v.protocol !== undefined) throw new UsageError('--otlp, --headers and --protocol belong to `rollout-lab traces export`: put "export" right after "traces"');
      return traces(v);
    }
    case 'sim': {
      const v = parse('sim', rest, { port: { type: 'string' }, 'latency-ms': { type: 'string' }, help: { type: 'boolean', short: 'h' } });
      if (v.help) return out(usage), 0;
      return sim(v);
    }
    case 'collect':
      return collectCommand(rest, usage);
    case 'compact': {
      const v = parse('compact', rest, { workspace: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } });
      if (v.help) return out(usage), 0;
      return compact(v);
    }
    case 'demo': {
      const v = parse('demo', rest, { ...COMMON, limit: { type: 'string' }, train: { type: 'boolean' }, example: { type: 'string' } });
      if (v.help) return out(usage), 0;
      return demo(v);
    }
    case 'rescore':
      return rescoreCommand(rest, usage);
    case 'report':
      return reportCommand(rest, usage);
    case 'compare':
      return compareCommand(rest, usage);
    case 'export':
      return exportCommand(rest, usage);
    case 'preflight':
      return preflightCommand(rest, usage);
    case 'bandit':
      return banditCommand(rest, usage);
    case 'optimize':
      return optimizeCommand(rest, usage);
    case 'pipeline':
      return pipelineCommand(rest, usage);
    case 'train':
      return trainCommand(rest, usage);
    case 'jobs':
      return jobsCommand(rest, usage);
  }
}

// Idle keep-alive sockets of the HTTP client would hold the process open for seconds after the work is done.
function exitAfterFlush(code: number): void {
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

/** Runs the CLI on process.argv and exits with its code. */
export function runCli(): void {
  main(process.argv.slice(2)).then(
    (code) => exitAfterFlush(code),
    (e: unknown) => {
      const code = e instanceof LabError ? e.exitCode : 1;
      err(`rollout-lab: ${errorMessage(e).split('\n')[0]}`);
      if (process.env.ROLLOUT_LAB_DEBUG && e instanceof Error) err(e.stack ?? '');
      exitAfterFlush(code);
    },
  );
}

if (require.main === module) runCli();
