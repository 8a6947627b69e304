import * as vscode from 'vscode';
import * as path from 'node:path';
import { core } from '../coreLoader';
import type { ModelVersion } from '../../core/config/modelRegistry';
import { errorMessage } from '../../core/errors';
import type { ModelStatus, PhaseStatus, PipelineStatus } from '../../core/train/pipeline/pipelineStatus';
import type { PhaseRecord } from '../../core/train/phases/pipelineState';
import type { LearningCurve, LearningCurvePoint, LearningCurveSeries } from '../../core/train/pipeline/learningCurve';
import { intervalGauge, meanWithInterval, pairedChangeText } from '../../core/train/pipeline/learningCurveText';
import { CoalescingTrigger } from '../coalescingTrigger';
import { Disposable } from '../disposable';
import type { LabService } from '../labService';
import { escapeMarkdown as esc } from '../view/rolloutPresentation';
import type { JobNode, JobsSection } from './jobsTree';

/** An element of the Training view. */
export type TrainingNode =
  | { kind: 'section'; folder: string; section: 'pipeline' | 'jobs' | 'models' | 'curve' }
  | { kind: 'curveSeries'; folder: string; series: LearningCurveSeries }
  | { kind: 'curvePoint'; folder: string; series: LearningCurveSeries; point: LearningCurvePoint }
  | { kind: 'phase'; folder: string; labDir: string; status: PhaseStatus }
  | { kind: 'file'; folder: string; labDir: string; file: string }
  | { kind: 'run'; folder: string; runId: string }
  | { kind: 'produced'; folder: string; produced: NonNullable<PhaseRecord['produced']> }
  | { kind: 'model'; folder: string; model: ModelStatus }
  | { kind: 'version'; folder: string; model: string; version: ModelVersion; active: boolean }
  | { kind: 'base'; folder: string; model: ModelStatus }
  | { kind: 'message'; folder: string | null; text: string; error?: boolean; example?: string; curve?: boolean }
  | JobNode;

/** A plain copy of what the view shows (labels, descriptions, icons, children), for tests and the refresh command. */
export interface TrainingSnapshotItem {
  label: string;
  /** The job's id, for a job's item (its label is the phase and start time). */
  jobId?: string;
  description?: string;
  icon?: string;
  contextValue?: string;
  children?: TrainingSnapshotItem[];
}

const SECTION_LABEL = { pipeline: 'Pipeline', jobs: 'Jobs', models: 'Models', curve: 'Learning Curve' } as const;
const SECTION_ICON = { pipeline: 'run-all', jobs: 'server-process', models: 'versions', curve: 'graph-line' } as const;

const STATE_ICON: Record<PhaseRecord['state'], string> = {
  pending: 'circle-outline',
  running: 'sync~spin',
  done: 'check',
  failed: 'error',
  cancelled: 'circle-slash',
};

/**
 * The Training view: "Pipeline" with each phase of lab.json's training
 * pipeline (state, data counts, run, data files, what it produced), "Jobs"
 * with the training jobs once there are any (jobsTree.ts), and "Models"
 * with each logical model's registered versions, the active one marked and
 * lab.json's own settings as the base. Reads pipeline.json, the job records
 * and registry.json from disk each time, so changes made by the CLI show too.
 */
export class TrainingTree extends Disposable implements vscode.TreeDataProvider<TrainingNode> {
  private readonly changed = this.register(new vscode.EventEmitter<TrainingNode | undefined>());
  readonly onDidChangeTreeData: vscode.Event<TrainingNode | undefined> = this.changed.event;
  private readonly refresher: CoalescingTrigger;
  private jobs: JobsSection | undefined;

  constructor(private readonly service: LabService) {
    super();
    // Live progress writes pipeline.json once per rollout: redraw once per burst.
    this.refresher = this.register(new CoalescingTrigger(async () => this.changed.fire(undefined), 150));
    this.register(service.onDidChange(() => this.refresher.trigger()));
  }

  refresh(): void {
    this.changed.fire(undefined);
  }

  /** Adds the "Jobs" section (training jobs), shown once the lab has a job. */
  setJobs(jobs: JobsSection): void {
    this.jobs = jobs;
    this.register(jobs);
    this.refresh();
  }

  /** Redraws soon (coalesced with other requests). */
  poke(): void {
    this.refresher.trigger();
  }

  /** Validation reward per version of each trained model, read from the lab's store now. */
  async curve(folder: string): Promise<LearningCurve> {
    const { loadConfig } = await core.config();
    const { learningCurve } = await core.learningCurve();
    return learningCurve(await this.service.store(folder), await loadConfig(folder));
  }

