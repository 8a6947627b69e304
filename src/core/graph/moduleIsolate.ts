import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { ConfigError } from '../errors';
import { tellRetry, type RetryNotice } from '../llm/retryNotices';

/*
 * A user's module (a graph, a reward, simulator answers, a search provider)
 * runs in a worker thread of its own, so that nothing it does reaches the lab:
 * a busy loop is stopped by terminating the worker when its time is up (the
 * main thread stays free to keep time and to hear Ctrl+C), and process.exit()
 * or an uncaught error ends only the worker. The next call starts a new one.
 */

/** Messages between the main thread and a module worker. */
export type ToWorker =
  | { type: 'call'; id: number; method: string; args: unknown }
  /** The lab no longer waits for this call (cancelled, out of time): the module is asked to stop it. */
  | { type: 'abort'; id: number }
  | { type: 'reply'; id: number; ok: true; value: unknown }
  | { type: 'reply'; id: number; ok: false; message: string };

export type FromWorker =
  | { type: 'ready'; info?: unknown }
  | { type: 'loadError'; name: string; message: string; file?: string }
  | { type: 'result'; id: number; ok: true; value: unknown }
  | { type: 'result'; id: number; ok: false; name: string; message: string; status?: number }
  /** The module asks the main thread for something during a call (a custom reward's input.judge()). */
  | { type: 'request'; id: number; callId: number; method: string; args: unknown }
  /** Something a call reports as it goes (a graph's spans as they end). */
  | { type: 'event'; callId: number; value: unknown }
  /** A model call in the worker is being retried: told on the lab's thread, where the batch listens. */
  | { type: 'retry'; notice: RetryNotice };

/** What starts a worker: its role (what to load and how to call it) and the data the role needs. */
export interface IsolateSpec {
  role: string;
  /** The module's absolute path. */
  file: string;
  /** How messages name the module: "reward module rewards/slow.ts". */
  label: string;
  data?: unknown;
}

/** A call that was still running when its time was up; its worker was stopped. Classified as a `timeout`. */
export class IsolateTimeoutError extends Error {
  override name = 'TimeoutError';
}

/** The worker ended during a call: the module called process.exit(), or an error nothing caught ended it. */
export class IsolateExitedError extends Error {
  override name = 'IsolateExitedError';
}

/** An error the module's call threw, carried across with its name and message. */
export class IsolateCallError extends Error {
  constructor(
    message: string,
    originalName: string,
    /** An HTTP status the error carried (a model call's), so the rollout is classified as it was in-process. */
    readonly status?: number,
  ) {
    super(message);
    this.name = originalName;
  }
}

export interface CallOptions {
  /** Past it the worker is stopped and the call rejects with `timeoutError()`. */
  timeoutMs?: number;
  timeoutMessage?: () => string;
  /** Aborting stops the worker at once: the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Answers the module's requests during the call. */
  onRequest?: (method: string, args: unknown) => Promise<unknown>;
  onEvent?: (value: unknown) => void;
}

/** How long a worker that runs other calls too gets to stop a call it was asked to stop, before it is stopped whole. */
export const ABORT_GRACE_MS = 2_000;

/** Loading a module (bundling it, running its top level) that takes longer than this is stuck: its worker is stopped. */
export const MODULE_LOAD_LIMIT_MS = 120_000;

interface Pending {
  resolve(value: unknown): void;
  reject(err: unknown): void;
  opts: CallOptions;
}

/** The worker entry: the bundle's own file beside the CLI and the extension, or the TypeScript source under tsx. */
export function moduleWorkerEntry(): { file: string; eval: boolean } {
  const bundled = join(__dirname, 'moduleWorker.js');
  if (existsSync(bundled)) return { file: bundled, eval: false };
  const source = join(__dirname, '../lab/moduleWorker.ts');
  // A worker does not inherit the loader hooks that run TypeScript; it registers them itself.
  return { file: `require(${JSON.stringify(createRequire(__filename).resolve('tsx/cjs'))}); require(${JSON.stringify(source)});`, eval: true };
}

