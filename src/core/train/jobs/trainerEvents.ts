/**
 * The events python-trainer prints among its log lines
 * (`@rollout-trainer {"event": ...}`, python-trainer/README.md): the log
 * streams as it is, and these lines feed the curves and the job's state.
 */

export const EVENT_PREFIX = '@rollout-trainer ';

/** Metrics named first on a line, in the view and in the curves, in this order; the rest follow as the trainer sent them. */
export const LEADING_METRICS = ['loss', 'reward_mean', 'kl', 'clip_frac', 'lr', 'grad_norm'] as const;

export interface MetricsEvent {
  event: 'metrics';
  step: number;
  /** Every numeric field of the event but step (loss, lr, reward_mean, kl, ...). */
  values: Record<string, number>;
}

export type TrainerEvent =
  | { event: 'start'; backend?: string; device?: string; examples?: number; steps?: number; raw: Record<string, unknown> }
  | MetricsEvent
  | { event: 'checkpoint'; step: number; path: string }
  | { event: 'serving'; url: string; model: string; version: string }
  | { event: 'version'; version: string; adapter: string }
  | { event: 'done'; result: Record<string, unknown> }
  | { event: 'error'; message: string }
  | { event: 'other'; raw: Record<string, unknown> };

/** The event on a log line, or null for an ordinary line (or a malformed event line, which stays log text). */
export function parseTrainerEvent(line: string): TrainerEvent | null {
  if (!line.startsWith(EVENT_PREFIX)) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(line.slice(EVENT_PREFIX.length));
  } catch {
    return null;
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const o = raw as Record<string, unknown>;
  const str = (k: string): string | undefined => (typeof o[k] === 'string' ? (o[k] as string) : undefined);
  const num = (k: string): number | undefined => (typeof o[k] === 'number' && Number.isFinite(o[k]) ? (o[k] as number) : undefined);
  switch (o.event) {
    case 'start':
      return { event: 'start', backend: str('backend'), device: str('device'), examples: num('examples'), steps: num('steps'), raw: o };
    case 'metrics': {
      const step = num('step');
      if (step === undefined) return null;
      const values: Record<string, number> = {};
      for (const [k, v] of Object.entries(o)) if (k !== 'step' && typeof v === 'number' && Number.isFinite(v)) values[k] = v;
      return { event: 'metrics', step, values };
    }
    case 'checkpoint':
      return { event: 'checkpoint', step: num('step') ?? 0, path: str('path') ?? '' };
    case 'serving': {
      const url = str('url');
      if (!url) return null;
      return { event: 'serving', url, model: str('model') ?? '', version: str('version') ?? '' };
    }
    case 'version':
      return { event: 'version', version: str('version') ?? '', adapter: str('adapter') ?? '' };
    case 'done':
      return { event: 'done', result: (o.result && typeof o.result === 'object' ? o.result : {}) as Record<string, unknown> };
    case 'error':
      return { event: 'error', message: str('message') ?? 'the trainer reported an error' };
    default:
      return { event: 'other', raw: o };
  }
}

/** A metrics series from the events of a job, for curves: one point per metrics event. */
export interface MetricPoint {
  step: number;
  values: Record<string, number>;
}

export function metricPoints(events: readonly TrainerEvent[]): MetricPoint[] {
  return events.filter((e): e is MetricsEvent => e.event === 'metrics').map((e) => ({ step: e.step, values: e.values }));
}
