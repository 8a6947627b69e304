import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { LabConfig } from '../../config/schema';
import { RuntimeFailure, UsageError } from '../../errors';
import { fsyncPath, writeFileAtomic } from '../../store/atomicFile';
import { tempFileName } from '../../store/storePaths';
import type { TraceStore } from '../../store/traceStore';
import { banditRecordOfRollout } from './adapters/banditAdapter';
import { CREDIT_SCHEMES, DEFAULT_GAMMA, rlRecordsOfRollout, type CreditScheme } from './adapters/rlAdapter';
import {
  agentsWithModelCalls,
  countSkip,
  selectRollouts,
  sortedCounts,
  type RolloutFilter,
  type RolloutScope,
  type SelectedRollout,
} from './adapters/rolloutSelection';
import { PENALISED, rewardOrigin, rewardPenalty } from './adapters/rewardPenalty';
import { sftRecordsOfRollout } from './adapters/sftAdapter';
import { EmptyExportError, NO_AGENT_CALLS } from './emptyExport';
import { DEFAULT_SFT_MIN_REWARD, defaultTrainingAgents, isResearchLabGraph, requireBanditGraph, type TrainingRole } from './trainingDefaults';

export type ExportFormat = 'sft' | 'rl' | 'bandit';
export const EXPORT_FORMATS: readonly ExportFormat[] = ['sft', 'rl', 'bandit'];

export type ExportSplit = 'train' | 'val' | 'all';

export interface ExportOptions {
  format: ExportFormat;
  /** Default: see defaultExportAgents. */
  agents?: string[];
  minReward?: number;
  /** Default 'train', as the pipeline's phases; 'all' reads every split. */
  split?: ExportSplit;
  /** Rollouts of the simulated endpoint are left out (and counted) unless this is true. */
  includeSimulated?: boolean;
  /**
   * Rollouts whose reward is a penalty (the judge or the custom reward
   * failed) are left out (and counted) unless this is true; their rows then
   * say `reward_source: "penalty"` and why.
   */
  includePenalised?: boolean;
  credit?: CreditScheme;
  gamma?: number;
  promptVersion?: string;
  modelVersion?: string;
  runId?: string;
  /** Only these rollouts (a selection in the Rollouts Table); the other filters still apply. */
  rolloutIds?: readonly string[];
}

/** The options an export ran with, defaults filled in; null where a filter was not set. */
export interface ResolvedExportOptions {
  agents: string[];
  minReward: number | null;
  /** null: every split. */
  split: 'train' | 'val' | null;
  includeSimulated: boolean;
  includePenalised: boolean;
  credit: CreditScheme | null;
  gamma: number | null;
  promptVersion: string | null;
  modelVersion: string | null;
  runId: string | null;
}

export interface ExportManifest {
  format: ExportFormat;
  /** Absolute path of the JSONL file. */
  file: string;
  /** ISO 8601. */
  createdAt: string;
  options: ResolvedExportOptions;
  /** `penalised`: rollouts in the file whose reward is a penalty (only with includePenalised; left out, they are `skipped.penalised`). */
  counts: { rollouts: number; records: number; groups?: number; penalised: number; skipped: Record<string, number> };
  /** Rollouts that gave at least one record, in the order their records appear. */
  sourceRollouts: string[];
  /** sha256 of the JSONL file, hex. */
  sha256: string;
}

export interface ExportHooks {
  signal?: AbortSignal;
  /** Called after each selected rollout is read. */
  onProgress?: (done: number, total: number) => void;
}

/** Exports read the train split unless told otherwise, as the pipeline's phases do. */
const DEFAULT_EXPORT_SPLIT: ExportSplit = 'train';
const EXPORT_SPLITS: readonly ExportSplit[] = ['train', 'val', 'all'];
const ROLE: Record<ExportFormat, TrainingRole> = { sft: 'sft', rl: 'rl', bandit: 'bandit' };

