import * as vscode from 'vscode';
import { core } from '../coreLoader';
import type { RolloutQuery } from '../../core/store/types';
import type { LabService } from '../labService';

export interface RescoreRequest {
  runId?: string;
  split?: 'train' | 'val';
  note?: string;
  /** The weights the caller believes lab.json holds; refused when it holds others. */
  expect?: Record<string, { weight: number }>;
  /** Only these rollouts (a selection in the Rollouts Table). */
  rolloutIds?: readonly string[];
  /** true: no confirmation dialog (tests, keybindings that pass { confirm: true }). */
  confirmed?: boolean;
}

export interface RescoreOutcome {
  confirmed: boolean;
  rescoreId: string | null;
  rescored: number;
  kept: number;
  changed: number;
}

/**
 * The explicit re-score: stored rollouts get a new final reward under the
 * weights saved in lab.json (read from disk now, not the lab opened earlier),
 * after a modal confirmation. The store keeps every earlier reward as a
 * revision, so nothing is lost; open panels and the tree hear about it.
 */
export async function rescoreStored(service: LabService, req: RescoreRequest): Promise<RescoreOutcome> {
  const folder = service.resolveFolder();
  const { loadConfig } = await core.config();
  const { rescoreStoredRollouts } = await core.rescoreStore();
  const { rewardChanged } = await import('./whatIf');
  const { config } = await loadConfig(folder);
  const weights = Object.fromEntries(Object.entries(config.reward.criteria).map(([name, c]) => [name, { weight: c.weight }]));
  if (req.expect && !sameWeights(req.expect, weights)) {
    throw new Error('lab.json holds other weights than the editor shows as saved — save your edits (or reload the editor) and re-score again');
  }
  const query: RolloutQuery = { ...(req.runId ? { runId: req.runId } : {}), ...(req.split ? { split: req.split } : {}) };
  return service.withLab(folder, async (lab) => {
    const dry = rescoreStoredRollouts(lab.store, weights, { query, rolloutIds: req.rolloutIds, dryRun: true });
    const n = dry.result.rescored;
    if (n === 0) {
      const kept = dry.result.kept;
      throw new Error(
        kept > 0
          ? `none of the ${kept} stored rollouts in scope can be re-scored: they have no criterion scores or their judge failed, so they keep their reward`
          : 'no stored rollouts with a reward in scope — run some first',
      );
    }
    if (!req.confirmed) {
      const scope = req.rolloutIds ? ' of the selection' : req.runId ? ` of run ${req.runId}` : req.split ? ` of the ${req.split} split` : '';
      const detail = `Weights: ${Object.entries(weights)
        .map(([name, c]) => `${name} ${c.weight}`)
        .join(', ')}.${dry.result.kept ? ` ${dry.result.kept} rollouts without criterion scores keep their reward.` : ''}`;
      const choice = await vscode.window.showWarningMessage(
        `Re-score ${n} stored rollouts${scope} under these weights? Their current rewards are kept in the history.`,
        { modal: true, detail },
        'Re-score',
      );
      if (choice !== 'Re-score') return { confirmed: false, rescoreId: null, rescored: 0, kept: 0, changed: 0 };
    }
    const { result, rescoreId } = rescoreStoredRollouts(lab.store, weights, { query, rolloutIds: req.rolloutIds, note: req.note });
    service.notifyStoreChanged(folder);
    const changed = result.rows.filter(rewardChanged).length;
    return { confirmed: true, rescoreId, rescored: result.rescored, kept: result.kept, changed };
  });
}

function sameWeights(a: Record<string, { weight: number }>, b: Record<string, { weight: number }>): boolean {
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && a[k]!.weight === b[k]!.weight);
}
