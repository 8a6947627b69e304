/**
 * Runs an async task at most once per `delayMs` after the last trigger, never
 * two at a time: a trigger that arrives while the task runs schedules one
 * more run after it. File watchers fire in bursts (a journal append is one
 * event per write); the store should catch up once per burst.
 */
export class CoalescingTrigger {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private disposed = false;

  constructor(
    private readonly task: () => Promise<void>,
    private readonly delayMs: number,
  ) {}

  trigger(): void {
    if (this.disposed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.run(), this.delayMs);
  }

  /** Runs now (after any run in flight) and resolves when that run is done. */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.running) await this.running;
    if (this.disposed) return;
    await this.run();
  }

  private async run(): Promise<void> {
    this.timer = undefined;
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async (): Promise<void> => {
      try {
        await this.task();
      } catch {
        // The task reports its own errors; a failed catch-up is retried on the next trigger.
      }
    })();
    try {
      await this.running;
    } finally {
      this.running = undefined;
    }
    if (this.again && !this.disposed) {
      this.again = false;
      this.trigger();
    }
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
