import * as vscode from 'vscode';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { core } from './coreLoader';
import type { Lab } from '../core/lab/lab';
import type { TraceStore } from '../core/store/traceStore';
import { errorMessage } from '../core/errors';
import { CoalescingTrigger } from './coalescingTrigger';
import type { ContextKeys } from './contextKeys';
import { Disposable, DisposableStore } from './disposable';

/** Why the rollouts view and the panels should look again. */
export interface LabChange {
  folder: string;
  /** 'store': rollouts or runs changed; 'lab': the lab was opened again, or a lab appeared or went away. */
  reason: 'store' | 'lab';
}

export interface LabServiceOptions {
  /** Environment for model routing: process.env with the API keys from SecretStorage over it. */
  environment(workspaceDir: string): Promise<NodeJS.ProcessEnv>;
  log(line: string): void;
  /** Polling fallback for file watchers that miss events (network drives, containers); 0 turns it off. */
  pollIntervalMs?: number;
  /** How long a burst of journal writes is gathered before the store catches up. */
  debounceMs?: number;
  /** Where `rolloutLab.hasLab` and `rolloutLab.hasRollouts` are set. */
  contextKeys: ContextKeys;
}

interface Entry {
  folder: string;
  opening: Promise<Lab>;
  /** Set once opening has succeeded, for synchronous reads (tree items). */
  lab?: Lab;
  /** Runs in progress on this lab: it is not closed under them when lab.json changes. */
  leases: number;
  stale: boolean;
  refresher: CoalescingTrigger;
  /** What lives as long as this opened lab: its refresher and store watchers. */
  subscriptions: DisposableStore;
}

const LAB_JSON = path.join('.rollout-lab', 'lab.json');

/**
 * The core lab of each workspace folder that has `.rollout-lab/lab.json`,
 * opened on first use, not at activation: the core (graph runner, store,
 * sql.js) is loaded with a dynamic import only then. It watches the store's
 * journals, so rollouts that the CLI writes from another process show up, and
 * it reopens the lab after lab.json changes.
 */
export class LabService extends Disposable {
  private readonly entries = new Map<string, Entry>();
  private readonly changed = this.register(new vscode.EventEmitter<LabChange>());
  private active: string | undefined;
  private closing = false;
  /** Fired after the store of a lab changed (here or in another process) and when a lab is reopened. */
  readonly onDidChange: vscode.Event<LabChange> = this.changed.event;

  constructor(private readonly opts: LabServiceOptions) {
    super();
    const labFiles = vscode.workspace.createFileSystemWatcher(`**/${LAB_JSON.split(path.sep).join('/')}`);
    const onLabFile = (uri: vscode.Uri): void => {
      const folder = path.dirname(path.dirname(uri.fsPath));
      if (!this.isWorkspaceFolder(folder)) return;
      this.invalidate(folder);
      void this.syncContext();
    };
    this.register(labFiles);
    this.register(labFiles.onDidChange(onLabFile));
    this.register(labFiles.onDidCreate(onLabFile));
    this.register(labFiles.onDidDelete(onLabFile));
    this.register(
      vscode.workspace.onDidChangeWorkspaceFolders(() => {
        for (const folder of [...this.entries.keys()]) if (!this.isWorkspaceFolder(folder)) this.invalidate(folder);
        void this.syncContext();
      }),
    );
    // A saved lab.json is picked up even where the file watcher is slow.
    this.register(
      vscode.workspace.onDidSaveTextDocument((doc) => {
        if (doc.uri.scheme === 'file' && doc.uri.fsPath.endsWith(LAB_JSON)) onLabFile(doc.uri);
      }),
    );
    void this.syncContext();
  }

  /** Workspace folders (on disk) that hold a lab, in workspace order. */
  labFolders(): string[] {
    return (vscode.workspace.workspaceFolders ?? [])
      .filter((f) => f.uri.scheme === 'file' && existsSync(path.join(f.uri.fsPath, LAB_JSON)))
      .map((f) => f.uri.fsPath);
  }

