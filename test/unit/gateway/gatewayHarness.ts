import OpenAI from 'openai';
import { LabConfigSchema, type LabConfig, type LabConfigInput } from '../../../src/core/config/schema';
import { startGateway, type Gateway } from '../../../src/core/gateway/gateway';
import { gatewayRouting } from '../../../src/core/gateway/gatewayRouting';
import { ModelRouter } from '../../../src/core/llm/routing';
import { newTraceId } from '../../../src/core/trace/ids';
import { LiveRollouts, type LiveRollout } from '../../../src/core/trace/liveRollouts';
import type { AgentVersions } from '../../../src/core/trace/llmSpanAttributes';
import type { SpanRecord } from '../../../src/core/trace/span';
import { RolloutTracer } from '../../../src/core/trace/tracer';
import { startOpenAIStub, type OpenAIStub, type OpenAIStubOptions } from '../../fakes/openaiStub';

export interface GatewaySetup {
  stub: OpenAIStub;
  config: LabConfig;
  router: ModelRouter;
  versions: AgentVersions;
  gateway: Gateway;
  live: LiveRollouts;
  rollout: LiveRollout;
  cancel: AbortController;
  /** The real openai client at the rollout's base URL (or an agent's, or with extra headers). */
  client(opts?: { agent?: string; headers?: Record<string, string>; rolloutId?: string }): OpenAI;
  llmSpans(): SpanRecord[];
  close(): Promise<void>;
}

/** A stub model server, a lab.json routing to it (two agents, two models), one running rollout and the gateway in front. */
export async function gatewaySetup(
  stubOpts: OpenAIStubOptions,
  model: Partial<LabConfigInput['models'][string]> = {},
): Promise<GatewaySetup> {
  const stub = await startOpenAIStub(stubOpts);
  const config = LabConfigSchema.parse({
    models: {
      small: { baseUrl: stub.url, model: 'small-model', maxRetries: 2, ...model },
      big: { baseUrl: stub.url, model: 'big-model', version: 'v2' },
    },
    agents: { Geneticist: { model: 'small', temperature: 0.3 }, Supervisor: { model: 'small', maxTokens: 256 } },
    reward: { judge: { model: 'small' } },
  });
  const router = new ModelRouter(config, { env: {} });
  const versions: AgentVersions = {
    promptVersion: (agent) => `pv-${agent}`,
    model: (agent) => (config.agents[agent] ? { logical: config.agents[agent].model, version: null } : null),
  };
  const live = new LiveRollouts();
  const tracer = new RolloutTracer(newTraceId(), null);
  const root = tracer.start('rollout', 'rollout', null);
  const cancel = new AbortController();
  const rollout: LiveRollout = { id: tracer.traceId, runId: 'run-1', taskId: 'task-1', sample: 0, tracer, root, seed: 4242, signal: cancel.signal };
  live.add(rollout);
  const routing = gatewayRouting(config, router, versions);
  const gateway = await startGateway({ live, routing: () => routing, backoff: { baseDelayMs: 1, maxDelayMs: 2 } });
  return {
    stub,
    config,
    router,
    versions,
    gateway,
    live,
    rollout,
    cancel,
    client: (opts = {}) =>
      new OpenAI({
        baseURL: gateway.baseUrl(opts.rolloutId ?? rollout.id, opts.agent),
        apiKey: 'unused',
        maxRetries: 0,
        ...(opts.headers ? { defaultHeaders: opts.headers } : {}),
      }),
    llmSpans: () => tracer.spans().filter((s) => s.kind === 'llm'),
    close: async () => {
      await gateway.close();
      await stub.close();
    },
  };
}

/** Waits (bounded) until `cond` holds: for what happens on the server after the client has its answer. */
export async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`gave up waiting for ${what}`);
}
