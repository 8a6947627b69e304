import * as vscode from 'vscode';
import * as path from 'node:path';
import { core } from '../coreLoader';
import { errorMessage } from '../../core/errors';
import type { JobRecord } from '../../core/train/jobs/jobRecord';
import type { JobHooks } from '../../core/train/jobs/jobContext';
import type { FollowOptions } from '../../core/train/jobs/jobLifecycle';
import { parseTrainerEvent } from '../../core/train/jobs/trainerEvents';
import { Disposable } from '../disposable';
import type { FeatureContext } from '../featureContext';
import { jobSecrets, listJobsOf } from './jobFiles';
import { eventLine } from './jobText';

/** Something happened to a job this window follows: the view and the curves look again. */
export interface JobActivity {
  folder: string;
  /** The job; '' for a phase record change. */
  jobId: string;
  kind: 'record' | 'metrics' | 'event' | 'phase';
  record?: JobRecord;
}

const ACTIVE = new Set(['launching', 'running', 'fetching']);

function key(folder: string, id: string): string {
  return `${path.resolve(folder)}\0${id}`;
}

/**
 * The training jobs this window follows: their log lines go to the "Rollout
 * Lab Training" channel, their events and records to the Training view and
 * the curves. Each job is followed at most once per window: a launch, a
 * reattach after reload, Reattach and Serve Result all go through here. A
 * follow stops (the job goes on) when the window closes or the job is
 * cancelled from here.
 */
export class JobFollowers extends Disposable {
  /** Jobs followed now, each with the controller that stops its follower (a serve job started by a follow shares its controller). */
  private readonly controllers = new Map<string, AbortController>();
  private readonly pending = new Map<string, Promise<JobRecord>>();
  private readonly scanned = new Set<string>();
  private readonly activity = this.register(new vscode.EventEmitter<JobActivity>());
  readonly onActivity: vscode.Event<JobActivity> = this.activity.event;

  constructor(
    private readonly ctx: FeatureContext,
    readonly output: vscode.OutputChannel,
  ) {
    super();
  }

  isFollowing(folder: string, id: string): boolean {
    return this.controllers.has(key(folder, id));
  }

  /** Hooks that feed the channel and the listeners; a job they report as active counts as followed by `controller`. */
  hooks(folder: string, controller: AbortController): JobHooks {
    return {
      signal: controller.signal,
      log: (line) => this.output.appendLine(line),
      onLine: (jobId, line) => this.writeLine(jobId, line),
      onEvent: (jobId, ev) => this.activity.fire({ folder, jobId, kind: ev.event === 'metrics' ? 'metrics' : 'event' }),
      onRecord: (rec) => {
        this.track(folder, rec, controller);
        this.activity.fire({ folder, jobId: rec.id, kind: 'record', record: rec });
      },
      onPhase: () => this.activity.fire({ folder, jobId: '', kind: 'phase' }),
    };
  }

  /**
   * Follows a job to its end (or returns the follow under way): its final
   * record, after fetching, serving and registering as followJob does.
   */
  follow(folder: string, id: string, fo: FollowOptions, controller = new AbortController()): Promise<JobRecord> {
    const k = key(folder, id);
    const running = this.pending.get(k);
    if (running) return running;
    this.controllers.set(k, controller);
    const done = (async (): Promise<JobRecord> => {
      const { labJobContext } = await core.labJobContext();
      const { followJob } = await core.jobLifecycle();
      // followJob reads only the lab's config: a lab reopened meanwhile (lab.json changed) does not disturb it.
      const lab = await this.ctx.lab.lab(folder);
      return followJob(labJobContext(lab), id, this.hooks(folder, controller), fo);
    })().finally(() => {
      if (this.pending.get(k) === done) this.pending.delete(k);
      if (this.controllers.get(k) === controller) this.controllers.delete(k);
      this.activity.fire({ folder, jobId: id, kind: 'record' });
    });
    this.pending.set(k, done);
    return done;
  }

  /** Stops following a job here (it keeps running on its target): before a cancel, so this follower does not record the kill as a failure. */
  stop(folder: string, id: string): void {
    const k = key(folder, id);
    this.controllers.get(k)?.abort();
    this.controllers.delete(k);
    // A follow asked for from now on starts afresh instead of joining the one being stopped.
    this.pending.delete(k);
  }


  /**
   * After a window reload: follows every job of the lab that is still
   * active and not followed here, once per folder. Returns the ids it
   * reattached to; each follow goes on in the background.
   */
  async reattachAll(folder: string): Promise<string[]> {
    const k = path.resolve(folder);
    if (this.scanned.has(k)) return [];
    this.scanned.add(k);
    const { jobs } = await listJobsOf(folder);
    const ids: string[] = [];
    for (const rec of jobs) {
      if (!ACTIVE.has(rec.state) || !rec.handle || this.isFollowing(folder, rec.id)) continue;
      ids.push(rec.id);
      this.output.appendLine(`job ${rec.id}: reattaching (${rec.state} on ${rec.targetName})`);
      this.followInBackground(folder, rec.id);
    }
    return ids;
  }

  /**
   * Follows a job (serving the result if its launch asked for it) and tells
   * the user how it ended; the returned promise is for callers that wait.
   */
  followInBackground(folder: string, id: string, controller?: AbortController): Promise<JobRecord> {
    // The record says whether the launch asked to serve the result; the serve job gets the SecretStorage values.
    const following = (async (): Promise<JobRecord> => {
      const { loadConfig } = await core.config();
      const secrets = await jobSecrets(this.ctx, (await loadConfig(folder)).config.training.trainer.secrets);
      return this.follow(folder, id, { secrets }, controller);
    })();
    following.then(
      (rec) => this.announce(rec),
      (err: unknown) => {
        this.output.appendLine(`job ${id}: following it failed: ${errorMessage(err)}`);
        void vscode.window.showWarningMessage(`Rollout Lab: following job ${id} failed: ${errorMessage(err)}`);
      },
    );
    return following;
  }

  /** One message when a followed job ends: how it went and where to look. */
  announce(rec: JobRecord): void {
    if (ACTIVE.has(rec.state)) return;
    if (rec.state === 'succeeded') {
      const what = rec.registered ? ` — "${rec.registered.model}" version ${rec.registered.version} is active for the next rollouts` : '';
      void vscode.window.showInformationMessage(`Rollout Lab: training job ${rec.id} succeeded${what}.`);
    } else if (rec.state === 'failed') {
      void vscode.window.showWarningMessage(`Rollout Lab: training job ${rec.id} failed: ${rec.error ?? 'see its log'}`, 'Show Log').then((a) => {
        if (a) void vscode.commands.executeCommand('rolloutLab.showTrainingJobLog', { id: rec.id });
      });
    }
  }

  private track(folder: string, rec: JobRecord, controller: AbortController): void {
    const k = key(folder, rec.id);
    if (ACTIVE.has(rec.state)) {
      if (!controller.signal.aborted) this.controllers.set(k, controller);
    } else if (this.controllers.get(k) === controller) {
      this.controllers.delete(k);
    }
  }

  /** A log line, compact when it is a trainer event; prefixed with the job when several are followed. */
  private writeLine(jobId: string, line: string): void {
    const ev = parseTrainerEvent(line);
    const text = (ev && eventLine(ev)) ?? line;
    this.output.appendLine(this.controllers.size > 1 ? `[${jobId}] ${text}` : text);
  }

  override dispose(): void {
    // Stops following; the jobs themselves keep running and the next window reattaches.
    for (const c of this.controllers.values()) c.abort();
    this.controllers.clear();
    super.dispose();
  }
}