/** One worker thread running one user module; one call at a time. */
export class ModuleIsolate {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private exited: string | null = null;
  /** Why the lab stopped the worker, when it did. */
  private stopReason: string | null = null;
  /** Calls the lab gave up on (cancelled, out of time) that the worker has not yet answered: id → the timer that stops it whole. */
  private readonly abandoned = new Map<number, NodeJS.Timeout>();
  /** Takes no more calls: one of its calls was given up on; it stops once the others are done. */
  private retiring = false;
  readonly ready: Promise<void>;
  /** What the module told about itself once loaded (a search provider's name). */
  info: unknown = undefined;
  private loaded = false;
  /** The thread's event-loop use at the start of the window `busy` measures, and when that was. */
  private busyMark: EventLoopUtilization | null = null;
  private busyAt = 0;
  private busyShare = 0;
  /** Until its first answer (or WARM_UP_MS after loading), the worker is warming up: `busy` is 0. */
  private warmUp: NodeJS.Timeout | null = null;

  constructor(readonly spec: IsolateSpec) {
    const entry = moduleWorkerEntry();
    this.worker = new Worker(entry.file, {
      eval: entry.eval,
      workerData: spec,
      // The module's own output goes where the lab's does, as it did in-process.
      stdout: false,
      stderr: false,
    });
    this.worker.unref();
    let readyResolve!: () => void;
    let readyReject!: (err: unknown) => void;
    this.ready = new Promise<void>((resolve, reject) => {
      readyResolve = resolve;
      readyReject = reject;
    });
    // A load that fails is reported to whoever awaits `ready`; nobody awaiting it is no unhandled rejection.
    this.ready.catch(() => undefined);
    const loadTimer = setTimeout(() => {
      this.exited ??= 'stuck while loading';
      readyReject(new ConfigError(`${spec.label} did not finish loading within ${MODULE_LOAD_LIMIT_MS / 1000} s (a loop at its top level or in its graph factory?); fix it and run again`, spec.file));
      void this.worker.terminate();
    }, MODULE_LOAD_LIMIT_MS);
    loadTimer.unref();
    void this.ready.then(
      () => clearTimeout(loadTimer),
      () => clearTimeout(loadTimer),
    );
    this.worker.on('message', (m: FromWorker) => {
      switch (m.type) {
        case 'ready': {
          this.loaded = true;
          this.info = m.info;
          // Its first calls compile the module's code as they run: that is warm-up, not a full worker.
          const warm = setTimeout(() => this.warmedUp(), WARM_UP_MS);
          warm.unref();
          this.warmUp = warm;
          readyResolve();
          return;
        }
        case 'loadError':
          readyReject(m.name === 'ConfigError' ? new ConfigError(m.message, m.file) : new Error(m.message));
          return;
        case 'result': {
          const grace = this.abandoned.get(m.id);
          if (grace) {
            // The module stopped the call it was asked to stop: the worker needs no stopping for it.
            clearTimeout(grace);
            this.abandoned.delete(m.id);
          }
          this.warmedUp();
          const p = this.pending.get(m.id);
          if (p) {
            this.pending.delete(m.id);
            if (m.ok) p.resolve(m.value);
            else p.reject(new IsolateCallError(m.message, m.name, m.status));
          }
          this.idleIfDone();
          return;
        }
        case 'event':
          this.pending.get(m.callId)?.opts.onEvent?.(m.value);
          return;
        case 'retry':
          tellRetry(m.notice);
          return;
        case 'request': {
          const p = this.pending.get(m.callId);
          const answer = p?.opts.onRequest ? p.opts.onRequest(m.method, m.args) : Promise.reject(new Error(`nothing answers ${m.method}`));
          answer.then(
            (value) => this.post({ type: 'reply', id: m.id, ok: true, value }),
            (err: unknown) => this.post({ type: 'reply', id: m.id, ok: false, message: err instanceof Error ? err.message : String(err) }),
          );
          return;
        }
      }
    });
    let crash: Error | null = null;
    this.worker.on('error', (err) => {
      crash = err;
    });
    this.worker.on('exit', (code) => {
      for (const t of this.abandoned.values()) clearTimeout(t);
      this.abandoned.clear();
      const why =
        this.stopReason ??
        (crash ? `it crashed: ${crash.message}` : `it ended its thread (exit code ${code}${code === 0 ? ', process.exit()' : ''})`);
      this.exited ??= why;
      if (!this.loaded) readyReject(new ConfigError(`${spec.label} could not be loaded: ${why}`, spec.file));
      for (const [id, p] of this.pending) {
        this.pending.delete(id);
        p.reject(new IsolateExitedError(`${spec.label} stopped before it answered: ${why}; the rollouts it was running failed, the others go on`));
      }
    });
  }

