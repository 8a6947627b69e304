import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { LabConfig } from '../config/schema';
import { RuntimeFailure, UsageError } from '../errors';
import { JUNIOR_AGENTS, SENIOR_AGENTS } from '../graph/researchLab/outputs';
import { fsyncPath, writeFileAtomic } from '../store/atomicFile';
import { tempFileName } from '../store/storePaths';
import type { TraceStore } from '../store/traceStore';
import { SUPERVISOR, banditRecordOfRollout } from './adapters/banditAdapter';
import { CREDIT_SCHEMES, DEFAULT_GAMMA, rlRecordsOfRollout, type CreditScheme } from './adapters/rlAdapter';
import { countSkip, selectRollouts, sortedCounts, type RolloutFilter, type SelectedRollout } from './adapters/rolloutSelection';
import { sftRecordsOfRollout } from './adapters/sftAdapter';

export type ExportFormat = 'sft' | 'rl' | 'bandit';
export const EXPORT_FORMATS: readonly ExportFormat[] = ['sft', 'rl', 'bandit'];

export interface ExportOptions {
  format: ExportFormat;
  agents?: string[];
  minReward?: number;
  split?: 'train' | 'val';
  credit?: CreditScheme;
  gamma?: number;
  promptVersion?: string;
  modelVersion?: string;
  runId?: string;
}

/** The options an export ran with, defaults filled in; null where a filter was not set. */
export interface ResolvedExportOptions {
  agents: string[];
  minReward: number | null;
  split: 'train' | 'val' | null;
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
  counts: { rollouts: number; records: number; groups?: number; skipped: Record<string, number> };
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

/** Who each format trains by default: SFT the juniors on successes, GRPO the seniors, the bandit the Supervisor. */
export const DEFAULT_EXPORT_AGENTS: Record<ExportFormat, readonly string[]> = {
  sft: JUNIOR_AGENTS,
  rl: SENIOR_AGENTS,
  bandit: [SUPERVISOR],
};
/** SFT learns from successes only: rollouts at or over this reward. */
export const DEFAULT_SFT_MIN_REWARD = 0.7;

export function manifestPath(outFile: string): string {
  return `${resolve(outFile)}.manifest.json`;
}

function resolveOptions(config: LabConfig, opts: ExportOptions): ResolvedExportOptions {
  if (!EXPORT_FORMATS.includes(opts.format)) throw new UsageError(`export format must be one of ${EXPORT_FORMATS.join(', ')}, got "${String(opts.format)}"`);
  const agents = opts.agents?.length ? [...new Set(opts.agents)] : [...DEFAULT_EXPORT_AGENTS[opts.format]];
  const known = Object.keys(config.agents);
  const unknown = agents.filter((a) => !known.includes(a));
  if (unknown.length) throw new UsageError(`unknown agent${unknown.length > 1 ? 's' : ''} ${unknown.map((a) => `"${a}"`).join(', ')} — the agents in lab.json are: ${known.join(', ')}`);
  if (opts.format === 'bandit' && agents.some((a) => a !== SUPERVISOR)) {
    throw new UsageError(`the bandit export reads the ${SUPERVISOR}'s decisions; leave out the agents or give ${SUPERVISOR}`);
  }
  const minReward = opts.minReward ?? (opts.format === 'sft' ? DEFAULT_SFT_MIN_REWARD : null);
  if (minReward !== null && !Number.isFinite(minReward)) throw new UsageError(`the minimum reward must be a number, got "${String(minReward)}"`);
  if (opts.split !== undefined && opts.split !== 'train' && opts.split !== 'val') throw new UsageError(`the split must be train or val, got "${String(opts.split)}"`);
  const rl = opts.format === 'rl';
  const credit = opts.credit ?? 'equal';
  if (!CREDIT_SCHEMES.includes(credit)) throw new UsageError(`credit must be one of ${CREDIT_SCHEMES.join(', ')}, got "${String(credit)}"`);
  const gamma = opts.gamma ?? DEFAULT_GAMMA;
  if (!(gamma >= 0 && gamma <= 1)) throw new UsageError(`gamma must be between 0 and 1, got "${String(gamma)}"`);
  return {
    agents,
    minReward,
    split: opts.split ?? null,
    credit: rl ? credit : null,
    gamma: rl ? gamma : null,
    promptVersion: opts.promptVersion ?? null,
    modelVersion: opts.modelVersion ?? null,
    runId: opts.runId ?? null,
  };
}

function filterOf(o: ResolvedExportOptions): RolloutFilter {
  const f: RolloutFilter = { agents: o.agents };
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

/**
 * Writes the training data of stored rollouts as JSONL (one record per line)
 * and its manifest beside it (`FILE.manifest.json`). Rollouts are read one at
 * a time and their lines written at once, so memory stays flat however many
 * there are; lines go to a temp file renamed over FILE at the end, so a
 * crash or a cancel never leaves half a file. The same store and options give
 * the same bytes: rollouts in start order (ties by id; for RL grouped by task
 * first), calls in start order, keys in fixed order.
 */
export async function exportTrainingData(
  store: TraceStore,
  config: LabConfig,
  opts: ExportOptions,
  outFile: string,
  hooks: ExportHooks = {},
): Promise<ExportManifest> {
  const options = resolveOptions(config, opts);
  const file = resolve(outFile);
  checkOutFile(file);
  const filter = filterOf(options);
  const skipped: Record<string, number> = {};
  const selected = selectRollouts(store, filter, skipped);
  if (opts.format === 'rl') selected.sort(byTaskThenStart);

  const linesOf = (r: SelectedRollout): string[] => {
    const spans = store.getSpans(r.id);
    if (opts.format === 'sft') return sftRecordsOfRollout(r, spans, filter, skipped).map((x) => JSON.stringify(x));
    if (opts.format === 'rl') {
      return rlRecordsOfRollout(r, spans, filter, { credit: options.credit!, gamma: options.gamma! }, skipped).map((x) => JSON.stringify(x));
    }
    const rec = banditRecordOfRollout(r, spans);
    if ('skip' in rec) {
      countSkip(skipped, rec.skip);
      return [];
    }
    return [JSON.stringify(rec)];
  };

  const tmp = join(dirname(file), tempFileName(basename(file)));
  const hash = createHash('sha256');
  const sourceRollouts: string[] = [];
  const groups = new Set<string>();
  let records = 0;
  const fh = await open(tmp, 'w');
  try {
    for (const [i, r] of selected.entries()) {
      if (hooks.signal?.aborted) throw new RuntimeFailure('the export was cancelled; nothing was written');
      const lines = linesOf(r);
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
      skipped: sortedCounts(skipped),
    },
    sourceRollouts,
    sha256: hash.digest('hex'),
  };
  writeFileAtomic(manifestPath(file), Buffer.from(JSON.stringify(manifest, null, 2) + '\n'));
  return manifest;
}