/**
 * Who a format trains when no agents are named: on the research-lab graph
 * SFT the juniors, RL the seniors, the bandit the Supervisor; on a module
 * graph the agents lab.json marks trainable, else every agent that made
 * model calls in the rollouts in scope.
 */
export function defaultExportAgents(store: TraceStore, config: LabConfig, format: ExportFormat, scope: RolloutScope): string[] {
  return defaultTrainingAgents(config, ROLE[format], () => agentsWithModelCalls(store, scope));
}

export function manifestPath(outFile: string): string {
  return `${resolve(outFile)}.manifest.json`;
}

function resolveOptions(store: TraceStore, config: LabConfig, opts: ExportOptions, checkNames = true): ResolvedExportOptions {
  if (!EXPORT_FORMATS.includes(opts.format)) throw new UsageError(`export format must be one of ${EXPORT_FORMATS.join(', ')}, got "${String(opts.format)}"`);
  if (opts.format === 'bandit') requireBanditGraph(config);
  const splitOpt = opts.split ?? DEFAULT_EXPORT_SPLIT;
  if (!EXPORT_SPLITS.includes(splitOpt)) throw new UsageError(`the split must be train, val or all, got "${String(opts.split)}"`);
  const split = splitOpt === 'all' ? null : splitOpt;
  const includeSimulated = opts.includeSimulated === true;
  const scope: RolloutScope = { ...(split ? { split } : {}), ...(opts.runId !== undefined ? { runId: opts.runId } : {}), includeSimulated };
  const agents = opts.agents?.length ? [...new Set(opts.agents)] : defaultExportAgents(store, config, opts.format, scope);
  if (checkNames) checkAgentNames(store, config, opts.agents ?? [], scope);
  if (opts.format === 'bandit' && agents.some((a) => a !== config.bandit.agent)) {
    throw new UsageError(`the bandit export reads the ${config.bandit.agent}'s decisions; leave out the agents or give ${config.bandit.agent}`);
  }
  const minReward = opts.minReward ?? (opts.format === 'sft' ? DEFAULT_SFT_MIN_REWARD : null);
  if (minReward !== null && !Number.isFinite(minReward)) throw new UsageError(`the minimum reward must be a number, got "${String(minReward)}"`);
  const rl = opts.format === 'rl';
  const credit = opts.credit ?? 'equal';
  if (!CREDIT_SCHEMES.includes(credit)) throw new UsageError(`credit must be one of ${CREDIT_SCHEMES.join(', ')}, got "${String(credit)}"`);
  const gamma = opts.gamma ?? DEFAULT_GAMMA;
  if (!(gamma >= 0 && gamma <= 1)) throw new UsageError(`gamma must be between 0 and 1, got "${String(gamma)}"`);
  return {
    agents,
    minReward,
    split,
    includeSimulated,
    includePenalised: opts.includePenalised === true,
    credit: rl ? credit : null,
    gamma: rl ? gamma : null,
    promptVersion: opts.promptVersion ?? null,
    modelVersion: opts.modelVersion ?? null,
    runId: opts.runId ?? null,
  };
}

/**
 * Named agents must exist: lab.json's agents, or (for a module graph, whose
 * nodes may call models under names lab.json does not list) agents seen
 * making model calls in scope.
 */
function checkAgentNames(store: TraceStore, config: LabConfig, named: readonly string[], scope: RolloutScope): void {
  const declared = Object.keys(config.agents);
  let unknown = named.filter((a) => !declared.includes(a));
  if (unknown.length && !isResearchLabGraph(config)) {
    const seen = agentsWithModelCalls(store, { ...scope, includeSimulated: true });
    unknown = unknown.filter((a) => !seen.includes(a));
  }
  if (unknown.length) {
    throw new UsageError(`unknown agent${unknown.length > 1 ? 's' : ''} ${unknown.map((a) => `"${a}"`).join(', ')} — the agents in lab.json are: ${declared.join(', ')}`);
  }
}

