import * as vscode from 'vscode';
import * as path from 'node:path';
import { z } from 'zod';
import { core } from '../coreLoader';
import type { Lab } from '../../core/lab/lab';
import type { ApoResult, ApoRound } from '../../core/train/apo/apoTypes';
import type { FeatureContext } from '../featureContext';

/** The argument-object form of Optimize Prompt (tests, keybindings, scripts); without it the command asks. */
export const OptimizeArgsSchema = z.strictObject({
  agent: z.string().min(1),
  rounds: z.number().int().min(1).max(20).optional(),
  beam: z.number().int().min(1).max(10).optional(),
  candidates: z.number().int().min(1).max(10).optional(),
  validationTasks: z.number().int().min(1).max(500).optional(),
  /** Write the winner at once (when it beats the current prompt). */
  apply: z.boolean().optional(),
  /** Show the critic simulated rollouts as low-reward examples too (left out by default). */
  includeSimulated: z.boolean().optional(),
  /** Which workspace folder's lab, when several folders have one. */
  workspace: z.string().min(1).optional(),
});
export type OptimizeArgs = z.infer<typeof OptimizeArgsSchema>;

/** What Optimize Prompt returns: the optimisation, and where the winner was written when it was applied. */
export type OptimizePromptResult = ApoResult & { applied: { file: string; version: string } | null };

/** Read-only documents of the prompts an optimisation compared: `rollout-lab-apo:/<Agent>/<baseline|winner>-<version>.md`. */
const APO_SCHEME = 'rollout-lab-apo';
const TITLE = 'Rollout Lab: Optimize Prompt';

/** Registers Optimize Prompt and the documents its diff shows. */
export function registerOptimizeCommands(ctx: FeatureContext): void {
  const docs = new Map<string, string>();
  ctx.extension.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider(APO_SCHEME, {
      provideTextDocumentContent: (uri) => docs.get(uri.toString()) ?? `This optimisation result is no longer in memory (${uri.path}); run Optimize Prompt again.\n`,
    }),
  );
  ctx.register('rolloutLab.optimizePrompt', (arg) => optimizePromptCommand(ctx, docs, arg));
}

async function optimizePromptCommand(ctx: FeatureContext, docs: Map<string, string>, raw: unknown): Promise<OptimizePromptResult | undefined> {
  // Menus pass a view item or a URI; only a plain object is the argument form.
  const given = raw !== null && typeof raw === 'object' && !(raw instanceof vscode.Uri) && !('kind' in raw) ? raw : undefined;
  let args: OptimizeArgs | undefined;
  if (given !== undefined) {
    const parsed = OptimizeArgsSchema.safeParse(given);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new Error(`invalid arguments for Optimize Prompt: ${issue?.path.length ? `${issue.path.join('.')}: ` : ''}${issue?.message ?? ''} — expected { agent, rounds?, beam?, candidates?, validationTasks?, apply?, includeSimulated? }`);
    }
    args = parsed.data;
  }
  return ctx.lab.withLab(args?.workspace, async (lab, folder) => {
    const agent = args?.agent ?? (await pickAgent(lab));
    if (!agent) return undefined;
    const result = await run(ctx, lab, folder, agent, args ?? {});
    if (!result) return undefined;
    printRounds(ctx, result);
    const improved = result.best.version !== result.baseline.version;
    if (!improved) {
      const msg = `${agent}: no rewrite beat the current prompt (score ${fmt(result.baseline.score)}); nothing to apply.`;
      ctx.output.appendLine(msg);
      if (!args) void vscode.window.showInformationMessage(msg, 'Show Rounds').then((c) => c && ctx.output.show(true));
      return { ...result, applied: null };
    }
    await showDiff(docs, folder, result);
    if (args?.apply) return { ...result, applied: await apply(ctx, folder, agent, result.best.text) };
    if (!args) {
      void vscode.window
        .showInformationMessage(`${agent}: the winner scores ${fmt(result.best.score)} vs ${fmt(result.baseline.score)} for the current prompt. Apply it?`, 'Apply', 'Show Rounds')
        .then(async (choice) => {
          if (choice === 'Show Rounds') ctx.output.show(true);
          if (choice !== 'Apply') return;
          try {
            const applied = await apply(ctx, folder, agent, result.best.text);
            void vscode.window.showInformationMessage(`${agent}: wrote ${path.basename(applied.file)}; the next rollout records prompt version ${applied.version.slice(0, 8)}.`);
          } catch (err) {
            void vscode.window.showErrorMessage(`Could not apply the prompt: ${err instanceof Error ? err.message : String(err)}`);
          }
        });
    }
    return { ...result, applied: null };
  });
}