  /** Dead: exited, crashed, timed out or stopped. A pool replaces it. */
  get dead(): boolean {
    return this.exited !== null;
  }

  /** Takes calls: alive, and none of its calls was given up on. */
  get accepting(): boolean {
    return !this.dead && !this.retiring;
  }

  private stop(reason: string): void {
    this.stopReason ??= reason;
    this.exited ??= reason;
    void this.worker.terminate();
  }

  /** Calls `method` in the worker with structured-cloneable `args`. */
  async call(method: string, args: unknown, opts: CallOptions = {}): Promise<unknown> {
    if (opts.signal) {
      // A worker still loading is stopped too when the call is cancelled.
      const signal = opts.signal;
      let release = (): void => undefined;
      const aborted = new Promise<never>((_, reject) => {
        const onAbort = (): void => {
          if (this.pending.size === 0) this.stop('it was cancelled while loading');
          reject(signal.reason);
        };
        if (signal.aborted) return onAbort();
        signal.addEventListener('abort', onAbort, { once: true });
        release = () => signal.removeEventListener('abort', onAbort);
      });
      aborted.catch(() => undefined);
      try {
        await Promise.race([this.ready, aborted]);
      } finally {
        release();
      }
    } else await this.ready;
    if (this.exited) throw new IsolateExitedError(`${this.spec.label} is not running: ${this.exited}`);
    opts.signal?.throwIfAborted();
    const id = this.nextId++;
    this.worker.ref();
    const result = new Promise<unknown>((resolve, reject) => this.pending.set(id, { resolve, reject, opts }));
    let timer: NodeJS.Timeout | undefined;
    const stopWith = (err: unknown): void => {
      const p = this.pending.get(id);
      if (!p) return;
      this.pending.delete(id);
      p.reject(err);
      const why = err instanceof Error ? err.message : String(err);
      // Alone in its worker, the call is stopped with the worker (a busy loop cannot be stopped otherwise).
      if (this.pending.size === 0) return this.stop(why);
      // Other calls share the worker: the module is asked to stop this one, and the worker is stopped only if it does not.
      this.retiring = true;
      this.post({ type: 'abort', id });
      const grace = setTimeout(() => this.stop(`it was stopped because a call in it did not stop when asked (${why})`), ABORT_GRACE_MS);
      this.abandoned.set(id, grace);
    };
    if (opts.timeoutMs !== undefined) {
      timer = setTimeout(() => stopWith(new IsolateTimeoutError(opts.timeoutMessage?.() ?? `${this.spec.label} did not answer within ${opts.timeoutMs} ms`)), opts.timeoutMs);
    }
    const onAbort = (): void => stopWith(opts.signal!.reason);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    this.post({ type: 'call', id, method, args });
    try {
      return await result;
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    }
  }

  private post(m: ToWorker): void {
    if (!this.exited) this.worker.postMessage(m);
  }

  private idleIfDone(): void {
    if (this.pending.size > 0) return;
    if (this.retiring && this.abandoned.size === 0) this.stop('retired');
    else if (!this.retiring) this.worker.unref();
  }

  /** The window `busy` measures starts now, once: at the first answer, or WARM_UP_MS after loading. */
  private warmedUp(): void {
    if (this.busyMark || !this.loaded) return;
    if (this.warmUp) clearTimeout(this.warmUp);
    this.busyMark = this.worker.performance.eventLoopUtilization();
    this.busyAt = performance.now();
  }

