import * as vscode from 'vscode';
import { mkdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { core } from '../coreLoader';
import type { Lab } from '../../core/lab/lab';
import type { EvaluationReport } from '../../core/analysis/evaluationReport';
import type { ReportRequestResults, ReportRunSummary } from '../../shared/reportProtocol';
import type { LabService } from '../labService';
import type { CommandHandlers, RequestHandlers } from '../webviews/panelHost';
import type { Panels } from '../panels';

export type ReportFormat = 'md' | 'html';

/** The host's answers to the evalReport panel's requests. */
export function evalReportRequestHandlers(service: LabService): RequestHandlers {
  return {
    'report/get': async ({ runId }) => buildReport(await service.lab(), runId),
    'report/runs': async () => listReportRuns(await service.lab()),
    'report/export': async ({ runId, format }): Promise<ReportRequestResults['report/export']> => {
      const lab = await service.lab();
      const target = await askExportPath(lab, runId, format);
      if (!target) return { saved: false, path: null };
      const written = await writeReport(lab, runId, format, target);
      void showExportNotice(runId, written, target);
      return { saved: true, path: written };
    },
  };
}

/** What the evalReport panel may ask the editor to do: it opens rollouts with the shared trace/open. */
export function evalReportCommandHandlers(service: LabService, panels: () => Panels): CommandHandlers {
  void service;
  void panels;
  return {};
}

/** The run a report is for: the one asked for (which must exist), else the newest evaluation run, else the newest run; null for an empty store. */
export async function resolveReportRun(lab: Lab, runId?: string): Promise<string | null> {
  if (!runId) {
    const { defaultReportRun } = await core.evaluationReport();
    return defaultReportRun(lab.store.listRuns())?.id ?? null;
  }
  if (!lab.store.getRun(runId)) {
    // The CLI may have written it a moment ago.
    await lab.store.refresh();
    if (!lab.store.getRun(runId)) throw new Error(`run "${runId}" is not in the trace store of ${path.basename(lab.loaded.workspaceDir)} — pick a run in the report's run picker or the Rollouts view`);
  }
  return runId;
}

/** The report of a run (default: the newest evaluation run, else the newest run); null for an empty store. */
export async function buildReport(lab: Lab, runId?: string): Promise<EvaluationReport | null> {
  const id = await resolveReportRun(lab, runId);
  if (!id) return null;
  const { buildEvaluationReport, reportOptionsFromConfig } = await core.evaluationReport();
  return buildEvaluationReport(lab.store, reportOptionsFromConfig(lab.loaded.config, id));
}

export async function listReportRuns(lab: Lab): Promise<ReportRequestResults['report/runs']> {
  const { defaultReportRun } = await core.evaluationReport();
  const all = lab.store.listRuns();
  // Newest first, and a bounded list: the picker is for choosing, not for browsing history.
  const runs: ReportRunSummary[] = [...all]
    .sort((a, b) => b.startTime - a.startTime)
    .slice(0, 200)
    .map((r) => ({
      id: r.id,
      startTime: r.startTime,
      status: r.status,
      command: typeof r.params?.command === 'string' ? r.params.command : null,
      split: typeof r.params?.split === 'string' ? r.params.split : null,
      simulated: r.simulated,
      rollouts: lab.store.listRollouts({ runId: r.id, limit: 0 }).total,
    }));
  return { runs, defaultRunId: defaultReportRun(all)?.id ?? null };
}

/** The report rendered in a format. */
export async function renderReport(lab: Lab, runId: string, format: ReportFormat): Promise<string> {
  const report = await buildReport(lab, runId);
  if (!report) throw new Error('there are no runs to report on yet — run "Rollout Lab: Evaluate on Validation Set" first');
  const { reportHtml, reportMarkdown } = await core.reportFormat();
  return format === 'html' ? reportHtml(report) : reportMarkdown(report);
}

export function defaultReportFileName(runId: string, format: ReportFormat): string {
  return `evaluation-${runId.replace(/[^\w.-]+/g, '_')}.${format}`;
}

/** The save dialog for a report; undefined when the user dismissed it. */
export async function askExportPath(lab: Lab, runId: string, format: ReportFormat): Promise<vscode.Uri | undefined> {
  return vscode.window.showSaveDialog({
    title: `Rollout Lab: export the evaluation report as ${format === 'html' ? 'HTML' : 'Markdown'}`,
    defaultUri: vscode.Uri.file(path.join(lab.loaded.workspaceDir, defaultReportFileName(runId, format))),
    filters: format === 'html' ? { 'HTML document': ['html', 'htm'] } : { Markdown: ['md', 'markdown'] },
    saveLabel: 'Export',
  });
}

/** Writes the report to a file (a path, or a URI from the save dialog) and returns where it went. */
export async function writeReport(lab: Lab, runId: string, format: ReportFormat, target: vscode.Uri | string): Promise<string> {
  const text = await renderReport(lab, runId, format);
  if (typeof target === 'string' || target.scheme === 'file') {
    const file = typeof target === 'string' ? path.resolve(lab.loaded.workspaceDir, target) : target.fsPath;
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, text, 'utf8');
    return file;
  }
  await vscode.workspace.fs.writeFile(target, Buffer.from(text, 'utf8'));
  return target.toString();
}

/** The notification after an export from the panel or the palette: Open (in the editor) or Reveal in Explorer. */
export async function showExportNotice(runId: string, written: string, target: vscode.Uri | string): Promise<void> {
  const { exportNotice } = await import('./exportNotice');
  const n = exportNotice(runId, written);
  const uri = typeof target === 'string' ? vscode.Uri.file(written) : target;
  const action = await vscode.window.showInformationMessage(n.message, n.open, n.reveal);
  if (action === n.open) await vscode.commands.executeCommand('vscode.open', uri);
  else if (action === n.reveal) await vscode.commands.executeCommand('revealInExplorer', uri);
}
