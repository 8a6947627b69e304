import * as vscode from 'vscode';
import { existsSync } from 'node:fs';
import { jobDir, readJobRecord, type JobRecord } from '../../core/train/jobs/jobRecord';
import { escapeMarkdown as esc } from '../view/rolloutPresentation';
import { jobLogPath, listJobsOf } from './jobFiles';
import type { JobFollowers } from './jobFollowers';
import { JobLogTails } from './jobLogTail';
import { durationText, shortNumber } from '../../core/analysis/numberFormat';
import { jobLabels, sparkline } from './jobText';
import { hyperparameterText } from './hyperparameterText';

/** An element of the Training view's "Jobs" section. */
export type JobNode =
  | { kind: 'job'; folder: string; trainingDir: string; job: JobRecord; label?: string }
  | { kind: 'jobMetric'; folder: string; jobId: string; name: string; values: number[]; step: number }
  | { kind: 'jobInfo'; folder: string; jobId: string; info: 'error' | 'registered' | 'served' | 'log'; text: string; detail?: string };

/** The metrics a job's item shows, when the trainer reports them (the curves panel has the rest). */
const TREE_METRICS = ['loss', 'reward_mean', 'kl'];
const ACTIVE = new Set<JobRecord['state']>(['launching', 'running', 'fetching']);
/** How often the durations of running jobs move on while nothing else changes. */
const TICK_MS = 5000;

function stateIcon(job: JobRecord): vscode.ThemeIcon {
  if (job.kind === 'serve' && job.state === 'running' && job.serveUrl) return new vscode.ThemeIcon('radio-tower');
  switch (job.state) {
    case 'launching':
      return new vscode.ThemeIcon('loading~spin');
    case 'running':
      return new vscode.ThemeIcon('sync~spin');
    case 'fetching':
      return new vscode.ThemeIcon('cloud-download');
    case 'succeeded':
      return new vscode.ThemeIcon('pass');
    case 'failed':
      return new vscode.ThemeIcon('error');
    case 'cancelled':
      return new vscode.ThemeIcon('circle-slash');
  }
}

/** "sft · running · gpu-box (ssh) · 3 min 05 s" */
export function jobDescription(job: JobRecord, now = Date.now()): string {
  const state = job.kind === 'serve' && job.state === 'running' && job.serveUrl ? 'serving' : job.state;
  const target = job.targetName === job.targetKind ? job.targetName : `${job.targetName} (${job.targetKind})`;
  return [job.kind, state, target, durationText((job.endedAt ?? now) - job.createdAt)].join(' · ');
}

/**
 * The "Jobs" section of the Training view: every training and serve job of
 * the lab, newest first, read from their job.json (so jobs the CLI launched
 * show too), with the last metrics and where the result went. Listing the
 * jobs the first time also reattaches this window to those still running.
 */
export class JobsSection implements vscode.Disposable {
  private readonly tails = new JobLogTails();
  private ticker: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly followers: JobFollowers,
    /** Asks the view to draw again (coalesced by the view). */
    private readonly redraw: () => void,
  ) {}

  /** The lab's jobs (an empty list hides the section). */
  async jobs(folder: string): Promise<JobNode[]> {
    const { trainingDir, jobs } = await listJobsOf(folder);
    // The first look at the jobs is when this window picks up the ones a reload left running.
    void this.followers.reattachAll(folder).catch(() => undefined);
    this.tick(jobs.some((j) => ACTIVE.has(j.state)));
    const labels = jobLabels(jobs);
    return jobs.map((job, i) => ({ kind: 'job', folder, trainingDir, job, label: labels[i] }));
  }

  children(node: JobNode): JobNode[] {
    if (node.kind !== 'job') return [];
    const { job, folder, trainingDir } = node;
    const out: JobNode[] = [];
    const points = this.tails.points(jobLogPath(trainingDir, job.id));
    for (const name of TREE_METRICS) {
      const series = points.filter((p) => p.values[name] !== undefined);
      if (series.length) out.push({ kind: 'jobMetric', folder, jobId: job.id, name, values: series.map((p) => p.values[name]!), step: series.at(-1)!.step });
    }
    const info = (i: Extract<JobNode, { kind: 'jobInfo' }>['info'], text: string, detail?: string): void => {
      out.push({ kind: 'jobInfo', folder, jobId: job.id, info: i, text, ...(detail ? { detail } : {}) });
    };
    if (job.error && (job.state !== 'cancelled' || job.error !== 'cancelled')) info('error', job.error);
    if (job.registered) info('registered', `model ${job.registered.model} version ${job.registered.version}`, 'active after registration');
    if (job.kind === 'serve' && job.serveUrl) info('served', job.serveUrl, job.serves ? `version ${job.serves}` : undefined);
    if (job.serveJob) {
      const serve = this.readServeJob(trainingDir, job.serveJob);
      if (serve?.serveUrl) info('served', serve.serveUrl, `job ${serve.id} · ${serve.state === 'running' ? 'serving' : serve.state}`);
    }
    if (existsSync(jobLogPath(trainingDir, job.id))) info('log', 'Open Log', 'job.log');
    return out;
  }

  item(node: JobNode): vscode.TreeItem {
    switch (node.kind) {
      case 'job':
        return jobItem(node);
      case 'jobMetric': {
        const last = node.values.at(-1)!;
        const item = new vscode.TreeItem(node.name, vscode.TreeItemCollapsibleState.None);
        item.description = `${shortNumber(last)}  ${sparkline(node.values)}  step ${node.step}`;
        item.iconPath = new vscode.ThemeIcon('graph-line');
        item.tooltip = `${node.name}: ${node.values.map(shortNumber).slice(-50).join(', ')}${node.values.length > 50 ? ` (last 50 of ${node.values.length})` : ''}`;
        item.contextValue = 'rolloutLab.training.job.metric';
        item.command = { command: 'rolloutLab.openTrainingCurves', title: 'Open Training Curves', arguments: [{ id: node.jobId, folder: node.folder }] };
        return item;
      }
      case 'jobInfo':
        return infoItem(node);
    }
  }

  private readServeJob(trainingDir: string, id: string): JobRecord | undefined {
    try {
      return readJobRecord(jobDir(trainingDir, id));
    } catch {
      return undefined;
    }
  }

  /** While a job runs, redraws every few seconds so its duration moves on. */
  private tick(active: boolean): void {
    if (active && !this.ticker) this.ticker = setInterval(() => this.redraw(), TICK_MS);
    if (!active && this.ticker) {
      clearInterval(this.ticker);
      this.ticker = undefined;
    }
  }

  dispose(): void {
    this.tick(false);
  }
}