  /**
   * The share of its time the worker's thread spent running code (0 to 1)
   * rather than waiting, over the last BUSY_WINDOW_MS or more since it warmed
   * up; 0 while it loads and warms up (it is about to take calls, not full).
   */
  get busy(): number {
    if (!this.busyMark) return 0;
    const now = performance.now();
    if (now - this.busyAt >= BUSY_WINDOW_MS) {
      const mark = this.worker.performance.eventLoopUtilization();
      this.busyShare = this.worker.performance.eventLoopUtilization(mark, this.busyMark).utilization;
      this.busyMark = mark;
      this.busyAt = now;
    }
    return this.busyShare;
  }

  /** Calls in flight. */
  get load(): number {
    return this.pending.size;
  }

  async close(): Promise<void> {
    this.exited ??= 'closed';
    await this.worker.terminate();
  }
}

/** How long a window a worker's `busy` share is measured over. */
const BUSY_WINDOW_MS = 250;
/** The longest a worker's warm-up (its first calls compiling the module's code) is left out of `busy`: its first answer ends it sooner. */
const WARM_UP_MS = 1000;
/** Workers shared by calls: another starts only once every one spends at least this share of its time running code. */
const BUSY_TO_GROW = 0.5;

/**
 * The workers of one module. By default each takes one call at a time, so a
 * module that hangs or exits takes down only the call it was making; with
 * `maxWorkers`, calls share at most that many workers (a graph module's
 * rollouts, which mostly wait on the model), and a second one starts only when
 * every worker is busy running code (BUSY_TO_GROW), not when its calls are
 * waiting on the model: each worker started costs the module's load and its
 * own warm-up. The first worker is started (and the module loaded) by
 * `start()`, so a broken module fails before anything runs; more start as
 * concurrent calls need them, and a dead one is replaced.
 */
export class IsolatePool {
  /** Each worker with the calls it was handed (counted before they reach it, as a call first waits for the load). */
  private readonly workers = new Map<ModuleIsolate, number>();
  private closed = false;

  constructor(
    readonly spec: IsolateSpec,
    private readonly maxWorkers = Number.POSITIVE_INFINITY,
  ) {}

  /** Loads the module in a first worker; its ConfigError (no such export, a compile error) is thrown here. Gives what the module told of itself. */
  async start(): Promise<unknown> {
    const first = this.spawn();
    try {
      await first.ready;
    } catch (err) {
      await this.close();
      throw err;
    }
    return first.info;
  }

  private spawn(): ModuleIsolate {
    const iso = new ModuleIsolate(this.spec);
    this.workers.set(iso, 0);
    return iso;
  }

  /** An idle worker, else a new one while under the limit (shared: once all are busy), else the least loaded. */
  private pick(): ModuleIsolate {
    let best: ModuleIsolate | null = null;
    let live = 0;
    let room = false;
    for (const [iso, calls] of this.workers) {
      if (iso.dead) {
        this.workers.delete(iso);
        continue;
      }
      if (!iso.accepting) continue;
      live++;
      if (calls === 0) return iso;
      if (!best || calls < this.workers.get(best)!) best = iso;
      if (iso.busy < BUSY_TO_GROW) room = true;
    }
    if (!best) return this.spawn();
    const shared = Number.isFinite(this.maxWorkers);
    return live >= this.maxWorkers || (shared && room) ? best : this.spawn();
  }

  /** Workers alive. */
  get size(): number {
    return [...this.workers.keys()].filter((iso) => !iso.dead).length;
  }

  /** Runs `work` on a worker; a worker that died in it is dropped. */
  async with<T>(work: (iso: ModuleIsolate) => Promise<T>): Promise<T> {
    if (this.closed) throw new Error(`${this.spec.label}: its workers were closed`);
    const iso = this.pick();
    this.workers.set(iso, (this.workers.get(iso) ?? 0) + 1);
    try {
      return await work(iso);
    } finally {
      const left = (this.workers.get(iso) ?? 1) - 1;
      if (iso.dead || this.closed) {
        this.workers.delete(iso);
        if (!iso.dead) void iso.close();
      } else this.workers.set(iso, left);
    }
  }

  call(method: string, args: unknown, opts?: CallOptions): Promise<unknown> {
    return this.with((iso) => iso.call(method, args, opts));
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.workers.keys()];
    this.workers.clear();
    await Promise.all(all.map((iso) => iso.close()));
  }
}
