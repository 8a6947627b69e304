import type { ParseArgsConfig } from 'node:util';
import { resolve } from 'node:path';
import { UsageError } from '../../core/errors';
import type { ComparisonResult } from '../../core/analysis/comparison';
import { BATCH_OPTIONS, COMMON, err, intOption, out, parse, splitOption } from '../args';
import { num, pct } from '../../core/analysis/numberFormat';
import { table } from '../../core/analysis/textTable';
import { printWarnings, retryTeller, tellWarning, withRunningLab } from '../labSession';
import type { RetryNotice } from '../../core/llm/retryNotices';
import { decisionLabelsOf } from '../../core/data/decisionAlignment';

const OPTIONS = {
  ...COMMON,
  a: { type: 'string' },
  b: { type: 'string' },
  runs: { type: 'string' },
  ...BATCH_OPTIONS,
} as const satisfies ParseArgsConfig['options'];

const SPEC_HELP = 'a SPEC is "base" or comma-separated model:AGENT=MODEL, prompt:AGENT=HASH_PREFIX, prompt:AGENT=@FILE, label:TEXT';

/**
 * rollout-lab compare: runs two configurations on the same tasks with the
 * same seeds (--a/--b), or compares two stored runs (--runs), and prints the
 * paired statistics and a per-task table.
 */
export async function compareCommand(argv: string[], usage: string): Promise<number> {
  const v = parse('compare', argv, OPTIONS);
  if (v.help) return out(usage), 0;
  const json = Boolean(v.json);
  if (v.runs !== undefined) {
    if (v.a !== undefined || v.b !== undefined) throw new UsageError('compare: give either --runs RUN_A,RUN_B or --a SPEC --b SPEC, not both');
    const ids = String(v.runs).split(',').map((s) => s.trim());
    if (ids.length !== 2 || !ids[0] || !ids[1]) throw new UsageError(`compare: --runs takes two run ids separated by a comma, got "${String(v.runs)}"`);
    const { loadConfig } = await import('../../core/config/loader');
    const { TraceStore } = await import('../../core/store/traceStore');
    const { compareRuns } = await import('../../core/analysis/comparison');
    const loaded = await loadConfig(resolve((v.workspace as string) ?? '.'));
    const store = await TraceStore.open(loaded.workspaceDir, { readOnly: true });
    try {
      const result = compareRuns(store, ids[0], ids[1], Object.keys(loaded.config.reward.criteria), decisionLabelsOf(loaded.config));
      print(result, json);
      return 0;
    } finally {
      await store.close();
    }
  }
  if (v.a === undefined || v.b === undefined) throw new UsageError(`compare: give --a SPEC and --b SPEC (${SPEC_HELP}), or --runs RUN_A,RUN_B`);
  const { parseVariantSpec } = await import('../../core/config/variantSpec');
  const a = parseVariantSpec(String(v.a));
  const b = parseVariantSpec(String(v.b));
  if (a.label === b.label) b.label = `${b.label} (B)`;

  const { runComparison } = await import('../../core/lab/runComparison');
  const { compareRuns } = await import('../../core/analysis/comparison');
  return withRunningLab(v, async (lab, signal) => {
    const cfg = lab.loaded.config;
    const split = splitOption(v, 'val');
    const limit = intOption(v, 'limit', 1);
    const samples = intOption(v, 'samples', 1) ?? 1;
    const seed = intOption(v, 'seed', 0) ?? cfg.runner.seed;
    const concurrency = intOption(v, 'concurrency', 1) ?? cfg.runner.concurrency;
    const ds = await lab.loadDataset(v.dataset as string | undefined);
    const tasks = lab.selectTasks(ds, { split, limit, seed });
    err(`compare: ${tasks.length} ${split} tasks × ${samples} sample${samples > 1 ? 's' : ''} from ${ds.file}, A = ${a.label}, B = ${b.label}${lab.simulated ? ' — SIMULATED endpoint' : ''}`);
    const run = await runComparison(lab, {
      a,
      b,
      tasks,
      allTasks: ds.tasks,
      samples,
      concurrency,
      seed,
      params: { dataset: (v.dataset as string | undefined) ?? null, split, limit: limit ?? null },
      signal,
      onStart: (side, { runId, total }) => err(`side ${side.toUpperCase()}: run ${runId}, ${total} rollouts`),
      onProgress: (side, p) => {
        const r = p.last;
        err(`[${side.toUpperCase()} ${p.done}/${p.total}] ${r ? `${r.taskId} ${r.status} reward ${num(r.finalReward)}${r.error ? `: ${r.error}` : ''}` : ''}`);
      },
      onWarning: (side, w) => tellWarning(w, `side ${side.toUpperCase()}: `),
      onRetry: (() => {
        const tell = { a: retryTeller('side A: '), b: retryTeller('side B: ') };
        return (side: 'a' | 'b', n: RetryNotice) => tell[side](n);
      })(),
    });
    if (run.cancelled || !run.runB) {
      err(`cancelled: comparison ${run.id} is incomplete (side A: ${run.runA}${run.runB ? `, side B: ${run.runB}` : ', side B not started'})`);
      return 1;
    }
    const result = compareRuns(lab.store, run.runA, run.runB, Object.keys(cfg.reward.criteria), decisionLabelsOf(cfg));
    if (json) out(JSON.stringify({ ...result, warnings: { a: run.a.warnings, b: run.b?.warnings ?? [] } }));
    else {
      print(result, false);
      printWarnings(run.a.warnings, run.a.ranNow, `Warnings of side A (${run.runA})`);
      printWarnings(run.b?.warnings ?? [], run.b?.ranNow ?? 0, `Warnings of side B (${run.runB})`);
    }
    if (result.a.succeeded === 0 && result.b.succeeded === 0) {
      err('every rollout of both sides failed; see `rollout-lab traces --run RUN_ID`');
      return 1;
    }
    return 0;
  });
}

