import type { OpenSpan, RolloutTracer } from './tracer';

/**
 * A rollout that is running now and takes spans from outside the process: the
 * recording gateway's model calls and the spans a command agent exports over
 * OTLP both land in its tracer, under its root span.
 */
export interface LiveRollout {
  /** The rollout id (its trace id). */
  readonly id: string;
  readonly runId: string;
  readonly taskId: string;
  readonly sample: number;
  readonly tracer: RolloutTracer;
  readonly root: OpenSpan;
  /** Seed for the rollout's model calls (sent with each forwarded request). */
  readonly seed: number;
  /** The lab's agents: a span that names no agent but a service of one of these names is that agent's. */
  readonly agents?: readonly string[];
  /** Aborted when the rollout is cancelled: forwarded calls stop with it. */
  readonly signal?: AbortSignal;
}

/** The rollouts that take outside spans now, by id. The lab adds one for each running rollout of a command graph. */
export class LiveRollouts {
  private readonly byId = new Map<string, LiveRollout>();

  /** Adds the rollout; the function it returns removes it again. */
  add(rollout: LiveRollout): () => void {
    this.byId.set(rollout.id, rollout);
    return () => {
      if (this.byId.get(rollout.id) === rollout) this.byId.delete(rollout.id);
    };
  }

  get(id: string): LiveRollout | undefined {
    return this.byId.get(id);
  }

  get size(): number {
    return this.byId.size;
  }
}