  /** The status the view shows for a lab folder, read now. */
  async status(folder: string): Promise<PipelineStatus> {
    const { loadConfig } = await core.config();
    const { pipelineStatus } = await core.pipelineStatus();
    return pipelineStatus({ loaded: await loadConfig(folder) });
  }

  async getChildren(node?: TrainingNode): Promise<TrainingNode[]> {
    if (!node) {
      const folder = this.service.activeFolder();
      // No lab: the view's welcome content says what to do.
      if (!folder) return [];
      const hasJobs = this.jobs ? (await this.jobs.jobs(folder).catch(() => [])).length > 0 : false;
      return [
        { kind: 'section', folder, section: 'pipeline' },
        ...(hasJobs ? [{ kind: 'section', folder, section: 'jobs' } as const] : []),
        { kind: 'section', folder, section: 'models' },
        { kind: 'section', folder, section: 'curve' },
      ];
    }
    switch (node.kind) {
      case 'section': {
        if (node.section === 'jobs') {
          try {
            return (await this.jobs?.jobs(node.folder)) ?? [];
          } catch (err) {
            return [{ kind: 'message', folder: node.folder, text: errorMessage(err), error: true }];
          }
        }
        if (node.section === 'curve') {
          let c: LearningCurve;
          try {
            c = await this.curve(node.folder);
          } catch (err) {
            return [{ kind: 'message', folder: node.folder, text: errorMessage(err), error: true }];
          }
          const series: TrainingNode[] = c.series.filter((x) => x.points.some((p) => p.rollouts > 0)).map((x) => ({ kind: 'curveSeries', folder: node.folder, series: x }));
          return series.length ? series : [{ kind: 'message', folder: node.folder, text: c.hint ?? 'No validation reward per model version yet', curve: true }];
        }
        let s: PipelineStatus;
        try {
          s = await this.status(node.folder);
        } catch (err) {
          return [{ kind: 'message', folder: node.folder, text: errorMessage(err), error: true }];
        }
        const labDir = path.join(node.folder, '.rollout-lab');
        if (node.section === 'pipeline') {
          if (s.example) {
            const { pipelineExampleText } = await core.phases();
            return [
              {
                kind: 'message',
                folder: node.folder,
                text: 'No pipeline declared: add "training.phases" to lab.json (hover for an example from this lab\u2019s agents)',
                example: pipelineExampleText(s.example),
              },
            ];
          }
          return s.phases.map((status) => ({ kind: 'phase', folder: node.folder, labDir, status }));
        }
        return s.models.map((model) => ({ kind: 'model', folder: node.folder, model }));
      }
      case 'phase': {
        const r = node.status.record;
        const out: TrainingNode[] = [];
        if (r.runId) out.push({ kind: 'run', folder: node.folder, runId: r.runId });
        for (const file of r.files) out.push({ kind: 'file', folder: node.folder, labDir: node.labDir, file });
        if (r.produced && r.produced.kind !== 'data') out.push({ kind: 'produced', folder: node.folder, produced: r.produced });
        return out;
      }
      case 'model': {
        const m = node.model;
        // Newest registration first; lab.json's own settings last, as the base everything rolls back to.
        const versions: TrainingNode[] = [...m.versions]
          .reverse()
          .map((version) => ({ kind: 'version', folder: node.folder, model: m.name, version, active: version.version === m.active }));
        return m.base ? [...versions, { kind: 'base', folder: node.folder, model: m }] : versions;
      }
      case 'curveSeries':
        return node.series.points.map((point) => ({ kind: 'curvePoint', folder: node.folder, series: node.series, point }));
      case 'job':
        return this.jobs?.children(node) ?? [];
      default:
        return [];
    }
  }