function jobItem(node: Extract<JobNode, { kind: 'job' }>): vscode.TreeItem {
  const { job } = node;
  const item = new vscode.TreeItem(node.label ?? job.id, ACTIVE.has(job.state) ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed);
  item.id = `${node.folder}:job:${job.id}`;
  item.description = jobDescription(job);
  item.iconPath = stateIcon(job);
  item.tooltip = jobTooltip(job);
  item.contextValue = `rolloutLab.training.job.${job.kind}.${job.state}`;
  return item;
}

function infoItem(node: Extract<JobNode, { kind: 'jobInfo' }>): vscode.TreeItem {
  const item = new vscode.TreeItem(node.text, vscode.TreeItemCollapsibleState.None);
  if (node.detail) item.description = node.detail;
  item.tooltip = node.text;
  item.contextValue = `rolloutLab.training.job.${node.info}`;
  const ref = { id: node.jobId, folder: node.folder };
  switch (node.info) {
    case 'error':
      item.iconPath = new vscode.ThemeIcon('warning');
      break;
    case 'registered':
      item.iconPath = new vscode.ThemeIcon('package');
      break;
    case 'served':
      item.iconPath = new vscode.ThemeIcon('globe');
      break;
    case 'log':
      item.iconPath = new vscode.ThemeIcon('output');
      item.command = { command: 'rolloutLab.showTrainingJobLog', title: 'Open Log', arguments: [ref] };
      break;
  }
  return item;
}

function jobTooltip(job: JobRecord): vscode.MarkdownString {
  const md = new vscode.MarkdownString(undefined, true);
  md.isTrusted = false;
  md.appendMarkdown(`**${esc(job.id)}** — ${job.kind} job of phase ${esc(job.phase)}, ${job.state}\n\n`);
  md.appendMarkdown(`Target: ${esc(job.targetName)} (${job.targetKind})\n\n`);
  md.appendMarkdown(`Base model: ${esc(job.baseModel)}${job.model ? ` · registers a version of "${esc(job.model)}"` : ''}\n\n`);
  md.appendMarkdown(`Started: ${new Date(job.createdAt).toLocaleString()}${job.endedAt ? ` · ended ${new Date(job.endedAt).toLocaleString()}` : ''}\n\n`);
  const data = Object.entries(job.data).map(([k, n]) => `${k} ${shortNumber(n)}`).join(', ');
  if (data) md.appendMarkdown(`Data: ${esc(data)}\n\n`);
  const hp = hyperparameterText(job.hyperparameters);
  if (hp) md.appendMarkdown(`Hyper-parameters: ${esc(hp)}\n\n`);
  if (job.exitCode !== null) md.appendMarkdown(`Exit status: ${job.exitCode}\n\n`);
  if (job.error) md.appendMarkdown(`Error: ${esc(job.error)}\n\n`);
  return md;
}
