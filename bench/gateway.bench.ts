import OpenAI from 'openai';
import { LabConfigSchema } from '../src/core/config/schema';
import { startGateway } from '../src/core/gateway/gateway';
import { gatewayRouting } from '../src/core/gateway/gatewayRouting';
import { ModelRouter } from '../src/core/llm/routing';
import { newTraceId } from '../src/core/trace/ids';
import { LiveRollouts } from '../src/core/trace/liveRollouts';
import { RolloutTracer } from '../src/core/trace/tracer';
import { startOpenAIStub } from '../test/fakes/openaiStub';
import { median, result, type Bench } from './harness';

/**
 * gateway.overhead: ROLLOUTS rollouts of CALLS model calls each, CONCURRENCY
 * rollouts at a time, made with the real openai client through the recording
 * gateway (routing, the routed client, a span per call) against the same calls
 * sent straight to the model server with the same client. The server answers
 * after LATENCY_MS, as a real one takes time to generate. Value: wall time
 * through the gateway / wall time direct (target ≤ 1.05).
 */
const ROLLOUTS = 24;
const CALLS = 3;
const CONCURRENCY = 4;
const LATENCY_MS = 50;
const REPEATS = 3;

const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
  { role: 'system', content: 'You are the Geneticist. Answer briefly.' },
  { role: 'user', content: 'Does APOE4 raise amyloid-beta in plasma? Cite the cohort.' },
];

async function pool(n: number, concurrency: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await work(next++);
    }),
  );
}

export const bench: Bench = {
  names: ['gateway.overhead'],
  async run() {
    const stub = await startOpenAIStub({ replies: () => ({ content: 'APOE4 carriers show more amyloid-beta in the cohort data.' }), delayMs: LATENCY_MS });
    const config = LabConfigSchema.parse({
      models: { small: { baseUrl: stub.url, model: 'small-model' } },
      agents: { Geneticist: { model: 'small' } },
      reward: { judge: { model: 'small' } },
    });
    const live = new LiveRollouts();
    const gateway = await startGateway({ live, routing: gatewayRouting(config, new ModelRouter(config, { env: {} })) });
    const direct = new OpenAI({ baseURL: stub.url, apiKey: 'unused', maxRetries: 0 });
    try {
      const rollouts = async (viaGateway: boolean): Promise<number> => {
        const started = performance.now();
        await pool(ROLLOUTS, CONCURRENCY, async () => {
          const tracer = new RolloutTracer(newTraceId(), null);
          const root = tracer.start('rollout', 'rollout', null);
          const remove = live.add({ id: tracer.traceId, runId: 'bench', taskId: 't', sample: 0, tracer, root, seed: 1 });
          const client = viaGateway ? new OpenAI({ baseURL: gateway.baseUrl(tracer.traceId, 'Geneticist'), apiKey: 'unused', maxRetries: 0 }) : direct;
          for (let i = 0; i < CALLS; i++) await client.chat.completions.create({ model: 'small-model', messages, max_tokens: 64 });
          if (viaGateway && tracer.spans().length !== CALLS) throw new Error(`expected ${CALLS} llm spans, got ${tracer.spans().length}`);
          remove();
        });
        return performance.now() - started;
      };
      await rollouts(false);
      await rollouts(true);
      const viaGateway: number[] = [];
      const straight: number[] = [];
      for (let r = 0; r < REPEATS; r++) {
        straight.push(await rollouts(false));
        viaGateway.push(await rollouts(true));
      }
      return [
        result(
          'gateway.overhead',
          'ms',
          median(viaGateway),
          median(straight),
          `${ROLLOUTS} rollouts × ${CALLS} calls, ${CONCURRENCY} at a time, ${LATENCY_MS} ms server latency; baseline: the same calls straight to the server (target ratio ≤ 1.05)`,
        ),
      ];
    } finally {
      await gateway.close();
      await stub.close();
    }
  },
};
