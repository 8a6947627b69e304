import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import type { IForbiddenRuleType } from 'dependency-cruiser';
import { ESLint } from 'eslint';

/*
 * The layer rules (.dependency-cruiser.cjs) and the house rules (eslint.config.mjs) catch each wrong-way import
 * a review found before they were enforced: every case is a two-file tree, the importer and what it imports, laid
 * out at the real paths, checked with the project's own rule set. The tree itself is checked by `npm run lint`.
 */

const root = resolve(__dirname, '../../..');
const { forbidden } = createRequire(__filename)(join(root, '.dependency-cruiser.cjs')) as { forbidden: IForbiddenRuleType[] };

const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** The rules broken by `from` importing `to` (both paths from the repository root), or [] when it may. */
async function brokenRules(from: string, to: string, how: 'import' | 'import type' = 'import'): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'rollout-lab-layers-'));
  dirs.push(dir);
  const write = (file: string, text: string): void => {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  };
  const spec = to === 'vscode' ? 'vscode' : `./${relative(dirname(from), to).replace(/\.ts$/, '')}`.replace(/^\.\/\.\./, '..');
  write(from, how === 'import' ? `import { x } from '${spec}';\nexport const y = x;\n` : `import type { X } from '${spec}';\nexport type Y = X;\n`);
  if (to !== 'vscode') write(to, 'export const x = 1;\nexport type X = number;\n');
  // dependency-cruiser is an ES module only.
  const { cruise } = await import('dependency-cruiser');
  const cwd = process.cwd();
  process.chdir(dir);
  try {
    const result = await cruise(['src', 'webview'].filter((d) => from.startsWith(d) || to.startsWith(d)), {
      ruleSet: { forbidden },
      validate: true,
      tsPreCompilationDeps: true,
    });
    const output = result.output as { summary: { violations: Array<{ rule: { name: string } }> } };
    return [...new Set(output.summary.violations.map((v) => v.rule.name))];
  } finally {
    process.chdir(cwd);
  }
}

describe('layer rules', () => {
  const wrongWay: Array<[string, string, string]> = [
    ['src/core/lab/graphDescription.ts', 'src/shared/protocol.ts', 'core-stays-core'],
    ['src/extension/commands/runCommands.ts', 'src/cli/format.ts', 'extension-not-cli'],
    ['src/core/rollout/runner.ts', 'src/core/train/bandit/policyStore.ts', 'layer-rollout'],
    ['src/core/rollout/runner.ts', 'src/core/lab/lab.ts', 'layer-rollout'],
    ['src/core/config/defaults.ts', 'src/core/graph/researchLab/outputs.ts', 'layer-config-data'],
    ['src/core/reward/judge.ts', 'src/core/graph/researchLab/outputs.ts', 'research-lab-stays-in-its-graph'],
    ['src/core/train/apo/apoMessages.ts', 'src/core/sim/promptOptimizerAnswer.ts', 'sim-only-from-lab'],
    ['src/core/analysis/comparison.ts', 'src/core/lab/lab.ts', 'layer-analysis'],
    ['src/core/llm/client.ts', 'src/core/graph/userGraph.ts', 'graph-not-llm'],
    ['src/core/store/traceStore.ts', 'vscode', 'vscode-only-in-extension'],
    ['webview/trainingCurves/series.ts', 'src/extension/training/jobText.ts', 'webview-catalogue'],
    ['src/shared/protocol.ts', 'src/core/store/traceStore.ts', 'shared-catalogue'],
    ['src/core/train/jobs/jobLifecycle.ts', 'src/core/train/pipeline/runPhase.ts', 'train-jobs-narrow-context'],
    ['src/core/train/jobs/jobDraft.ts', 'src/core/lab/lab.ts', 'train-jobs-narrow-context'],
  ];
  for (const [from, to, rule] of wrongWay) {
    it(`${from} → ${to} breaks ${rule}`, async () => {
      assert.ok((await brokenRules(from, to)).includes(rule));
    });
  }

  const rightWay: Array<[string, string, ('import' | 'import type')?]> = [
    ['src/core/train/pipeline/pipeline.ts', 'src/core/lab/lab.ts'],
    ['src/core/lab/lab.ts', 'src/core/sim/simServer.ts'],
    ['src/core/reward/judge.ts', 'src/core/reward/judgeSchema.ts'],
    ['src/extension/labService.ts', 'vscode'],
    ['webview/traceExplorer/format.ts', 'src/core/trace/span.ts'],
    ['src/shared/protocol.ts', 'src/core/store/traceStore.ts', 'import type'],
  ];
  for (const [from, to, how] of rightWay) {
    it(`${from} may ${how ?? 'import'} ${to}`, async () => {
      assert.deepEqual(await brokenRules(from, to, how), []);
    });
  }
});

describe('house rules', () => {
  const eslint = new ESLint({ cwd: root });
  const problems = async (file: string, text: string): Promise<string[]> =>
    (await eslint.lintText(text, { filePath: join(root, file) })).flatMap((r) => r.messages.map((m) => m.message));

  it('a default export is refused; a named one is fine', async () => {
    assert.match((await problems('src/core/reward/x.ts', 'export default function f(): number { return 1; }\n')).join('\n'), /Named exports only/);
    assert.match((await problems('webview/x/y.ts', 'const f = 1;\nexport { f as default };\n')).join('\n'), /Named exports only/);
    assert.deepEqual(await problems('src/core/reward/x.ts', 'export function f(): number { return 1; }\n'), []);
  });

  it("'vscode' outside src/extension is refused", async () => {
    assert.match((await problems('src/core/store/x.ts', "import * as vscode from 'vscode';\nexport const v = vscode.version;\n")).join('\n'), /only in the extension host/);
    assert.deepEqual(await problems('src/extension/x.ts', "import * as vscode from 'vscode';\nexport const v = vscode.version;\n"), []);
  });
});
