import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../src/core/lab/init';
import { Lab } from '../../src/core/lab/lab';
import { runRollouts } from '../../src/core/rollout/runner';

/*
 * Real labs with real rollouts against the simulated endpoint, for the tests
 * of the graph view and reward curve data (unit) and panels (webview).
 */

export const PUBMEDQA = resolve(__dirname, '../../../shared/data/pubmedqa/ori_pqal.json');
export const CUSTOM_GRAPH = resolve(__dirname, '../../examples/custom-graph/graph.ts');

export interface TempLab {
  dir: string;
  /** Opens the workspace (again); the caller closes what it opens. */
  open(): Promise<Lab>;
  /** Runs rollouts of `limit` tasks (train split unless told) in a lab opened and closed here; returns the run id. */
  run(opts: { limit: number; seed: number; samples?: number; dataset?: string; split?: 'train' | 'val' | 'all'; baseUrl?: string }): Promise<string>;
  /** Rewrites lab.json through a function of its parsed content. */
  editConfig(edit: (cfg: Record<string, any>) => void): void;
  remove(): void;
}

export async function tempLab(prefix: string): Promise<TempLab> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  const configFile = join(dir, '.rollout-lab', 'lab.json');
  const open = (): Promise<Lab> => Lab.open({ workspace: dir, env: {} });
  return {
    dir,
    open,
    async run({ limit, seed, samples = 1, dataset, split = 'train', baseUrl }) {
      const lab = baseUrl ? await Lab.open({ workspace: dir, env: {}, baseUrl }) : await open();
      try {
        const ds = await lab.loadDataset(dataset);
        const tasks = lab.selectTasks(ds, { split, limit, seed });
        const env = await lab.environment(ds.tasks);
        const r = await runRollouts(env, { tasks, samples, concurrency: 4, params: { limit, seed }, seed });
        return r.runId;
      } finally {
        await lab.close();
      }
    },
    editConfig(edit) {
      const cfg = JSON.parse(readFileSync(configFile, 'utf8')) as Record<string, any>;
      edit(cfg);
      writeFileSync(configFile, JSON.stringify(cfg, null, 2));
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A lab whose graph is a user module (by default examples/custom-graph), with a Writer and a Critic. */
export async function tempModuleLab(prefix: string, module = CUSTOM_GRAPH): Promise<TempLab> {
  const lab = await tempLab(prefix);
  lab.editConfig((cfg) => {
    cfg.graph = { kind: 'module', module };
    cfg.agents = {
      Writer: { model: 'senior', promptText: 'You write a short, well-grounded answer to the research question. Reply with the answer only.' },
      Critic: { model: 'strong', promptText: 'Reply with one JSON object with "verdict" ("APPROVE" or "REVISE") and "feedback".' },
    };
  });
  return lab;
}

