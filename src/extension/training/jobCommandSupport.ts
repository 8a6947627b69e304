import * as vscode from 'vscode';
import type { z } from 'zod';
import type { JobHooks } from '../../core/train/jobs/jobContext';
import type { FeatureContext } from '../featureContext';
import type { JobFollowers } from './jobFollowers';
import type { CurvesPanels } from './trainingCurvesPanel';
import type { TrainingTree } from './trainingTree';

/** What the training-job commands share: the feature's context, the job followers, the curves panels, the output channel, the view. */
export interface Jobs {
  ctx: FeatureContext;
  followers: JobFollowers;
  curves: CurvesPanels;
  output: vscode.OutputChannel;
  tree: TrainingTree;
  /** The launch summary on screen, for the tests. */
  confirming: string[] | undefined;
}

/** A command's argument object checked against its schema; the first problem is the error, with the command's usage. */
export function parseArgs<T>(schema: z.ZodType<T>, raw: unknown, usage: string): T {
  const r = schema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new Error(`${usage}: ${issue?.path.join('.') || 'argument'} ${issue?.message ?? 'is invalid'}`);
  }
  return r.data;
}

/** Runs work (pre-flight, export, launch) under a notification that shows the core's progress lines; cancelling aborts `signal`. */
export function withProgress<T>(what: string, base: JobHooks, cancellable: boolean, work: (signal: AbortSignal, hooks: JobHooks) => Promise<T>): Thenable<T> {
  return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Rollout Lab: ${what}`, cancellable }, async (progress, token) => {
    const controller = new AbortController();
    const sub = token.onCancellationRequested(() => controller.abort());
    const hooks: JobHooks = {
      ...base,
      log: (line): void => {
        base.log?.(line);
        progress.report({ message: line });
      },
    };
    try {
      return await work(controller.signal, hooks);
    } finally {
      sub.dispose();
    }
  });
}
