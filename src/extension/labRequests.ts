import * as vscode from 'vscode';
import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { core } from './coreLoader';
import type { RolloutRecord } from '../core/store/types';
import type { TraceStore } from '../core/store/traceStore';
import type { RequestResults } from '../shared/protocol';
import { SpanPager } from '../core/store/spanPages';
import type { LabService } from './labService';
import type { RequestHandlers } from './webviews/panelHost';

/**
 * The host's answers to the panels' requests (the message catalogue in
 * src/shared/protocol.ts). Parameters arrive already checked by PanelHost.
 * The graph and reward queries live in core (lab/graphDescription.ts, analysis/graphStats.ts, analysis/rewardSeries.ts), loaded on first
 * use like the rest of the core.
 */
export function labRequestHandlers(service: LabService): RequestHandlers {
  const pager = new SpanPager();
  return {
    'trace/get': async ({ rolloutId, offset, limit }) => {
      const { store, rollout } = await findRollout(service, rolloutId);
      return pager.get(store, rollout, offset, limit);
    },
    'rollouts/list': async (q) => {
      const store = await service.store();
      return store.listRollouts({ ...q, sort: 'startTime', order: 'desc' });
    },
    'runs/list': async () => {
      const store = await service.store();
      return { runs: store.listRuns().sort((a, b) => b.startTime - a.startTime) };
    },
    'graph/describe': async () => {
      const { describeLabGraph } = await core.graphDescription();
      return describeLabGraph(await service.lab());
    },
    'graph/rolloutOverlay': async ({ rolloutId }) => {
      const { rolloutOverlay } = await core.graphStats();
      const { store } = await findRollout(service, rolloutId);
      return { rolloutId, ...rolloutOverlay(store.getSpans(rolloutId)) };
    },
    'graph/aggregate': async ({ runId }) => {
      const { nodeAggregates } = await core.graphStats();
      return nodeAggregates(await service.store(), { runId });
    },
    'rewards/series': async ({ runId }) => {
      const { rewardSeries } = await core.rewardSeries();
      const lab = await service.lab();
      return rewardSeries(lab.store, Object.keys(lab.loaded.config.reward.criteria), { runId });
    },
    'rewards/learningCurve': async ({ agent }) => {
      const { learningCurve } = await core.learningCurve();
      const lab = await service.lab();
      return learningCurve(lab.store, lab.loaded, agent ? { agent } : {});
    },
    'export/save': async ({ format, suggestedName, data }): Promise<RequestResults['export/save']> => {
      const folder = service.activeFolder();
      const name = suggestedName.toLowerCase().endsWith(`.${format}`) ? suggestedName : `${suggestedName}.${format}`;
      const target = await vscode.window.showSaveDialog({
        title: `Rollout Lab: save ${format.toUpperCase()}`,
        defaultUri: folder ? vscode.Uri.file(path.join(folder, name)) : undefined,
        filters: format === 'png' ? { 'PNG image': ['png'] } : { 'CSV table': ['csv'] },
        saveLabel: 'Save',
      });
      if (!target) return { saved: false, path: null };
      const bytes = format === 'png' ? decodePng(data) : Buffer.from(data, 'utf8');
      if (target.scheme === 'file') await writeFile(target.fsPath, bytes);
      else await vscode.workspace.fs.writeFile(target, bytes);
      return { saved: true, path: target.scheme === 'file' ? target.fsPath : target.toString() };
    },
  };
}

/** The store (of any lab in the workspace) that holds a rollout; looks again after a refresh before giving up. */
export async function findRollout(service: LabService, rolloutId: string): Promise<{ store: TraceStore; rollout: RolloutRecord; folder: string }> {
  const active = service.activeFolder();
  const folders = [...(active ? [active] : []), ...service.labFolders().filter((f) => f !== active)];
  if (folders.length === 0) service.resolveFolder();
  for (let attempt = 0; attempt < 2; attempt++) {
    for (const folder of folders) {
      const store = await service.store(folder);
      const rollout = store.getRollout(rolloutId);
      if (rollout) return { store, rollout, folder };
    }
    // Another process may have written it a moment ago.
    if (attempt === 0) await Promise.all(folders.map((f) => service.refresh(f)));
  }
  throw new Error(`rollout ${rolloutId} is not in the trace store of ${folders.map((f) => path.basename(f)).join(', ')}; it may have been written to another workspace`);
}

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** base64 (optionally a data: URL) → PNG bytes; anything that is not a PNG is refused, not written. */
function decodePng(data: string): Buffer {
  const b64 = data.replace(/^data:image\/png;base64,/, '');
  if (!/^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(b64)) throw new Error('the PNG data is not base64');
  const bytes = Buffer.from(b64, 'base64');
  if (bytes.length < PNG_MAGIC.length || !bytes.subarray(0, PNG_MAGIC.length).equals(PNG_MAGIC)) throw new Error('the data to save is not a PNG image');
  return bytes;
}
