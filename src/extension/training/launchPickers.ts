import * as vscode from 'vscode';
import { core } from '../coreLoader';
import type { LoadedConfig } from '../../core/config/loader';
import type { PhaseConfig, TargetConfig } from '../../core/config/trainingSchema';
import { hyperparameterSummary, hyperparameterText, parseHyperparameterText, summaryKeys, type Hyperparameters } from './hyperparameterText';

/** What the pickers of Launch Training Phase… settle; a local phase (bandit, apo) needs only its name. */
export interface LaunchChoice {
  phase: PhaseConfig;
  target?: string;
  baseModel?: string;
  hyperparameters?: Hyperparameters;
  serve?: boolean;
}

/** Phases the command launches: GPU jobs (sft, grpo) and the ones that train here (bandit, apo). */
const LAUNCHABLE = new Set(['sft', 'grpo', 'bandit', 'apo']);
const GPU = new Set(['sft', 'grpo']);
const STEPS = 5;

/** "me@gpu-box:2222 · 1× A100", "cluster train-1 on aws · 1× H100, spot", "ml in kind-dev · 1 GPU". */
export function targetDetail(t: TargetConfig): string {
  const gpus = t.gpus > 0 ? `${t.gpus}× ${t.gpuType ?? 'GPU'}` : 'CPU';
  switch (t.kind) {
    case 'local':
      return `this machine · ${t.python ?? 'a python with torch'} · ${gpus}`;
    case 'ssh':
      return `${t.host}${t.port ? `:${t.port}` : ''} · ${gpus}`;
    case 'skypilot':
      return `${t.cluster ? `cluster ${t.cluster}` : 'a new cluster per job'}${t.cloud ? ` on ${t.cloud}` : ''}${t.region ? ` (${t.region})` : ''} · ${gpus}${t.useSpot ? ', spot' : ''}`;
    case 'k8s':
      return `namespace ${t.namespace}${t.context ? ` in ${t.context}` : ''} · ${gpus}`;
    case 'slurm':
      return `Slurm ${t.host ? `via ${t.host}` : 'on this machine'}${t.partition ? ` · partition ${t.partition}` : ''}${t.timeLimit ? ` · ${t.timeLimit}` : ''} · ${gpus}`;
  }
}

function title(step: number, phase?: string): string {
  return `Launch Training Phase${phase ? ` ${phase}` : ''} (${step}/${STEPS})`;
}

/**
 * The pickers of Launch Training Phase…: phase, target, base model,
 * hyper-parameters (the reference settings, or edited as `key=value`
 * pairs checked as they are typed) and whether to serve the result.
 * Undefined when the user dismisses one.
 */
export async function pickLaunch(
  loaded: LoadedConfig,
  phases: PhaseConfig[],
  reference: (kind: 'sft' | 'grpo') => Hyperparameters,
  preset?: string,
): Promise<LaunchChoice | undefined> {
  const { training } = loaded.config;
  const launchable = phases.filter((p) => LAUNCHABLE.has(p.kind));
  if (launchable.length === 0) {
    const { undeclaredPipelineText } = await core.phases();
    // A module graph has no reference pipeline: say how to declare one from its own agents.
    if (phases.length === 0) throw new Error(`no training phases to launch: ${undeclaredPipelineText(loaded.config)}`);
    throw new Error('the training pipeline has no sft, grpo, bandit or apo phase — declare one under "training.phases" in .rollout-lab/lab.json');
  }
  let phase = preset ? launchable.find((p) => p.name === preset) : undefined;
  if (!phase) {
    const picked = await vscode.window.showQuickPick(
      launchable.map((p) => ({
        label: p.name,
        description: [p.kind, p.model ? `model ${p.model}` : '', p.agents?.length ? p.agents.join(', ') : ''].filter(Boolean).join(' · '),
        detail: GPU.has(p.kind) ? 'A job on a training target (this machine, SSH, SkyPilot, Kubernetes or Slurm)' : 'Trains on this machine',
        phase: p,
      })),
      { title: title(1), placeHolder: 'The phase to train', ignoreFocusOut: true, matchOnDescription: true },
    );
    if (!picked) return undefined;
    phase = picked.phase;
  }
  if (!GPU.has(phase.kind)) return { phase };
  const kind = phase.kind as 'sft' | 'grpo';

  const target = await pickTarget(training.targets, phase.target ?? training.trainer.target ?? 'local', phase.name);
  if (target === undefined) return undefined;

  // The trainer has one backend (transformers): nothing to ask. A model built from training.trainer.modelConfig: its "base model" is only a name.
  const baseModel = training.trainer.modelConfig ? (phase.baseModel ?? training.trainer.baseModel) : await vscode.window.showInputBox({
    title: title(3, phase.name),
    prompt: 'Base model: a Hugging Face id, or a directory with weights on the target',
    value: phase.baseModel ?? training.trainer.baseModel,
    ignoreFocusOut: true,
    validateInput: (v) => (v.trim() ? undefined : 'a model id or a directory'),
  });
  if (baseModel === undefined) return undefined;

  const hyperparameters = await pickHyperparameters(kind, reference(kind), phase);
  if (hyperparameters === undefined) return undefined;

  const serve = await vscode.window.showQuickPick(
    [
      {
        label: 'Serve the result and use it for the next rollouts',
        detail: phase.model ? `Serves the trained adapter on ${target} and makes it the active version of "${phase.model}"` : 'Serves it; the phase names no "model", so no model version is registered',
        serve: true,
      },
      { label: 'Only train', detail: 'Keeps the trained adapter; serve it later with Serve Result', serve: false },
    ],
    { title: title(5, phase.name), placeHolder: 'When the job succeeds', ignoreFocusOut: true },
  );
  if (!serve) return undefined;
  return { phase, target, baseModel: baseModel.trim(), hyperparameters, serve: serve.serve };
}

