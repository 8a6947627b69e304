import * as vscode from 'vscode';
import * as path from 'node:path';
import { errorMessage } from '../../core/errors';
import type { JobRecord } from '../../core/train/jobs/jobRecord';
import { CURVES_VIEW_TYPE, type CurvesJob, type CurvesNotifications } from '../../shared/trainingCurvesProtocol';
import { parsePanelState } from '../../shared/panelState';
import type { Notifications } from '../../shared/protocol';
import { Disposable } from '../disposable';
import { PanelHost, panelIcon, panelOptions } from '../webviews/panelHost';
import { jobLogPath, readJobOf } from './jobFiles';
import { JobLogTail } from './jobLogTail';

export function curvesJob(rec: JobRecord): CurvesJob {
  return {
    id: rec.id,
    kind: rec.kind,
    phase: rec.phase,
    state: rec.state,
    targetName: rec.targetName,
    targetKind: rec.targetKind,
    baseModel: rec.baseModel,
    createdAt: rec.createdAt,
    endedAt: rec.endedAt,
    error: rec.error,
  };
}

function key(folder: string, id: string): string {
  return `${path.resolve(folder)}\0${id}`;
}

/**
 * One Training Curves panel: a job's metrics from its job.log, sent whole
 * once the webview is ready and then as the log grows (a follower here pokes
 * it on each event; a watcher on job.log covers a job followed by another
 * process, such as the CLI). Its messages go through a PanelHost like the
 * lab panels'; a page that loads again gets everything afresh.
 */
export class CurvesPanel extends Disposable {
  private readonly host: PanelHost;
  private tail: JobLogTail | null = null;
  private job: CurvesJob | null = null;

  constructor(
    readonly panel: vscode.WebviewPanel,
    readonly folder: string,
    readonly jobId: string,
    extensionUri: vscode.Uri,
    log: (line: string) => void,
  ) {
    super();
    const showLog = (): void => void vscode.commands.executeCommand('rolloutLab.showTrainingJobLog', { id: this.jobId, folder: this.folder });
    this.host = this.register(new PanelHost('trainingCurves', extensionUri, {}, { 'job/showLog': showLog }, log));
    this.host.attach(panel);
    panel.title = `Training Curves: ${jobId}`;
    // The page loaded again (it was hidden and discarded): what was posted meanwhile is lost, so send it all again.
    this.register(
      this.host.onDidLoad((loads) => {
        if (loads > 1) void this.load();
      }),
    );
    void this.load();
  }

  /** The latest messages (at most 100), so extension tests can see what the panel was told. */
  get notified(): PanelHost['notified'] {
    return this.host.notified;
  }

  /** Reads the job and its whole log again and sends everything. */
  async load(): Promise<void> {
    try {
      const { trainingDir, job } = await readJobOf(this.folder, this.jobId);
      this.job = curvesJob(job);
      const file = jobLogPath(trainingDir, this.jobId);
      if (this.tail?.file !== file) {
        this.tail = new JobLogTail(file);
        this.watch(file);
      }
      this.tail.read();
      this.post('curves/reset', { job: this.job, points: [...this.tail.points], folder: this.folder, totalSteps: this.tail.totalSteps });
    } catch (err) {
      this.post('curves/error', { message: `job ${this.jobId}: ${errorMessage(err)}` });
    }
  }

  /** Sends the points the log gained (all of them again when it was rewritten from the start). */
  update(): void {
    if (!this.tail || !this.job) return;
    const { reset, added } = this.tail.read();
    if (reset) this.post('curves/reset', { job: this.job, points: [...this.tail.points], folder: this.folder, totalSteps: this.tail.totalSteps });
    else if (added.length) this.post('curves/append', { points: added, totalSteps: this.tail.totalSteps });
  }

  /** Reads the job's record again (it changed on disk). */
  async refreshJob(): Promise<void> {
    if (!this.tail) return this.load();
    try {
      this.setJob((await readJobOf(this.folder, this.jobId)).job);
    } catch (err) {
      this.post('curves/error', { message: `job ${this.jobId}: ${errorMessage(err)}` });
    }
  }

  setJob(rec: JobRecord): void {
    this.job = curvesJob(rec);
    this.post('curves/job', { job: this.job });
    this.update();
  }

  private watch(file: string): void {
    const watcher = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(vscode.Uri.file(path.dirname(file)), path.basename(file)));
    const poke = (): void => this.update();
    this.register(watcher);
    this.register(watcher.onDidChange(poke));
    this.register(watcher.onDidCreate(poke));
  }

  private post<N extends keyof CurvesNotifications>(type: N, params: Notifications[N]): void {
    this.host.notify(type, params);
  }

  get isReady(): boolean {
    return this.host.isReady;
  }
}

/**
 * The Training Curves panels, one per job (opening a job's curves again
 * reveals its panel), restored after a window reload from the job id and
 * folder the webview keeps in its state.
 */
export class CurvesPanels extends Disposable {
  private readonly panels = new Map<string, CurvesPanel>();

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly log: (line: string) => void,
  ) {
    super();
    this.register(
      vscode.window.registerWebviewPanelSerializer(CURVES_VIEW_TYPE, {
        deserializeWebviewPanel: async (panel: vscode.WebviewPanel, state: unknown): Promise<void> => {
          const { jobId, folder } = parsePanelState('trainingCurves', state);
          if (!jobId || !folder || this.panels.has(key(folder, jobId))) {
            // Nothing says which job it showed (or another panel shows it already): nothing to restore.
            panel.dispose();
            return;
          }
          this.adopt(panel, folder, jobId);
          this.log(`restored the training curves of job ${jobId}`);
        },
      }),
    );
  }

  /** Opens (or reveals) the curves of a job. */
  show(folder: string, jobId: string): CurvesPanel {
    const existing = this.panels.get(key(folder, jobId));
    if (existing) {
      existing.panel.reveal(existing.panel.viewColumn ?? vscode.ViewColumn.Active, false);
      return existing;
    }
    const panel = vscode.window.createWebviewPanel(CURVES_VIEW_TYPE, `Training Curves: ${jobId}`, { viewColumn: vscode.ViewColumn.Active, preserveFocus: false }, panelOptions(this.extensionUri));
    return this.adopt(panel, folder, jobId);
  }

  get(folder: string, jobId: string): CurvesPanel | undefined {
    return this.panels.get(key(folder, jobId));
  }

  /** A job's log or record changed: its panel (if open) catches up. */
  update(folder: string, jobId: string, rec?: JobRecord): void {
    const p = this.panels.get(key(folder, jobId));
    if (!p) return;
    if (rec) p.setJob(rec);
    else p.update();
  }

  /** The panel of a job whose job.json changed on disk (here or in the CLI) catches up. */
  recordChanged(folder: string, jobId: string): void {
    void this.panels.get(key(folder, jobId))?.refreshJob();
  }

  private adopt(panel: vscode.WebviewPanel, folder: string, jobId: string): CurvesPanel {
    panel.iconPath = panelIcon(this.extensionUri);
    const host = new CurvesPanel(panel, folder, jobId, this.extensionUri, this.log);
    const k = key(folder, jobId);
    this.panels.set(k, host);
    panel.onDidDispose(() => {
      if (this.panels.get(k) === host) this.panels.delete(k);
      host.dispose();
    });
    return host;
  }

  override dispose(): void {
    for (const p of this.panels.values()) {
      p.dispose();
      p.panel.dispose();
    }
    this.panels.clear();
    super.dispose();
  }
}
