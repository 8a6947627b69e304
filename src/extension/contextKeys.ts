import * as vscode from 'vscode';

/**
 * The context keys package.json's `when` clauses and the walkthrough's
 * completion events read, that the extension owns: `rolloutLab.hasLab` (a
 * workspace folder has .rollout-lab/lab.json: the palette shows the commands
 * that need one), `rolloutLab.hasRollouts` (a lab's store holds a rollout:
 * the walkthrough's "Run rollouts" step is done), and the walkthrough's later
 * steps: `rolloutLab.traceOpened` (the trace explorer showed a rollout),
 * `rolloutLab.evaluated` (an evaluation finished) and `rolloutLab.dryRunShown`
 * (a training dry run was shown). Keys rather than the commands themselves, so
 * a step ticks off once it is done, and the walkthrough does not redraw (taking
 * the focus) while the command's questions are still open.
 */
export type ContextKey = 'rolloutLab.hasLab' | 'rolloutLab.hasRollouts' | 'rolloutLab.traceOpened' | 'rolloutLab.evaluated' | 'rolloutLab.dryRunShown';

/** Sets each key only when its value changes, and remembers what the workbench was told (the extension-host tests read it). */
export class ContextKeys {
  private readonly values = new Map<ContextKey, boolean>();

  async set(key: ContextKey, value: boolean): Promise<void> {
    if (this.values.get(key) === value) return;
    this.values.set(key, value);
    await vscode.commands.executeCommand('setContext', key, value);
  }

  /** undefined until the extension has set it (the workbench then reads it as false). */
  get(key: ContextKey): boolean | undefined {
    return this.values.get(key);
  }
}