  getTreeItem(node: TrainingNode): vscode.TreeItem {
    switch (node.kind) {
      case 'section': {
        const item = new vscode.TreeItem(SECTION_LABEL[node.section], vscode.TreeItemCollapsibleState.Expanded);
        item.id = `${node.folder}:${node.section}`;
        item.iconPath = new vscode.ThemeIcon(SECTION_ICON[node.section]);
        item.contextValue = `rolloutLab.training.${node.section}`;
        return item;
      }
      case 'phase':
        return phaseItem(node);
      case 'run': {
        const item = new vscode.TreeItem(`run ${node.runId}`, vscode.TreeItemCollapsibleState.None);
        item.iconPath = new vscode.ThemeIcon('graph-line');
        item.tooltip = 'Open the reward curve of the rollouts (the run is in the Rollouts view)';
        item.contextValue = 'rolloutLab.training.run';
        item.command = { command: 'rolloutLab.openRewardCurve', title: 'Open Reward Curve' };
        return item;
      }
      case 'file': {
        const abs = path.resolve(node.labDir, node.file);
        const item = new vscode.TreeItem(path.basename(node.file), vscode.TreeItemCollapsibleState.None);
        item.description = path.dirname(node.file);
        item.resourceUri = vscode.Uri.file(abs);
        item.iconPath = vscode.ThemeIcon.File;
        item.tooltip = abs;
        item.contextValue = 'rolloutLab.training.file';
        item.command = { command: 'vscode.open', title: 'Open', arguments: [vscode.Uri.file(abs)] };
        return item;
      }
      case 'produced': {
        const item = new vscode.TreeItem(`${node.produced.kind} ${node.produced.id}`, vscode.TreeItemCollapsibleState.None);
        item.description = 'produced';
        item.iconPath = new vscode.ThemeIcon(node.produced.kind === 'model' ? 'package' : node.produced.kind === 'policy' ? 'pulse' : 'note');
        item.contextValue = `rolloutLab.training.produced.${node.produced.kind}`;
        return item;
      }
      case 'model':
        return modelItem(node);
      case 'curveSeries': {
        const x = node.series;
        const item = new vscode.TreeItem(x.agents.join(', '), vscode.TreeItemCollapsibleState.Expanded);
        item.id = `${node.folder}:curve:${x.model}`;
        item.description = `model ${x.model} · validation reward per version`;
        item.iconPath = new vscode.ThemeIcon('graph-line');
        item.tooltip = `Validation reward per version of model "${x.model}", grouped by the version ${x.agents.join(', ')} ran (95 % intervals; the change is paired on the tasks both versions ran)`;
        item.contextValue = 'rolloutLab.training.curveSeries';
        item.command = { command: 'rolloutLab.showLearningCurve', title: 'Show Learning Curve' };
        return item;
      }
      case 'curvePoint':
        return curvePointItem(node);
      case 'version': {
        const v = node.version;
        const item = new vscode.TreeItem(v.version, vscode.TreeItemCollapsibleState.None);
        item.id = `${node.folder}:model:${node.model}:${v.version}`;
        // Plain words: whether the agents run it now, which agents, the model it serves, and what made it.
        item.description = [node.active ? 'in use' : '', v.agents ? `for ${v.agents.join(', ')}` : '', v.model ?? '', v.producedBy ? `trained by ${v.producedBy.phase}` : 'registered by hand']
          .filter(Boolean)
          .join(' · ');
        item.iconPath = new vscode.ThemeIcon(node.active ? 'pass-filled' : 'circle-outline');
        item.tooltip = versionTooltip(v, node.active);
        item.contextValue = node.active ? 'rolloutLab.training.version.active' : 'rolloutLab.training.version';
        return item;
      }
      case 'base': {
        const b = node.model.base!;
        const inUse = node.model.active === null;
        const item = new vscode.TreeItem('lab.json settings', vscode.TreeItemCollapsibleState.None);
        item.id = `${node.folder}:model:${node.model.name}:(lab.json)`;
        const where = b.baseUrl ? `at ${b.baseUrl}` : 'on the simulated endpoint';
        item.description = `${inUse ? 'in use · ' : ''}${b.model} ${where}`;
        item.iconPath = new vscode.ThemeIcon(inUse ? 'pass-filled' : 'circle-outline');
        item.tooltip = [
          `"${node.model.name}" as .rollout-lab/lab.json declares it: ${b.model} ${where}.`,
          inUse ? 'In use: no trained version of it is active.' : `Not in use: version ${node.model.active} is. Rolling back past every version ends here.`,
        ].join('\n');
        item.contextValue = 'rolloutLab.training.base';
        return item;
      }
      case 'message': {
        const item = new vscode.TreeItem(node.text, vscode.TreeItemCollapsibleState.None);
        item.iconPath = new vscode.ThemeIcon(node.error ? 'warning' : 'info');
        // The learning curve's empty state: a click evaluates on the validation set, which adds the first point.
        if (node.curve) item.command = { command: 'rolloutLab.evaluate', title: 'Evaluate on Validation Set' };
        if (node.example) {
          const md = new vscode.MarkdownString(undefined, true);
          md.isTrusted = false;
          md.appendMarkdown('This lab runs its own graph, which has no reference pipeline. Add to `.rollout-lab/lab.json` (merge into `"training"` if it is there):\n\n');
          md.appendCodeblock(node.example, 'jsonc');
          item.tooltip = md;
        } else {
          item.tooltip = node.text;
        }
        return item;
      }
      case 'job':
      case 'jobMetric':
      case 'jobInfo':
        return this.jobs ? this.jobs.item(node) : new vscode.TreeItem(node.kind);
    }
  }