/** The agent of the prompt file in the active editor, else the one the user picks. */
async function pickAgent(lab: Lab): Promise<string | undefined> {
  const { promptTarget } = await core.applyPrompt();
  const agents = Object.keys(lab.loaded.config.agents);
  const active = vscode.window.activeTextEditor?.document.uri;
  if (active?.scheme === 'file') {
    const own = agents.find((a) => {
      const t = promptTarget(lab.loaded, a);
      return !t.inline && path.resolve(t.file) === path.resolve(active.fsPath);
    });
    if (own) return own;
  }
  const picked = await vscode.window.showQuickPick(
    agents.map((a) => ({ label: a, description: `model ${lab.loaded.config.agents[a]!.model}`, detail: `${lab.store.listPromptVersions(a).length} stored prompt version(s)` })),
    { title: TITLE, placeHolder: 'Agent whose prompt to optimise (critique, rewrite, score on validation tasks)' },
  );
  return picked?.label;
}

async function run(ctx: FeatureContext, lab: Lab, folder: string, agent: string, args: Partial<OptimizeArgs>): Promise<ApoResult | undefined> {
  const { optimizePrompt } = await core.optimizePrompt();
  const cfg = lab.loaded.config.optimize;
  const rounds = args.rounds ?? cfg.rounds;
  const sim = lab.simulated ? ' (SIMULATED)' : '';
  const notice = lab.simulationNotice();
  if (notice) ctx.output.appendLine(notice);
  ctx.output.appendLine(`optimize ${agent}: ${rounds} round(s), beam ${args.beam ?? cfg.beam}, ${args.candidates ?? cfg.candidates} rewrite(s) per kept prompt, ${args.validationTasks ?? cfg.validationTasks} val task(s)${sim}`);
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Rollout Lab${sim}: optimising ${agent}'s prompt`, cancellable: true },
    async (progress, token) => {
      const controller = new AbortController();
      const sub = token.onCancellationRequested(() => controller.abort());
      let best: number | null = null;
      try {
        const result = await optimizePrompt(lab, {
          agent,
          ...pick(args),
          signal: controller.signal,
          onScoring: ({ round, candidate, of, runId }) => {
            const what = round === 0 ? 'scoring the current prompt' : `round ${round}/${rounds}: scoring rewrite ${candidate + 1} of up to ${of}`;
            progress.report({ message: `${what}${best === null ? '' : ` · best ${fmt(best)}`}` });
            ctx.output.appendLine(`${what} (run ${runId})`);
            ctx.lab.notifyStoreChanged(folder);
          },
          onRound: (r) => {
            best = r.beam?.[0]?.score ?? best;
            progress.report({ increment: 100 / rounds, message: `round ${r.round}/${rounds} done · best ${fmt(best)}` });
            ctx.lab.notifyStoreChanged(folder);
          },
        });
        ctx.lab.notifyStoreChanged(folder);
        if (controller.signal.aborted) {
          ctx.output.appendLine(`cancelled after ${result.rounds.length} round(s); the scoring runs are stored`);
          return undefined;
        }
        return result;
      } finally {
        sub.dispose();
      }
    },
  );
}

