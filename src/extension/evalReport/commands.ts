import * as vscode from 'vscode';
import { z } from 'zod';
import { isMenuArgument, type FeatureContext } from '../featureContext';
import { askExportPath, defaultReportFileName, resolveReportRun, showExportNotice, writeReport, type ReportFormat } from './requests';

/**
 * The argument of Open / Export Evaluation Report: nothing (the newest
 * evaluation run), a run id, a run node of the Rollouts view, or an object
 * for scripts and tests. `format` and `path` make Export write without asking.
 */
const ReportArgs = z.strictObject({
  runId: z.string().min(1).optional(),
  /** Which workspace folder's lab, when several folders have one. */
  folder: z.string().min(1).optional(),
  format: z.enum(['md', 'html']).optional(),
  /** File to write (relative to the lab's folder); skips the save dialog. */
  path: z.string().min(1).optional(),
});
type ReportArgs = z.infer<typeof ReportArgs>;

export function parseReportArgs(raw: unknown, command: string): ReportArgs {
  if (raw === undefined || raw === null) return {};
  if (typeof raw === 'string') return { runId: raw };
  // A row of the Rollouts view (the focused one, from the title bar): its run, or its lab; other rows say nothing.
  const node = raw as { kind?: unknown; folder?: unknown; run?: { id?: unknown }; rollout?: { runId?: unknown }; runId?: unknown };
  if (isMenuArgument(raw)) {
    const runId =
      node.kind === 'run' && typeof node.run?.id === 'string'
        ? node.run.id
        : node.kind === 'rollout' && typeof node.rollout?.runId === 'string'
          ? node.rollout.runId
          : (node.kind === 'run' || node.kind === 'more') && typeof node.runId === 'string'
            ? node.runId
            : undefined;
    return { ...(runId ? { runId } : {}), ...(typeof node.folder === 'string' ? { folder: node.folder } : {}) };
  }
  const r = ReportArgs.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
    throw new Error(`invalid argument for ${command}: ${where}${issue?.message ?? 'expected a run id or { runId?, format?, path? }'}`);
  }
  return r.data;
}

/** Registers Open Evaluation Report and Export Evaluation Report. */
export function registerEvalReportCommands(ctx: FeatureContext): void {
  ctx.register('rolloutLab.openEvaluationReport', (arg) => openEvaluationReport(ctx, parseReportArgs(arg, 'Open Evaluation Report')));
  ctx.register('rolloutLab.exportEvaluationReport', (arg) => exportEvaluationReport(ctx, parseReportArgs(arg, 'Export Evaluation Report')));
}

/** Opens the report panel, on a run when one is given; resolves to the run it shows (null for an empty store). */
async function openEvaluationReport(ctx: FeatureContext, args: ReportArgs): Promise<{ runId: string | null }> {
  if (args.folder) ctx.lab.setActiveFolder(ctx.lab.resolveFolder(args.folder));
  const lab = await ctx.lab.lab(args.folder);
  // Checked before the panel opens, so a wrong id is one clear message and not an empty panel.
  const runId = await resolveReportRun(lab, args.runId);
  const host = ctx.panels().open('evalReport');
  if (args.runId) host.notify('report/show', { runId: args.runId });
  else if (!runId) void vscode.window.showInformationMessage('Rollout Lab: no runs yet — run "Rollout Lab: Evaluate on Validation Set" to make an evaluation report.');
  return { runId };
}

async function exportEvaluationReport(ctx: FeatureContext, args: ReportArgs): Promise<{ saved: boolean; path: string | null }> {
  if (args.folder) ctx.lab.setActiveFolder(ctx.lab.resolveFolder(args.folder));
  const lab = await ctx.lab.lab(args.folder);
  const runId = await resolveReportRun(lab, args.runId);
  if (!runId) throw new Error('there are no runs to report on yet — run "Rollout Lab: Evaluate on Validation Set" first');
  let format: ReportFormat | undefined = args.format ?? formatOfPath(args.path);
  if (!format) {
    const picked = await vscode.window.showQuickPick(
      [
        { label: 'Markdown', description: defaultReportFileName(runId, 'md'), format: 'md' as const },
        { label: 'HTML', description: `${defaultReportFileName(runId, 'html')} · a standalone page that prints well`, format: 'html' as const },
      ],
      { title: `Rollout Lab: export the evaluation report of ${runId}`, placeHolder: 'Format' },
    );
    if (!picked) return { saved: false, path: null };
    format = picked.format;
  }
  const target = args.path ?? (await askExportPath(lab, runId, format));
  if (!target) return { saved: false, path: null };
  const written = await writeReport(lab, runId, format, target);
  ctx.log(`exported the evaluation report of ${runId} to ${written}`);
  if (!args.path) {
    void showExportNotice(runId, written, target);
  }
  return { saved: true, path: written };
}

function formatOfPath(p: string | undefined): ReportFormat | undefined {
  if (!p) return undefined;
  if (/\.html?$/i.test(p)) return 'html';
  if (/\.(md|markdown)$/i.test(p)) return 'md';
  return undefined;
}