function filterOf(o: ResolvedExportOptions, format: ExportFormat): RolloutFilter {
  const f: RolloutFilter = { agents: o.agents, includeSimulated: o.includeSimulated, includePenalised: o.includePenalised, keepScoredFailures: format === 'rl' };
  if (o.minReward !== null) f.minReward = o.minReward;
  if (o.split !== null) f.split = o.split;
  if (o.runId !== null) f.runId = o.runId;
  if (o.promptVersion !== null) f.promptVersion = o.promptVersion;
  if (o.modelVersion !== null) f.modelVersion = o.modelVersion;
  return f;
}

function byTaskThenStart(a: SelectedRollout, b: SelectedRollout): number {
  const key = (r: SelectedRollout): [string, number, string] => [r.taskId, r.startTime, r.id];
  const [ta, sa, ia] = key(a);
  const [tb, sb, ib] = key(b);
  if (ta !== tb) return ta < tb ? -1 : 1;
  if (sa !== sb) return sa - sb;
  return ia < ib ? -1 : ia > ib ? 1 : 0;
}

function checkOutFile(file: string): void {
  try {
    if (statSync(file).isDirectory()) throw new UsageError(`${file} is a folder; give the path of the JSONL file to write`);
  } catch (err) {
    if (err instanceof UsageError) throw err;
  }
  try {
    mkdirSync(dirname(file), { recursive: true });
  } catch (err) {
    throw new RuntimeFailure(`cannot create the folder of ${file}: ${(err as Error).message}; check the path and its permissions`);
  }
}

/** The rows of an export, a rollout at a time, with what was left out and why. */
interface ExportPass {
  options: ResolvedExportOptions;
  selected: SelectedRollout[];
  /** The JSONL lines of one selected rollout (none: counted in `skipped`). */
  linesOf(r: SelectedRollout): string[];
  skipped: Record<string, number>;
  /** Rollouts with lines whose reward is a penalty. */
  penalised: number;
}

function exportPass(store: TraceStore, config: LabConfig, opts: ExportOptions, checkNames = true): ExportPass {
  const options = resolveOptions(store, config, opts, checkNames);
  const filter = filterOf(options, opts.format);
  const skipped: Record<string, number> = {};
  const only = opts.rolloutIds ? new Set(opts.rolloutIds) : null;
  const selected = selectRollouts(store, filter, skipped).filter((r) => !only || only.has(r.id));
  if (opts.format === 'rl') selected.sort(byTaskThenStart);
  const pass: ExportPass = { options, selected, skipped, penalised: 0, linesOf: () => [] };
  const total = (): number => Object.values(skipped).reduce((a, b) => a + b, 0);
  pass.linesOf = (r) => {
    const spans = store.getSpans(r.id);
    const penalty = rewardPenalty(r, spans);
    if (penalty && !options.includePenalised) {
      countSkip(skipped, PENALISED);
      return [];
    }
    const origin = rewardOrigin(r, penalty);
    const before = total();
    let lines: string[];
    if (opts.format === 'sft') lines = sftRecordsOfRollout(r, spans, filter, origin, skipped).map((x) => JSON.stringify(x));
    else if (opts.format === 'rl') {
      lines = rlRecordsOfRollout(r, spans, filter, { credit: options.credit!, gamma: options.gamma! }, origin, skipped).map((x) => JSON.stringify(x));
    } else {
      const rec = banditRecordOfRollout(r, spans, origin);
      if ('skip' in rec) countSkip(skipped, rec.skip);
      lines = 'skip' in rec ? [] : [JSON.stringify(rec)];
    }
    // The agent ran (a visit of its node) but no model call carries its name: the calls went to another name.
    if (!lines.length && total() === before) countSkip(skipped, NO_AGENT_CALLS);
    if (lines.length && penalty) pass.penalised++;
    return lines;
  };
  return pass;
}

