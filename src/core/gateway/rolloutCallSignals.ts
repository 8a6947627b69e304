import { onAbort } from '../onAbort';

interface Followed {
  calls: Set<AbortController>;
  unfollow: () => void;
}

/**
 * One abort listener per running rollout, however many of its calls are in
 * flight: each call gets its own controller (its agent may hang up alone), and
 * the rollout's cancellation reaches all of them through that one listener. A
 * listener per call would pile up on the rollout's long-lived signal (Node
 * warns past 10) when an agent makes many calls at once.
 */
export class RolloutCallSignals {
  private readonly followed = new Map<AbortSignal, Followed>();

  /** A controller for one call, aborted when `rolloutSignal` is; `release` when the call is over. */
  begin(rolloutSignal: AbortSignal | undefined): { controller: AbortController; release: () => void } {
    const controller = new AbortController();
    if (!rolloutSignal) return { controller, release: () => undefined };
    if (rolloutSignal.aborted) {
      controller.abort();
      return { controller, release: () => undefined };
    }
    let f = this.followed.get(rolloutSignal);
    if (!f) {
      const calls = new Set<AbortController>();
      f = { calls, unfollow: onAbort(rolloutSignal, () => calls.forEach((c) => c.abort())) };
      this.followed.set(rolloutSignal, f);
    }
    const entry = f;
    entry.calls.add(controller);
    return {
      controller,
      release: () => {
        entry.calls.delete(controller);
        if (entry.calls.size === 0 && this.followed.get(rolloutSignal) === entry) {
          entry.unfollow();
          this.followed.delete(rolloutSignal);
        }
      },
    };
  }
}
