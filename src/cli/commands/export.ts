import type { ParseArgsConfig } from 'node:util';
import { resolve } from 'node:path';
import { UsageError } from '../../core/errors';
import type { ExportManifest, ExportOptions } from '../../core/train/export/exportData';
import { COMMON, givenSplit, out, parse, type Values } from '../args';

const OPTIONS = {
  workspace: COMMON.workspace,
  json: COMMON.json,
  help: COMMON.help,
  format: { type: 'string' },
  out: { type: 'string' },
  agents: { type: 'string' },
  'min-reward': { type: 'string' },
  split: { type: 'string' },
  credit: { type: 'string' },
  gamma: { type: 'string' },
  'prompt-version': { type: 'string' },
  'model-version': { type: 'string' },
  run: { type: 'string' },
  'include-simulated': { type: 'boolean' },
  'include-penalised': { type: 'boolean' },
} as const satisfies ParseArgsConfig['options'];

function numberOption(v: Values, name: string): number | undefined {
  const raw = v[name];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (typeof raw !== 'string' || raw.trim() === '' || !Number.isFinite(n)) throw new UsageError(`export: --${name} must be a number, got "${String(raw)}"`);
  return n;
}

function exportOptions(v: Values): ExportOptions {
  const format = v.format as string | undefined;
  if (format === undefined) throw new UsageError('export: --format is required: sft, rl or bandit');
  if (format !== 'sft' && format !== 'rl' && format !== 'bandit') throw new UsageError(`export: --format must be sft, rl or bandit, got "${format}"`);
  const opts: ExportOptions = { format };
  if (v.agents !== undefined) {
    const agents = String(v.agents).split(',').map((a) => a.trim()).filter(Boolean);
    if (!agents.length) throw new UsageError('export: --agents needs at least one agent name, e.g. --agents Writer,Critic (the agents of lab.json)');
    opts.agents = agents;
  }
  const minReward = numberOption(v, 'min-reward');
  if (minReward !== undefined) opts.minReward = minReward;
  const gamma = numberOption(v, 'gamma');
  if (gamma !== undefined) opts.gamma = gamma;
  const split = givenSplit(v, 'export');
  if (split) opts.split = split;
  if (v['include-simulated']) opts.includeSimulated = true;
  if (v['include-penalised']) opts.includePenalised = true;
  const credit = v.credit as string | undefined;
  if (credit !== undefined) {
    if (format !== 'rl') throw new UsageError('export: --credit applies to --format rl only');
    if (credit !== 'equal' && credit !== 'last' && credit !== 'discounted') throw new UsageError(`export: --credit must be equal, last or discounted, got "${credit}"`);
    opts.credit = credit;
  }
  if (v['prompt-version'] !== undefined) opts.promptVersion = String(v['prompt-version']);
  if (v['model-version'] !== undefined) opts.modelVersion = String(v['model-version']);
  if (v.run !== undefined) opts.runId = String(v.run);
  return opts;
}

/**
 * rollout-lab export: writes the training data of the stored rollouts as
 * JSONL (SFT conversations, RL transitions grouped by task, or the
 * Supervisor's bandit decisions) with FILE.manifest.json beside it. The
 * train split by default; simulated rollouts only with --include-simulated,
 * rollouts whose reward is a penalty only with --include-penalised. No rows
 * at all: exit 1 with what was dropped and why, and no file written.
 */
export async function exportCommand(argv: string[], usage: string): Promise<number> {
  const v = parse('export', argv, OPTIONS);
  if (v.help) return out(usage), 0;
  const opts = exportOptions(v);
  if (typeof v.out !== 'string' || !v.out) throw new UsageError('export: --out FILE is required (the JSONL file to write)');
  const { loadConfig } = await import('../../core/config/loader');
  const { TraceStore } = await import('../../core/store/traceStore');
  const { exportTrainingData, manifestPath } = await import('../../core/train/export/exportData');
  const loaded = await loadConfig(resolve((v.workspace as string) ?? '.'));
  // Exporting only reads: a read-only store writes no journal and no checkpoint.
  const store = await TraceStore.open(loaded.workspaceDir, { readOnly: true });
  try {
    if (opts.runId !== undefined && !store.getRun(opts.runId)) {
      throw new UsageError(`export: run "${opts.runId}" is not in this workspace's store — list runs with \`rollout-lab traces\``);
    }
    const manifest = await exportTrainingData(store, loaded.config, opts, resolve(v.out));
    if (v.json) out(JSON.stringify({ ...manifest, manifestFile: manifestPath(manifest.file) }));
    else printSummary(manifest, manifestPath(manifest.file));
    return 0;
  } finally {
    await store.close();
  }
}

function printSummary(m: ExportManifest, manifestFile: string): void {
  const groups = m.counts.groups !== undefined ? ` in ${m.counts.groups} task groups` : '';
  out(`${m.format}: ${m.counts.records} records from ${m.counts.rollouts} rollouts${groups} → ${m.file}`);
  const o = m.options;
  const filters = [
    o.agents.length ? `agents ${o.agents.join(',')}` : 'agents: none made model calls in scope',
    o.minReward !== null ? `reward ≥ ${o.minReward}` : null,
    `split ${o.split ?? 'all'}`,
    o.includeSimulated ? 'simulated rollouts included' : null,
    o.includePenalised ? 'penalised rollouts included' : null,
    o.runId ? `run ${o.runId}` : null,
    o.promptVersion ? `prompt ${o.promptVersion}` : null,
    o.modelVersion ? `model ${o.modelVersion}` : null,
    o.credit ? `credit ${o.credit}${o.credit === 'discounted' ? ` (gamma ${o.gamma})` : ''}` : null,
  ].filter(Boolean);
  out(`filters: ${filters.join('; ')}`);
  const skipped = Object.entries(m.counts.skipped);
  if (skipped.length) out(`skipped: ${skipped.map(([k, n]) => `${k} ${n}`).join(', ')}`);
  const simulated = m.counts.skipped.simulated ?? 0;
  if (simulated) out(`${simulated} simulated rollouts left out (pass --include-simulated to use them)`);
  const penalised = m.counts.skipped.penalised ?? 0;
  if (penalised) out(`${penalised} rollouts whose reward is a penalty (the judge or the custom reward failed) left out (pass --include-penalised to use them)`);
  if (m.counts.penalised) out(`${m.counts.penalised} rollouts whose reward is a penalty are included: their rows say reward_source "penalty" and why`);
  out(`sha256: ${m.sha256}`);
  out(`manifest: ${manifestFile}`);
}