  /** The lab that panels show: the one a rollout was last opened from, else the first. */
  activeFolder(): string | undefined {
    const folders = this.labFolders();
    if (this.active && folders.includes(this.active)) return this.active;
    return folders[0];
  }

  setActiveFolder(folder: string): void {
    this.active = folder;
  }

  /** The folder to work in: the one asked for, or the active lab; throws a message a user can act on. */
  resolveFolder(folder?: string): string {
    if (folder) {
      const abs = path.resolve(folder);
      if (!existsSync(path.join(abs, LAB_JSON))) throw new Error(`${abs} has no .rollout-lab/lab.json — run "Rollout Lab: Initialize Lab" there first`);
      return abs;
    }
    const found = this.activeFolder();
    if (found) return found;
    if (!vscode.workspace.workspaceFolders?.length) throw new Error('Rollout Lab needs an open folder: open the folder that holds (or will hold) .rollout-lab/');
    throw new Error('no Rollout Lab in this workspace — run "Rollout Lab: Initialize Lab" to create .rollout-lab/lab.json');
  }

  /** The opened lab of a folder (opened now if it is not yet). */
  async lab(folder?: string): Promise<Lab> {
    const dir = this.resolveFolder(folder);
    let e = this.entry(dir);
    let lab = await e.opening;
    // lab.json changed while this waited: that lab is retired (closed once its leases end); the one opened since reads the same store.
    for (let i = 0; i < 3 && e.stale && !this.closing; i++) {
      e = this.entry(dir);
      lab = await e.opening;
    }
    return lab;
  }

  async store(folder?: string): Promise<TraceStore> {
    return (await this.lab(folder)).store;
  }

  /** The store of a lab that is already open, without opening it. */
  openedStore(folder: string): TraceStore | undefined {
    return this.entries.get(path.resolve(folder))?.lab?.store;
  }

  /** Runs `fn` with the lab held open: a change of lab.json reopens it only after `fn` is done. */
  async withLab<T>(folder: string | undefined, fn: (lab: Lab, folder: string) => Promise<T>): Promise<T> {
    const e = this.entry(this.resolveFolder(folder));
    e.leases++;
    try {
      return await fn(await e.opening, e.folder);
    } finally {
      e.leases--;
      if (e.stale) {
        // lab.json changed while this work ran on the lab opened before it: the lab opened since must read what the work wrote
        // before anyone asks it (it would otherwise wait for the journal watcher).
        const current = this.entries.get(e.folder);
        if (current && current !== e) await current.refresher.flush();
        if (e.leases === 0) this.retire(e);
      }
    }
  }

  /** Catches up on what other processes wrote; resolves once done (tests wait on it). */
  async refresh(folder?: string): Promise<void> {
    const targets = folder ? [this.entries.get(path.resolve(folder))] : [...this.entries.values()];
    await Promise.all(targets.map((e) => e?.refresher.flush()));
  }

  /** Tells listeners that a lab's store changed in this process (a run here reports each rollout). */
  notifyStoreChanged(folder: string): void {
    this.changed.fire({ folder, reason: 'store' });
    this.syncHasRollouts();
  }

  /** Forgets the opened lab of a folder (or every folder); the next use opens it again. */
  invalidate(folder?: string): void {
    const targets = folder ? [path.resolve(folder)] : [...this.entries.keys()];
    for (const f of targets) {
      const e = this.entries.get(f);
      if (!e) continue;
      this.entries.delete(f);
      e.stale = true;
      if (e.leases === 0) this.retire(e);
      this.changed.fire({ folder: f, reason: 'lab' });
    }
  }

  private entry(folder: string): Entry {
    if (this.closing) throw new Error('Rollout Lab is shutting down');
    let e = this.entries.get(folder);
    if (e) return e;
    const subscriptions = new DisposableStore();
    const refresher = subscriptions.add(new CoalescingTrigger(() => this.catchUp(folder), this.opts.debounceMs ?? 150));
    e = { folder, opening: this.open(folder), leases: 0, stale: false, refresher, subscriptions };
    const created = e;
    this.entries.set(folder, created);
    created.opening.then(
      (lab) => {
        created.lab = lab;
        if (!created.stale) this.watch(created);
        this.syncHasRollouts();
      },
      (err: unknown) => {
        // A failed open is not cached: fixing lab.json and trying again must work.
        if (this.entries.get(folder) === created) this.entries.delete(folder);
        this.opts.log(`could not open the lab in ${folder}: ${errorMessage(err)}`);
      },
    );
    return created;
  }

