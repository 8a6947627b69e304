import * as vscode from 'vscode';
import * as path from 'node:path';
import { errorMessage } from '../../core/errors';
import type { JobRecord } from '../../core/train/jobs/jobRecord';
import {
  CURVES_PANEL,
  CURVES_VIEW_TYPE,
  CurvesWebviewMessage,
  isCurvesState,
  type CurvesHostMessage,
  type CurvesJob,
  type CurvesNotifications,
  type CurvesNotificationType,
} from '../../shared/trainingCurvesProtocol';
import { Disposable } from '../disposable';
import { panelOptions, webviewPageHtml } from '../webviews/panelHost';
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
 * process, such as the CLI).
 */
export class CurvesPanel extends Disposable {
  private ready = false;
  private readonly queue: CurvesHostMessage[] = [];
  private tail: JobLogTail | null = null;
  private job: CurvesJob | null = null;
  /** The latest messages (at most 100), so extension tests can see what the panel was told. */
  readonly notified: CurvesHostMessage[] = [];

  constructor(
    readonly panel: vscode.WebviewPanel,
    readonly folder: string,
    readonly jobId: string,
    extensionUri: vscode.Uri,
    private readonly log: (line: string) => void,
  ) {
    super();
    panel.webview.options = panelOptions(extensionUri);
    panel.webview.html = webviewPageHtml(panel.webview, extensionUri, { bundle: CURVES_PANEL, title: 'Training Curves', stylesheet: CURVES_PANEL });
    panel.title = `Training Curves: ${jobId}`;
    this.register(panel.webview.onDidReceiveMessage((m: unknown) => this.receive(m)));
    void this.load();
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

  private post<N extends CurvesNotificationType>(type: N, params: CurvesNotifications[N]): void {
    const msg = { kind: 'notification', type, params } as CurvesHostMessage;
    this.notified.push(msg);
    if (this.notified.length > 100) this.notified.shift();
    if (this.ready) void this.panel.webview.postMessage(msg);
    else this.queue.push(msg);
  }

  private receive(raw: unknown): void {
    const parsed = CurvesWebviewMessage.safeParse(raw);
    if (!parsed.success) {
      this.log(`training curves: ignored a malformed webview message: ${parsed.error.issues[0]?.message ?? ''}`);
      return;
    }
    const msg = parsed.data;
    if (msg.kind === 'ready') {
      if (this.ready) {
        // The page loaded again (it was hidden and discarded): what was posted meanwhile is lost, so send it all again.
        void this.load();
        return;
      }
      this.ready = true;
      for (const m of this.queue.splice(0)) void this.panel.webview.postMessage(m);
      return;
    }
    if (msg.command === 'job/showLog') void vscode.commands.executeCommand('rolloutLab.showTrainingJobLog', { id: this.jobId, folder: this.folder });
  }

  get isReady(): boolean {
    return this.ready;
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
          if (!isCurvesState(state) || this.panels.has(key(state.folder, state.jobId))) {
            // Nothing says which job it showed (or another panel shows it already): nothing to restore.
            panel.dispose();
            return;
          }
          this.adopt(panel, state.folder, state.jobId);
          this.log(`restored the training curves of job ${state.jobId}`);
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
    panel.iconPath = {
      light: vscode.Uri.joinPath(this.extensionUri, 'media', 'rollout-lab-light.svg'),
      dark: vscode.Uri.joinPath(this.extensionUri, 'media', 'rollout-lab-dark.svg'),
    };
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
