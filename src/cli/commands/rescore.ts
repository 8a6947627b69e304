import type { ParseArgsConfig } from 'node:util';
import { resolve } from 'node:path';
import { UsageError } from '../../core/errors';
import type { RescoreResult } from '../../core/analysis/rescore';
import type { RolloutQuery } from '../../core/store/types';
import { COMMON, err, out, parse } from '../args';
import { num } from '../../core/analysis/numberFormat';
import { table } from '../../core/analysis/textTable';

const OPTIONS = {
  workspace: COMMON.workspace,
  json: COMMON.json,
  help: COMMON.help,
  run: { type: 'string' },
  split: { type: 'string' },
  'dry-run': { type: 'boolean' },
} as const satisfies ParseArgsConfig['options'];

/** Rollouts listed under "largest changes". */
const CHANGES_SHOWN = 10;

/**
 * rollout-lab rescore: gives the stored rollouts with a reward (of one run or
 * split, or all) new final rewards from their stored criterion scores under the
 * weights now in lab.json — no model calls. The earlier rewards stay in each
 * rollout's history. --dry-run only shows what would change.
 */
export async function rescoreCommand(argv: string[], usage: string): Promise<number> {
  const v = parse('rescore', argv, OPTIONS);
  if (v.help) return out(usage), 0;
  const split = v.split as string | undefined;
  if (split !== undefined && split !== 'train' && split !== 'val') throw new UsageError(`rescore: --split must be train or val, got "${split}"`);
  const dryRun = Boolean(v['dry-run']);
  const { loadConfig } = await import('../../core/config/loader');
  const { TraceStore } = await import('../../core/store/traceStore');
  const { rescoreStoredRollouts } = await import('../../core/analysis/rescoreStore');
  const loaded = await loadConfig(resolve((v.workspace as string) ?? '.'));
  const { reward } = loaded.config;
  const weights = Object.fromEntries(Object.entries(reward.criteria).map(([name, c]) => [name, { weight: c.weight }]));
  // A dry run must leave the store exactly as it was: no journal, no checkpoint.
  const store = await TraceStore.open(loaded.workspaceDir, { readOnly: dryRun });
  try {
    const query: RolloutQuery = {};
    if (v.run !== undefined) {
      if (!store.getRun(v.run as string)) throw new UsageError(`rescore: run "${String(v.run)}" is not in this workspace's store — list runs with \`rollout-lab traces\``);
      query.runId = v.run as string;
    }
    if (split === 'train' || split === 'val') query.split = split;
    if (reward.module) {
      err(
        `note: lab.json has a custom reward (${reward.module}, mode "${reward.mode}"); re-scoring recomputes the judge's weighted reward from the stored criterion scores, without the custom reward`,
      );
    }
    const { result, rescoreId } = rescoreStoredRollouts(store, weights, { query, dryRun, top: CHANGES_SHOWN });
    if (v.json) {
      out(JSON.stringify({ ...result, rescoreId, dryRun }));
      return 0;
    }
    if (!result.rows.length) {
      out('no rollouts with a reward in scope to re-score — run some first, or check --run and --split');
      return 0;
    }
    printResult(result, weights, { dryRun, rescoreId, file: loaded.file });
    return 0;
  } finally {
    await store.close();
  }
}

function printResult(result: RescoreResult, weights: Record<string, { weight: number }>, ctx: { dryRun: boolean; rescoreId: string | null; file: string }): void {
  const total = result.rows.length;
  out(`weights (${ctx.file}): ${Object.entries(weights).map(([name, c]) => `${name} ${c.weight}`).join(', ')}`);
  if (ctx.dryRun) out(`dry run: would re-score ${result.rescored} of ${total} rollouts with a reward; nothing was written`);
  else if (ctx.rescoreId) out(`re-scored ${result.rescored} of ${total} rollouts with a reward as ${ctx.rescoreId}; their earlier rewards stay in the history`);
  else out(`nothing re-scored: none of the ${total} rollouts with a reward has criterion scores from a judge that did not fail`);
  if (result.kept) out(`${result.kept} kept their reward: no criterion scores (no final output) or the judge failed`);
  if (result.missingCriteria.length) {
    out(`criteria without a stored score on some rollouts (counted as 0 there): ${result.missingCriteria.join(', ')}`);
  }
  out('');
  out(
    table(
      ['', 'before', 'after'],
      [
        ['mean', num(result.before.mean), num(result.after.mean)],
        ['median', num(result.before.median), num(result.after.median)],
        ['min', num(result.before.min), num(result.after.min)],
        ['max', num(result.before.max), num(result.after.max)],
      ],
    ),
  );
  out(`rank correlation (Spearman, before vs after): ${num(result.rankCorrelation)}`);
  const top = result.changedTop;
  out(
    top.changed
      ? `top ${top.k}: ${top.entered.length} entered, ${top.left.length} left${top.entered.length || top.left.length ? '' : ' (same rollouts, new order)'}`
      : `top ${top.k}: unchanged`,
  );

  const moved = result.rows
    .filter((r) => r.kept === null && r.before !== null && r.after !== null && Math.abs(r.after - r.before) > 1e-9)
    .sort((a, b) => Math.abs(b.after! - b.before!) - Math.abs(a.after! - a.before!) || a.rolloutId.localeCompare(b.rolloutId))
    .slice(0, CHANGES_SHOWN);
  out('');
  if (!moved.length) {
    out('no reward changed');
    return;
  }
  out(`largest changes (${moved.length}):`);
  out(
    table(
      ['rollout', 'task', 'before', 'after', 'change', 'rank'],
      moved.map((r) => [
        r.rolloutId,
        r.taskId,
        num(r.before),
        num(r.after),
        `${r.after! >= r.before! ? '+' : ''}${num(r.after! - r.before!)}`,
        `${r.rankBefore ?? '-'} → ${r.rankAfter ?? '-'}`,
      ]),
    ),
  );
}
