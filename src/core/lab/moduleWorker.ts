import { parentPort, workerData } from 'node:worker_threads';
import { LabError, errorMessage } from '../errors';
import type { FromWorker, IsolateSpec, ToWorker } from '../graph/moduleIsolate';
import { loadSearchProvider } from '../graph/tools/searchProviderModule';
import { listenForRetries } from '../llm/retryNotices';
import { loadCustomReward, type CustomJudgeResult, type CustomRewardInput } from '../reward/customReward';
import { cannedAnswersFromModule } from '../sim/cannedAnswers';
import type { SimChatRequest } from '../sim/simRequest';
import type { SpanRecord } from '../trace/span';
import { loadGraphInWorker, type GraphRolloutCall, type GraphWorkerData } from './graphInWorker';

/*
 * The entry of a user module's worker thread (see graph/moduleIsolate.ts):
 * loads the module the way the lab's thread used to, by the same loaders, and
 * answers calls from the lab's thread one by one. Time limits, restarts and
 * cancellation are the lab thread's business: this side only runs the module.
 */

const port = parentPort!;
const spec = workerData as IsolateSpec;

type Handler = (
  args: unknown,
  ctx: { callId: number; signal: AbortSignal; request(method: string, args: unknown): Promise<unknown>; emit(value: unknown): void },
) => Promise<unknown>;

/** The calls in flight, each with what stops it when the lab gives up on it. */
const running = new Map<number, AbortController>();

const requests = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
let nextRequest = 1;

function post(m: FromWorker): void {
  port.postMessage(m);
}

// Retries of the module's model calls are told where the batch listens for them.
listenForRetries((notice) => post({ type: 'retry', notice }));

/** The longest timer Node keeps (about 24.8 days): the lab's thread keeps the real limit. */
const NO_LIMIT = 2_147_483_647;

async function load(): Promise<{ handlers: Record<string, Handler>; info?: unknown }> {
  switch (spec.role) {
    case 'reward': {
      const reward = await loadCustomReward(spec.file, { timeoutMs: NO_LIMIT });
      return {
        handlers: {
          evaluate: (args, ctx) => {
            const input = args as Omit<CustomRewardInput, 'judge'>;
            return reward.evaluate({ ...input, judge: () => ctx.request('judge', null) as Promise<CustomJudgeResult> });
          },
        },
      };
    }
    case 'answers': {
      const answers = await cannedAnswersFromModule(spec.file);
      return {
        handlers: {
          answer: (args) => {
            const { agent, request } = args as { agent: string | null; request: SimChatRequest };
            return answers.answer(agent, request);
          },
        },
      };
    }
    case 'search': {
      const provider = await loadSearchProvider(spec.file);
      return {
        info: { name: provider.name },
        handlers: { search: (args) => provider.search((args as { query: string }).query, (args as { opts: Parameters<typeof provider.search>[1] }).opts) },
      };
    }
    case 'graph': {
      const rollout = await loadGraphInWorker(spec.file, spec.data as GraphWorkerData);
      return { handlers: { rollout: (args, ctx) => rollout(args as GraphRolloutCall, (span: SpanRecord) => ctx.emit(span), ctx.signal) } };
    }
    default:
      throw new Error(`no module role "${spec.role}"`);
  }
}

void load().then(
  ({ handlers, info }) => {
    port.on('message', (m: ToWorker) => {
      if (m.type === 'reply') {
        const r = requests.get(m.id);
        requests.delete(m.id);
        if (m.ok) r?.resolve(m.value);
        else r?.reject(new Error(m.message));
        return;
      }
      if (m.type === 'abort') {
        running.get(m.id)?.abort(new Error('stopped by the lab'));
        return;
      }
      const callId = m.id;
      const controller = new AbortController();
      running.set(callId, controller);
      const ctx = {
        callId,
        signal: controller.signal,
        request: (method: string, args: unknown): Promise<unknown> =>
          new Promise((resolve, reject) => {
            const id = nextRequest++;
            requests.set(id, { resolve, reject });
            post({ type: 'request', id, callId, method, args });
          }),
        emit: (value: unknown): void => post({ type: 'event', callId, value }),
      };
      const handler = handlers[m.method];
      Promise.resolve()
        .then(() => {
          if (!handler) throw new Error(`${spec.label} has no call "${m.method}"`);
          return handler(m.args, ctx);
        })
        .then(
          (value) => {
            running.delete(callId);
            post({ type: 'result', id: callId, ok: true, value });
          },
          (err: unknown) => {
            running.delete(callId);
            const status = (err as { status?: unknown } | null)?.status;
            post({
              type: 'result',
              id: callId,
              ok: false,
              name: err instanceof Error ? err.name : 'Error',
              message: errorMessage(err),
              ...(typeof status === 'number' ? { status } : {}),
            });
          },
        );
    });
    post({ type: 'ready', info });
  },
  (err: unknown) => {
    post({ type: 'loadError', name: err instanceof LabError ? err.name : 'Error', message: errorMessage(err), file: (err as { file?: string }).file });
  },
);