  /** What the view shows now, as plain data (the whole tree, expanded). */
  async snapshot(node?: TrainingNode): Promise<TrainingSnapshotItem[]> {
    const out: TrainingSnapshotItem[] = [];
    for (const child of await this.getChildren(node)) {
      const item = this.getTreeItem(child);
      const label = typeof item.label === 'string' ? item.label : (item.label?.label ?? '');
      const entry: TrainingSnapshotItem = { label };
      if (child.kind === 'job') entry.jobId = child.job.id;
      if (item.description !== undefined && item.description !== false) entry.description = String(item.description);
      if (item.iconPath instanceof vscode.ThemeIcon) entry.icon = item.iconPath.id;
      if (item.contextValue) entry.contextValue = item.contextValue;
      const children = await this.snapshot(child);
      if (children.length) entry.children = children;
      out.push(entry);
    }
    return out;
  }
}

function phaseItem(node: Extract<TrainingNode, { kind: 'phase' }>): vscode.TreeItem {
  const { phase, record: r } = node.status;
  const hasChildren = Boolean(r.runId) || r.files.length > 0 || (r.produced !== null && r.produced.kind !== 'data');
  const item = new vscode.TreeItem(phase.name, hasChildren ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
  item.id = `${node.folder}:phase:${phase.name}`;
  item.iconPath = new vscode.ThemeIcon(STATE_ICON[r.state]);
  item.description = phaseDescription(node.status);
  item.tooltip = phaseTooltip(node.status, node.labDir);
  // A GPU phase says its kind too: Launch Training Phase… is offered on those.
  item.contextValue = `rolloutLab.training.phase.${r.state}${phase.kind === 'sft' || phase.kind === 'grpo' ? `.${phase.kind}` : ''}`;
  return item;
}

/** "gather · done · rollouts 6, succeeded 6 · data run-…", or the error of a failed phase. */
export function phaseDescription({ phase, record: r }: PhaseStatus): string {
  const parts: string[] = [phase.kind, r.state];
  // A cancelled phase says cancelled once: its error is only the word again, or which job was cancelled.
  if ((r.state === 'failed' || r.state === 'cancelled') && r.error && r.error !== 'cancelled') {
    parts.push(r.error);
    return parts.join(' · ');
  }
  const counts = countsText(r.counts);
  if (counts) parts.push(counts);
  if (r.produced) parts.push(`${r.produced.kind} ${r.produced.id}`);
  return parts.join(' · ');
}

function phaseTooltip({ phase, record: r }: PhaseStatus, labDir: string): vscode.MarkdownString {
  const md = new vscode.MarkdownString(undefined, true);
  md.isTrusted = false;
  md.appendMarkdown(`**${esc(phase.name)}** (${phase.kind}) — ${r.state}\n\n`);
  if (phase.agents?.length) md.appendMarkdown(`Agents: ${esc(phase.agents.join(', '))}\n\n`);
  if (phase.model) md.appendMarkdown(`Model: ${esc(phase.model)}\n\n`);
  if (r.startedAt) md.appendMarkdown(`Started: ${new Date(r.startedAt).toLocaleString()}\n\n`);
  if (r.endedAt) md.appendMarkdown(`Ended: ${new Date(r.endedAt).toLocaleString()}${r.startedAt ? ` (${Math.round((r.endedAt - r.startedAt) / 100) / 10} s)` : ''}\n\n`);
  if (r.pid) md.appendMarkdown(`Process: ${r.pid}${r.host ? ` on ${esc(r.host)}` : ''}\n\n`);
  const counts = countsText(r.counts);
  if (counts) md.appendMarkdown(`Counts: ${esc(counts)}\n\n`);
  if (r.runId) md.appendMarkdown(`Run: ${esc(r.runId)}\n\n`);
  if (r.job) md.appendMarkdown(`Job: ${esc(r.job)}\n\n`);
  if (r.files.length) md.appendMarkdown(`Data files:\n\n${r.files.map((f) => `- ${esc(path.resolve(labDir, f))}`).join('\n')}\n\n`);
  if (r.produced) md.appendMarkdown(`Produced: ${r.produced.kind} ${esc(r.produced.id)}\n\n`);
  if (r.error) md.appendMarkdown(`Error: ${esc(r.error)}\n\n`);
  for (const c of r.checks) md.appendMarkdown(`- ${c.severity}: ${esc(c.title)} — ${esc(c.fix)}\n`);
  if (r.note) md.appendMarkdown(`\n${esc(r.note)}\n`);
  return md;
}

/** A version on the learning curve: its mean and interval as numbers and as a gauge over 0..1, and the paired change. */
function curvePointItem(node: Extract<TrainingNode, { kind: 'curvePoint' }>): vscode.TreeItem {
  const p = node.point;
  const item = new vscode.TreeItem(p.label, vscode.TreeItemCollapsibleState.None);
  item.id = `${node.folder}:curve:${node.series.model}:${p.label}`;
  const evaluated = p.rollouts > 0 && p.reward.mean !== null;
  item.iconPath = new vscode.ThemeIcon(!evaluated ? 'circle-outline' : p.active ? 'pass-filled' : 'circle-filled');
  item.description = evaluated
    ? [
        // The numbers first (a narrow side bar cuts the end), then the interval as a gauge over 0..1.
        `${meanWithInterval(p.reward.mean, p.reward.ci)} ${intervalGauge(p.reward.mean!, p.reward.ci, 12)}`,
        `n ${p.rollouts}${p.simulated ? ' SIMULATED' : ''}`,
        ...(p.change && p.change.delta !== null ? [`${pairedChangeText(p.change)} vs ${p.change.versus}`] : []),
      ].join(' · ')
    : `not evaluated${p.active ? ' · active' : ''} — run Evaluate on Validation Set`;
  const lines = [
    `${p.label}${p.active ? ' (active)' : ''} — model ${node.series.model}`,
    p.producedBy ? `produced by phase ${p.producedBy.phase}, ${new Date(p.producedBy.at).toLocaleString()}` : p.version === null ? "lab.json's own settings" : 'registered by hand',
  ];
  if (evaluated) {
    lines.push(`validation reward ${meanWithInterval(p.reward.mean, p.reward.ci)} (95 % interval)`, `${p.rollouts} rollouts on ${p.tasks} tasks, runs ${p.runs.join(', ')}`);
    if (p.simulated) lines.push(`${p.simulated} of them answered by the SIMULATED endpoint: they measure the simulator, not a model`);
    if (p.change) lines.push(`change vs ${p.change.versus}: ${pairedChangeText(p.change)}`);
  }
  item.tooltip = lines.join('\n');
  item.contextValue = 'rolloutLab.training.curvePoint';
  item.command = { command: 'rolloutLab.showLearningCurve', title: 'Show Learning Curve' };
  return item;
}

function modelItem(node: Extract<TrainingNode, { kind: 'model' }>): vscode.TreeItem {
  const m = node.model;
  const item = new vscode.TreeItem(m.name, vscode.TreeItemCollapsibleState.Expanded);
  item.id = `${node.folder}:model:${m.name}`;
  item.iconPath = new vscode.ThemeIcon('server-environment');
  item.description = m.active ? `runs version ${m.active}` : m.base ? "runs lab.json's settings" : 'not in lab.json';
  const routes = m.routes.map((r) => `${r.agent} → ${r.version ?? 'lab.json'}`);
  item.tooltip = [m.history.length ? `Activations: ${m.history.join(' → ')}` : `"${m.name}" runs lab.json's own settings`, ...(routes.length ? ['Agents:', ...routes] : [])].join('\n');
  // Only a model on a registered version can be rolled back.
  item.contextValue = m.active ? 'rolloutLab.training.model.versioned' : 'rolloutLab.training.model';
  return item;
}

function versionTooltip(v: ModelVersion, active: boolean): string {
  const lines = [`${v.version}${active ? ' (active)' : ''}`, `registered ${new Date(v.registeredAt).toLocaleString()}`];
  if (v.model) lines.push(`model id: ${v.model}`);
  if (v.baseUrl) lines.push(`endpoint: ${v.baseUrl}`);
  if (v.adapter) lines.push(`adapter: ${v.adapter}`);
  if (v.agents) lines.push(`serves ${v.agents.join(', ')} (the model's other agents keep their version)`);
  if (v.producedBy) lines.push(`produced by phase ${v.producedBy.phase}${v.producedBy.job ? `, job ${v.producedBy.job}` : ''}`);
  return lines.join('\n');
}

function countsText(counts: Record<string, number>): string {
  return Object.entries(counts)
    .map(([k, n]) => `${k} ${Number.isInteger(n) ? n : n.toFixed(3)}`)
    .join(', ');
}