function pick(a: Partial<OptimizeArgs>): { rounds?: number; beam?: number; candidates?: number; validationTasks?: number; includeSimulated?: boolean } {
  const out: { rounds?: number; beam?: number; candidates?: number; validationTasks?: number; includeSimulated?: boolean } = {};
  if (a.includeSimulated) out.includeSimulated = true;
  if (a.rounds !== undefined) out.rounds = a.rounds;
  if (a.beam !== undefined) out.beam = a.beam;
  if (a.candidates !== undefined) out.candidates = a.candidates;
  if (a.validationTasks !== undefined) out.validationTasks = a.validationTasks;
  return out;
}

/** The per-round table in the Output channel. */
function printRounds(ctx: FeatureContext, r: ApoResult): void {
  const o = ctx.output;
  o.appendLine(`${r.agent}: baseline ${r.baseline.version} score ${fmt(r.baseline.score)}`);
  for (const round of r.rounds) {
    o.appendLine(`round ${round.round}`);
    for (const line of round.critique.split('\n').filter(Boolean)) o.appendLine(`  critique: ${line}`);
    o.appendLine(`  ${'#'.padStart(2)}  ${'version'.padEnd(12)}  score  kept  run / note`);
    round.candidates.forEach((c, i) => o.appendLine(`  ${String(i + 1).padStart(2)}  ${(c.version || '-').padEnd(12)}  ${fmt(c.score).padEnd(5)}  ${c.kept ? 'yes ' : '    '}  ${c.error ?? c.runId ?? ''}`));
    if (round.beam) o.appendLine(`  beam: ${round.beam.map((b) => `${b.version} ${fmt(b.score)}${b.round === 0 ? ' (baseline)' : ` (round ${b.round})`}`).join(', ')}`);
  }
  o.appendLine(`winner: ${r.best.version} (round ${r.best.round}) score ${fmt(r.best.score)} vs baseline ${fmt(r.baseline.score)}`);
}

/** Opens VS Code's diff editor: the current prompt on the left, the winner on the right, both read-only. */
async function showDiff(docs: Map<string, string>, folder: string, r: ApoResult): Promise<void> {
  const uri = (side: 'baseline' | 'winner', version: string): vscode.Uri =>
    vscode.Uri.from({ scheme: APO_SCHEME, path: `/${encodeURIComponent(r.agent)}/${side}-${version}.md`, query: new URLSearchParams({ folder }).toString() });
  const left = uri('baseline', r.baseline.version);
  const right = uri('winner', r.best.version);
  docs.set(left.toString(), r.baseline.text);
  docs.set(right.toString(), r.best.text);
  await vscode.commands.executeCommand('vscode.diff', left, right, diffTitle(r), { preview: true });
}

/** "Supervisor: current 0.690 ↔ winner 0.706 · rounds 0.690, 0.706". */
export function diffTitle(r: ApoResult): string {
  const rounds = r.rounds.map((x: ApoRound) => fmt(x.beam?.[0]?.score ?? null)).join(', ');
  return `${r.agent}: current ${fmt(r.baseline.score)} ↔ winner ${fmt(r.best.score)}${rounds ? ` · best per round ${rounds}` : ''}`;
}

/** Writes the winner; refuses while the prompt's document has unsaved edits, which the write would silently overwrite. */
async function apply(ctx: FeatureContext, folder: string, agent: string, text: string): Promise<{ file: string; version: string }> {
  const { applyPrompt, promptTarget } = await core.applyPrompt();
  return ctx.lab.withLab(folder, async (lab) => {
    const target = promptTarget(lab.loaded, agent);
    const open = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && path.resolve(d.uri.fsPath) === path.resolve(target.file));
    if (open?.isDirty) throw new Error(`${path.basename(target.file)} has unsaved changes — save or revert it, then apply again`);
    const applied = await applyPrompt(lab, agent, text);
    ctx.output.appendLine(`applied: wrote ${applied.file}; the next rollout records ${agent} prompt version ${applied.version}`);
    return applied;
  });
}

function fmt(x: number | null): string {
  return x === null ? 'n/a' : x.toFixed(3);
}