/** What an export with these options would hold, without writing it: the pre-flight's count of rows. */
export interface RowCount {
  options: ResolvedExportOptions;
  records: number;
  rollouts: number;
  penalised: number;
  skipped: Record<string, number>;
}

/** Counts the rows an export would write (agents are taken as given, unknown ones giving no rows). */
export function countTrainingRows(store: TraceStore, config: LabConfig, opts: ExportOptions): RowCount {
  const pass = exportPass(store, config, opts, false);
  let records = 0;
  let rollouts = 0;
  for (const r of pass.selected) {
    const n = pass.linesOf(r).length;
    records += n;
    if (n) rollouts++;
  }
  return { options: pass.options, records, rollouts, penalised: pass.penalised, skipped: sortedCounts(pass.skipped) };
}

/** The error of an export that found no rows: each reason rollouts and calls were dropped for, with its count and fix. */
function emptyExport(store: TraceStore, opts: ExportOptions, pass: ExportPass): EmptyExportError {
  const { options } = pass;
  const scope: RolloutScope = { ...(options.split ? { split: options.split } : {}), ...(options.runId !== null ? { runId: options.runId } : {}), includeSimulated: true };
  return new EmptyExportError({ format: opts.format, options, skipped: sortedCounts(pass.skipped), agentsSeen: agentsWithModelCalls(store, scope) });
}

/**
 * Writes the training data of stored rollouts as JSONL (one record per line)
 * and its manifest beside it (`FILE.manifest.json`). Rollouts are read one at
 * a time and their lines written at once, so memory stays flat however many
 * there are; lines go to a temp file renamed over FILE at the end, so a
 * crash or a cancel never leaves half a file. The same store and options give
 * the same bytes: rollouts in start order (ties by id; for RL grouped by task
 * first), calls in start order, keys in fixed order. An export that finds no
 * rows writes nothing (an earlier FILE stays as it was) and throws
 * EmptyExportError, which counts what was dropped and why.
 */
export async function exportTrainingData(
  store: TraceStore,
  config: LabConfig,
  opts: ExportOptions,
  outFile: string,
  hooks: ExportHooks = {},
): Promise<ExportManifest> {
  const pass = exportPass(store, config, opts);
  const { options, selected, skipped } = pass;
  const file = resolve(outFile);
  checkOutFile(file);

  const tmp = join(dirname(file), tempFileName(basename(file)));
  const hash = createHash('sha256');
  const sourceRollouts: string[] = [];
  const groups = new Set<string>();
  let records = 0;
  const fh = await open(tmp, 'w');
  try {
    for (const [i, r] of selected.entries()) {
      if (hooks.signal?.aborted) throw new RuntimeFailure('the export was cancelled; nothing was written');
      const lines = pass.linesOf(r);
      if (lines.length) {
        const chunk = lines.join('\n') + '\n';
        hash.update(chunk);
        await fh.write(chunk);
        records += lines.length;
        sourceRollouts.push(r.id);
        groups.add(r.taskId);
      }
      hooks.onProgress?.(i + 1, selected.length);
    }
    await fh.sync();
    await fh.close();
    if (records === 0) throw emptyExport(store, opts, pass);
    renameSync(tmp, file);
  } catch (err) {
    await fh.close().catch(() => undefined);
    try {
      unlinkSync(tmp);
    } catch {
      // already gone
    }
    throw err;
  }
  fsyncPath(dirname(file));

  const manifest: ExportManifest = {
    format: opts.format,
    file,
    createdAt: new Date().toISOString(),
    options,
    counts: {
      rollouts: sourceRollouts.length,
      records,
      ...(opts.format === 'rl' ? { groups: groups.size } : {}),
      penalised: pass.penalised,
      skipped: sortedCounts(skipped),
    },
    sourceRollouts,
    sha256: hash.digest('hex'),
  };
  writeFileAtomic(manifestPath(file), Buffer.from(JSON.stringify(manifest, null, 2) + '\n'));
  return manifest;
}