  /** A lab of its own for the caller, who closes it (each online-training round opens one, to see the version the last round registered). */
  openDetached(folder: string): Promise<Lab> {
    return this.open(folder);
  }

  private async open(folder: string): Promise<Lab> {
    const started = performance.now();
    const { Lab } = await core.lab();
    const env = await this.opts.environment(folder);
    const lab = await Lab.open({ workspace: folder, env });
    this.opts.log(`opened the lab in ${folder} (${lab.store.listRuns().length} runs) in ${Math.round(performance.now() - started)} ms${lab.simulated ? ', SIMULATED endpoint for models without one' : ''}`);
    return lab;
  }

  private watch(e: Entry): void {
    const pattern = new vscode.RelativePattern(vscode.Uri.file(e.folder), '.rollout-lab/store/{journal,segments}/**');
    const watcher = vscode.workspace.createFileSystemWatcher(pattern);
    const poke = (): void => e.refresher.trigger();
    e.subscriptions.add(watcher);
    e.subscriptions.add(watcher.onDidChange(poke));
    e.subscriptions.add(watcher.onDidCreate(poke));
    e.subscriptions.add(watcher.onDidDelete(poke));
    const every = this.opts.pollIntervalMs ?? 2000;
    if (every > 0) {
      const timer = setInterval(poke, every);
      e.subscriptions.add({ dispose: () => clearInterval(timer) });
    }
  }

  private async catchUp(folder: string): Promise<void> {
    const e = this.entries.get(folder);
    if (!e || e.stale) return;
    let lab: Lab;
    try {
      lab = await e.opening;
    } catch {
      return;
    }
    if (e.stale) return;
    try {
      if (await lab.store.refresh()) {
        this.changed.fire({ folder, reason: 'store' });
        this.syncHasRollouts();
      }
    } catch (err) {
      this.opts.log(`could not read new rollouts in ${folder}: ${errorMessage(err)}`);
    }
  }

  private retire(e: Entry): void {
    e.subscriptions.dispose();
    e.opening.then(
      (lab) => lab.close(),
      () => undefined,
    ).catch((err: unknown) => this.opts.log(`closing the lab in ${e.folder} failed: ${errorMessage(err)}`));
  }

  private isWorkspaceFolder(folder: string): boolean {
    return (vscode.workspace.workspaceFolders ?? []).some((f) => f.uri.scheme === 'file' && path.resolve(f.uri.fsPath) === path.resolve(folder));
  }

  /**
   * `rolloutLab.hasLab` drives the view's welcome content (a button to initialise when there is none) and
   * which commands the palette offers; Initialize Lab calls it once lab.json is written.
   */
  async syncContext(): Promise<void> {
    await this.opts.contextKeys.set('rolloutLab.hasLab', this.labFolders().length > 0);
  }

  /** `rolloutLab.hasRollouts`: an opened lab's store holds a rollout (the walkthrough's "Run rollouts" step). Once on, it stays on while the labs reopen. */
  private syncHasRollouts(): void {
    if (this.opts.contextKeys.get('rolloutLab.hasRollouts')) return;
    const any = [...this.entries.values()].some((e) => !e.stale && (e.lab?.store.listRollouts({ limit: 0 }).total ?? 0) > 0);
    if (any) void this.opts.contextKeys.set('rolloutLab.hasRollouts', true);
  }

  /** Closes every lab (the store checkpoints its catalog on close). */
  async close(): Promise<void> {
    this.closing = true;
    const all = [...this.entries.values()];
    this.entries.clear();
    for (const e of all) e.subscriptions.dispose();
    await Promise.all(all.map((e) => e.opening.then((lab) => lab.close(), () => undefined).catch(() => undefined)));
    super.dispose();
  }

  override dispose(): void {
    void this.close();
  }
}
