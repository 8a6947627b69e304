import { errorMessage } from '../errors';
import type { RolloutRecord } from '../store/types';
import type { SpanRecord } from '../trace/span';
import { exportRollout, parseOtlpHeaders, type OtlpProtocol } from './otlpExporter';

/** lab.json's `otlp.export`. */
export interface OtlpExportSettings {
  endpoint: string;
  headersEnv?: string;
  protocol?: OtlpProtocol;
}

export interface LiveExportFailure {
  message: string;
  rollouts: number;
  firstRolloutId: string;
}

export interface LiveOtlpExport {
  /** Queues the rollout's export with its spans; returns at once. */
  rolloutEnded(rollout: RolloutRecord, spans: readonly SpanRecord[]): void;
  /** Waits for the queued exports; what failed (a one-line message, how many, the first), or null. */
  drain(): Promise<LiveExportFailure | null>;
}

const GIVE_UP_AFTER = 3;

/**
 * Exports each rollout as it ends, one after another, off the run's path: a
 * collector that is down or refuses costs a warning at the end, never a
 * rollout or the run.
 */
export function liveOtlpExport(settings: OtlpExportSettings, env: NodeJS.ProcessEnv = process.env): LiveOtlpExport {
  let chain: Promise<void> = Promise.resolve();
  let failed = 0;
  let exported = 0;
  let first: string | null = null;
  let firstRolloutId = '';
  // A collector that failed this many exports in a row is not tried again this run: a down collector must not hold the run's end.
  let inARow = 0;
  let headers: Record<string, string> = {};
  // Unreadable headers fail every export, with the reason once.
  let headersProblem: string | null = null;
  try {
    headers = { ...parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS), ...(settings.headersEnv ? parseOtlpHeaders(env[settings.headersEnv]) : {}) };
  } catch (err) {
    headersProblem = `${errorMessage(err)} (in ${settings.headersEnv ? `${settings.headersEnv} or ` : ''}OTEL_EXPORTER_OTLP_HEADERS)`;
  }
  const target = { endpoint: settings.endpoint, headers, protocol: settings.protocol ?? 'http/protobuf' };
  return {
    rolloutEnded(rollout, spans) {
      chain = chain.then(async () => {
        if (headersProblem || inARow >= GIVE_UP_AFTER) {
          if (!failed++) firstRolloutId = rollout.id;
          first ??= headersProblem;
          return;
        }
        try {
          if (!spans.length) return;
          await exportRollout(rollout, spans, { ...target, maxAttempts: 3 });
          exported++;
          inARow = 0;
        } catch (err) {
          inARow++;
          if (!failed++) firstRolloutId = rollout.id;
          first ??= errorMessage(err);
        }
      });
    },
    async drain() {
      await chain;
      if (!failed) return null;
      return {
        message: `${first} (${exported} exported); the rollouts are stored — send them later with \`rollout-lab traces export --otlp URL\``,
        rollouts: failed,
        firstRolloutId,
      };
    },
  };
}
