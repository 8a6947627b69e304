import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { UsageError } from '../../core/errors';
import { COMMON, err, out, parse } from '../args';

const OPTIONS = {
  workspace: COMMON.workspace,
  help: COMMON.help,
  run: { type: 'string' },
  format: { type: 'string' },
  out: { type: 'string' },
} as const;

type Format = 'md' | 'html' | 'json';

/**
 * rollout-lab report: the evaluation report of a run (default: the newest
 * evaluation run) as Markdown, a standalone HTML page or JSON, on stdout or
 * into --out. The format follows --out's extension when --format is not given.
 */
export async function reportCommand(argv: string[], usage: string): Promise<number> {
  const v = parse('report', argv, OPTIONS);
  if (v.help) {
    out(usage);
    return 0;
  }
  const outFile = typeof v.out === 'string' ? resolve(v.out) : undefined;
  const format = formatOption(v.format, outFile);
  const { loadConfig } = await import('../../core/config/loader');
  const { TraceStore } = await import('../../core/store/traceStore');
  const { buildEvaluationReport, defaultReportRun, reportOptionsFromConfig } = await import('../../core/analysis/evaluationReport');
  const loaded = await loadConfig(resolve((v.workspace as string | undefined) ?? '.'));
  const store = await TraceStore.open(loaded.workspaceDir, { readOnly: true });
  try {
    const runs = store.listRuns().sort((a, b) => b.startTime - a.startTime);
    const where = v.workspace ? ` --workspace ${String(v.workspace)}` : '';
    let runId = v.run as string | undefined;
    if (runId === undefined) {
      runId = defaultReportRun(runs)?.id;
      if (!runId) throw new UsageError(`no runs in ${loaded.workspaceDir} yet — make one with \`rollout-lab eval${where}\``);
    } else if (!store.getRun(runId)) {
      const newest = runs.slice(0, 3).map((r) => r.id);
      throw new UsageError(
        `run "${runId}" is not in this workspace's store${newest.length ? ` (newest: ${newest.join(', ')})` : ''} — list the runs with \`rollout-lab traces${where}\` (the run column)`,
      );
    }
    const report = buildEvaluationReport(store, reportOptionsFromConfig(loaded.config, runId));
    let text: string;
    if (format === 'json') text = JSON.stringify(report, null, 2) + '\n';
    else {
      const { reportHtml, reportMarkdown } = await import('../../core/analysis/reportFormat');
      text = format === 'html' ? reportHtml(report) : reportMarkdown(report);
    }
    if (outFile) {
      await mkdir(dirname(outFile), { recursive: true });
      await writeFile(outFile, text, 'utf8');
      err(`wrote the evaluation report of ${report.run.id} to ${outFile}${report.run.simulated ? ' (SIMULATED endpoint)' : ''}`);
    } else {
      out(text.replace(/\n$/, ''));
    }
    return 0;
  } finally {
    await store.close();
  }
}

function formatOption(raw: string | boolean | undefined, outFile: string | undefined): Format {
  if (raw === undefined) {
    if (outFile && /\.html?$/i.test(outFile)) return 'html';
    if (outFile && /\.json$/i.test(outFile)) return 'json';
    return 'md';
  }
  if (raw === 'md' || raw === 'markdown') return 'md';
  if (raw === 'html' || raw === 'json') return raw;
  throw new UsageError(`--format must be md, html or json, got "${String(raw)}"`);
}
