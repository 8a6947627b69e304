import type { OtlpReceiver } from '../core/otlp/otlpReceiver';
import type { TraceStore } from '../core/store/traceStore';
import { errorMessage } from '../core/errors';
import { core } from './coreLoader';
import { Disposable } from './disposable';

export interface OtlpReceiverServiceOptions {
  /** The workspace folder whose store takes the traces (the active lab), or undefined when there is none. */
  folder(): string | undefined;
  /** The port setting (0: off). */
  port(): number;
  log(line: string): void;
  /** Shows an error to the user (a port in use, say). */
  showError(message: string): void;
}

/**
 * The OTLP receiver started with the lab (setting rolloutLab.otlpReceiverPort):
 * it writes received traces into the active lab's store through a store of
 * its own, so the Rollouts view picks them up as it does the CLI's runs.
 * Restarted when the port or the lab changes; stopped with the extension.
 */
export class OtlpReceiverService extends Disposable {
  private running: { folder: string; port: number; receiver: OtlpReceiver; store: TraceStore } | null = null;
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly opts: OtlpReceiverServiceOptions) {
    super();
    this.register({ dispose: () => void this.apply(true) });
  }

  /** Where the receiver listens now, or null when it is off. */
  get url(): string | null {
    return this.running?.receiver.url ?? null;
  }

  /** Starts, restarts or stops the receiver to match the setting and the active lab; calls run one after another. */
  apply(stopping = false): Promise<void> {
    this.queue = this.queue.then(() => this.reconcile(stopping)).catch((err: unknown) => this.opts.log(`OTLP receiver: ${errorMessage(err)}`));
    return this.queue;
  }

  private async reconcile(stopping: boolean): Promise<void> {
    const port = stopping ? 0 : this.opts.port();
    const folder = stopping ? undefined : this.opts.folder();
    const want = port > 0 && folder ? { folder, port } : null;
    if (this.running && want && this.running.folder === want.folder && this.running.port === want.port) return;
    if (this.running) {
      const { receiver, store, port: was } = this.running;
      this.running = null;
      await receiver.close();
      await store.close();
      this.opts.log(`OTLP receiver on port ${was} stopped`);
    }
    if (!want) return;
    const { TraceStore } = await core.traceStore();
    const { startOtlpReceiver } = await core.otlpReceiver();
    const store = await TraceStore.open(want.folder);
    try {
      const receiver = await startOtlpReceiver({ port: want.port, store, log: (line) => this.opts.log(`OTLP receiver: ${line}`) });
      this.running = { ...want, receiver, store };
      this.opts.log(`OTLP receiver listening on ${receiver.url}/v1/traces for ${want.folder}`);
    } catch (err) {
      await store.close();
      this.opts.showError(`Rollout Lab could not start the OTLP receiver on port ${want.port}: ${errorMessage(err)} — change rolloutLab.otlpReceiverPort, or stop what uses the port`);
    }
  }
}