function ci(x: [number, number] | null): string {
  return x ? `[${num(x[0])}, ${num(x[1])}]` : 'n/a';
}

function pValue(p: number | null | undefined): string {
  if (p === null || p === undefined) return 'n/a';
  return p < 0.001 ? '< 0.001' : p.toFixed(3);
}

function signed(x: number | null): string {
  return x === null ? 'n/a' : `${x > 0 ? '+' : ''}${x.toFixed(3)}`;
}

function print(r: ComparisonResult, json: boolean): void {
  if (json) {
    out(JSON.stringify(r));
    return;
  }
  const g = r.aggregate;
  if (r.simulated) out('SIMULATED endpoint: rewards below come from the built-in simulator, not a model.');
  out(`Comparison${r.id ? ` ${r.id}` : ''}: A = ${r.a.label} (${r.a.runId}), B = ${r.b.label} (${r.b.runId})`);
  out(
    table(
      ['', 'A', 'B', 'B − A'],
      [
        ['mean reward', num(g.meanA), num(g.meanB), signed(g.meanDifference)],
        ['95 % CI', ci(g.ciA), ci(g.ciB), ci(g.ciDifference)],
        ['decision alignment', pct(g.alignment.a.percent), pct(g.alignment.b.percent), ''],
        ['rollouts (failed)', `${r.a.rollouts} (${r.a.failed})`, `${r.b.rollouts} (${r.b.failed})`, ''],
      ],
    ),
  );
  out(`paired tasks ${g.pairs} · B wins ${g.wins}, ties ${g.ties}, losses ${g.losses} · paired t p ${pValue(g.pairedT?.pValue)} · Wilcoxon p ${pValue(g.wilcoxon?.pValue)}`);
  out(g.summary);
  out('');
  out(
    table(
      ['criterion', 'A', 'B', 'B − A', 'p (paired t)', 'n'],
      g.criteria.map((c) => [c.criterion, num(c.meanA), num(c.meanB), signed(c.difference), pValue(c.pValue), String(c.n)]),
    ),
  );
  out('');
  out(
    table(
      ['task', 'expected', 'A', 'B', 'B − A', 'decision A', 'decision B'],
      r.tasks.map((t) => [t.taskId, t.expectedDecision ?? '-', num(t.rewardA), num(t.rewardB), signed(t.difference), decisions(t.decisionsA), decisions(t.decisionsB)]),
    ),
  );
  if (r.unpaired.length) {
    out('');
    out(`not paired (left out of the statistics): ${r.unpaired.length}`);
    for (const u of r.unpaired) out(`  ${u.taskId}: ${u.reason}`);
  }
}


function decisions(ds: Array<string | null>): string {
  return ds.map((d) => d ?? '-').join(' ');
}
