import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../src/core/lab/init';

const PUBMEDQA = resolve(__dirname, '../../shared/data/pubmedqa/ori_pqal.json');

/**
 * A research-lab workspace on the PubMedQA set in a new temporary folder; with `graphModule`, the one-call graph
 * module of fixtures/singleCall.graph.ts instead, so the runner's cost is measured rather than the graph's.
 */
export async function benchWorkspace(prefix: string, graphModule: boolean): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  if (graphModule) {
    copyFileSync(join(__dirname, 'fixtures/singleCall.graph.ts'), join(dir, 'graph.ts'));
    const file = join(dir, '.rollout-lab/lab.json');
    const cfg = JSON.parse(readFileSync(file, 'utf8'));
    cfg.graph = { kind: 'module', module: 'graph.ts', export: 'default' };
    cfg.agents = { Writer: { model: 'senior', promptText: 'Write a short experimental protocol for the question.' } };
    cfg.air = [];
    writeFileSync(file, JSON.stringify(cfg, null, 2));
  }
  return dir;
}