/**
 * Where the job runs. A local target's row says which python this machine would run it with and whether it
 * has torch (only Dry Run works without it): the list shows at once, and the rows fill in as the probe answers.
 */
async function pickTarget(targets: Record<string, TargetConfig>, preferred: string, phase: string): Promise<string | undefined> {
  type Item = vscode.QuickPickItem & { name: string; python?: string };
  const items: Item[] = Object.entries(targets).map(([name, t]) => ({ label: name, description: t.kind, detail: targetDetail(t), name, ...(t.kind === 'local' ? { python: t.python ?? '' } : {}) }));
  if (!targets.local) items.push({ label: 'local', description: 'local', detail: 'this machine · the first python with torch (set training.targets.local.python to choose one)', name: 'local', python: '' });
  // The phase's (or the trainer's) target first, marked, so Enter takes it.
  let first = items.findIndex((i) => i.name === preferred);
  // A kind instead of a name (trainer.target "ssh"): the first target of that kind, as the core resolves it.
  if (first < 0) first = items.findIndex((i) => i.description === preferred);
  if (first > 0) items.unshift(...items.splice(first, 1));
  if (first >= 0) items[0]!.description = `${items[0]!.description} · default`;
  const qp = vscode.window.createQuickPick<Item>();
  qp.title = title(2, phase);
  qp.placeholder = 'Where the job runs (training.targets in lab.json)';
  qp.ignoreFocusOut = true;
  qp.matchOnDetail = true;
  qp.items = items;
  const local = items.filter((i) => i.python !== undefined);
  if (local.length) {
    qp.busy = true;
    void (async (): Promise<void> => {
      const { checkLocalPython } = await core.localPython();
      for (const item of local) {
        const c = await checkLocalPython(item.name, item.python || undefined);
        const gpus = targets[item.name]?.gpus ? `${targets[item.name]!.gpus}× ${targets[item.name]!.gpuType ?? 'GPU'}` : 'CPU';
        item.detail = `this machine · ${gpus} · ${c.summary}`;
      }
      // Replacing the items moves the selection to the first row: keep the one the user is on.
      const active = qp.activeItems[0];
      qp.items = [...items];
      if (active) qp.activeItems = [active];
      qp.busy = false;
    })().catch(() => {
      qp.busy = false;
    });
  }
  return new Promise((resolve) => {
    let picked: string | undefined;
    qp.onDidAccept(() => {
      picked = qp.activeItems[0]?.name;
      qp.hide();
    });
    qp.onDidHide(() => {
      qp.dispose();
      resolve(picked);
    });
    qp.show();
  });
}

/** The reference settings (with the phase's own over them), or overrides typed as `key=value, …`. */
async function pickHyperparameters(kind: 'sft' | 'grpo', reference: Hyperparameters, phase: PhaseConfig): Promise<Hyperparameters | undefined> {
  const base = { ...reference, ...phase.hyperparameters };
  const own = Object.keys(phase.hyperparameters).length > 0;
  const choice = await vscode.window.showQuickPick(
    [
      { label: own ? "Use the phase's settings" : 'Use reference defaults', description: hyperparameterSummary(kind, base), edit: false },
      { label: 'Edit…', description: 'change some settings for this job, as key=value pairs', edit: true },
    ],
    { title: title(4, phase.name), placeHolder: 'Hyper-parameters', ignoreFocusOut: true },
  );
  if (!choice) return undefined;
  if (!choice.edit) return {};
  // The box starts with the settings people tune (and the phase's own); any other known name can be added.
  const shown = Object.fromEntries(Object.entries(base).filter(([k]) => k in phase.hyperparameters || summaryKeys(kind).includes(k)));
  const text = await vscode.window.showInputBox({
    title: title(4, phase.name),
    prompt: `key=value, … over the ${own ? "phase's" : 'reference'} settings. Known: ${Object.keys(reference).join(', ')}`,
    value: hyperparameterText(shown),
    ignoreFocusOut: true,
    validateInput: (v) => {
      const r = parseHyperparameterText(v, reference, base);
      return r.ok ? undefined : r.error;
    },
  });
  if (text === undefined) return undefined;
  const parsed = parseHyperparameterText(text, reference, base);
  return parsed.ok ? parsed.values : undefined;
}
