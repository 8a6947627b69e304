import * as path from 'node:path';

/** What the notification after an export says, and its buttons (no vscode here: plain data). */
export interface ExportNotice {
  message: string;
  open: 'Open';
  reveal: 'Reveal in Explorer';
}

/** "Rollout Lab: saved the evaluation report of run-… as HTML: evaluation-run-….html" with Open / Reveal in Explorer. */
export function exportNotice(runId: string, file: string): ExportNotice {
  const kind = /\.html?$/i.test(file) ? 'HTML' : 'Markdown';
  return { message: `Rollout Lab: saved the evaluation report of ${runId} as ${kind}: ${path.basename(file)}`, open: 'Open', reveal: 'Reveal in Explorer' };
}
