import { LabConfigSchema } from '../src/core/config/schema';
import { startGateway } from '../src/core/gateway/gateway';
import { gatewayRouting } from '../src/core/gateway/gatewayRouting';
import { ModelRouter } from '../src/core/llm/routing';
import { newTraceId } from '../src/core/trace/ids';
import { LiveRollouts } from '../src/core/trace/liveRollouts';
import { RolloutTracer } from '../src/core/trace/tracer';
import { AGENT_MESSAGES, reply, tsWorker } from './benchThreads';
import { median, result, type Bench } from './harness';

/**
 * gateway.overhead: ROLLOUTS rollouts of CALLS model calls each, CONCURRENCY
 * rollouts at a time, made with the real openai client through the recording
 * gateway (routing, the routed client, a span per call) against the same calls
 * sent straight to the model server with the same client. As in use, the
 * agents, the lab (the gateway, here) and the model server are apart: the
 * agents and the server each run in a worker thread of their own. The server
 * answers after LATENCY_MS, about what a small local model takes for a short
 * answer (a hosted one takes longer). Value: wall time through the gateway /
 * wall time direct (target ≤ 1.05).
 *
 * gateway.call: what the gateway adds to one call, whatever the model's
 * latency: ms per call through the gateway against ms per call direct, one at
 * a time, with a server that answers at once.
 */
const ROLLOUTS = 24;
const CALLS = 3;
const CONCURRENCY = 4;
const LATENCY_MS = 200;
const SINGLE_CALLS = 60;
const REPEATS = 3;


export const bench: Bench = {
  names: ['gateway.overhead', 'gateway.call'],
  async run() {
    const content = 'APOE4 carriers show more amyloid-beta in the cohort data.';
    const server = tsWorker('modelServerWorker.ts', { delayMs: LATENCY_MS, content });
    const instant = tsWorker('modelServerWorker.ts', { delayMs: 0, content });
    const agents = tsWorker('agentWorker.ts');
    const [stubUrl, instantUrl] = await Promise.all([reply<string>(server), reply<string>(instant)]);
    const config = LabConfigSchema.parse({
      models: { small: { baseUrl: stubUrl, model: 'small-model' }, instant: { baseUrl: instantUrl, model: 'small-model' } },
      agents: { Geneticist: { model: 'small' }, Quick: { model: 'instant' } },
      reward: { judge: { model: 'small' } },
    });
    const live = new LiveRollouts();
    const routing = gatewayRouting(config, new ModelRouter(config, { env: {} }));
    const gateway = await startGateway({ live, routing: () => routing });
    try {
      const batch = async (viaGateway: boolean, shape: { rollouts: number; calls: number; concurrency: number; agent: string; direct: string }): Promise<number> => {
        const tracers = Array.from({ length: shape.rollouts }, () => new RolloutTracer(newTraceId(), null));
        const removers = tracers.map((tracer) => live.add({ id: tracer.traceId, runId: 'bench', taskId: 't', sample: 0, tracer, root: tracer.start('rollout', 'rollout', null), seed: 1 }));
        const baseUrls = tracers.map((t) => (viaGateway ? gateway.baseUrl(t.traceId, shape.agent) : shape.direct));
        const done = reply<number>(agents);
        agents.postMessage({ baseUrls, calls: shape.calls, concurrency: shape.concurrency, messages: AGENT_MESSAGES });
        const ms = await done;
        for (const remove of removers) remove();
        const recorded = tracers.reduce((n, t) => n + t.spans().length, 0);
        if (viaGateway && recorded !== shape.rollouts * shape.calls) throw new Error(`expected ${shape.rollouts * shape.calls} llm spans, got ${recorded}`);
        return ms;
      };
      const rollouts = (viaGateway: boolean): Promise<number> => batch(viaGateway, { rollouts: ROLLOUTS, calls: CALLS, concurrency: CONCURRENCY, agent: 'Geneticist', direct: stubUrl });
      const single = async (viaGateway: boolean): Promise<number> =>
        (await batch(viaGateway, { rollouts: 1, calls: SINGLE_CALLS, concurrency: 1, agent: 'Quick', direct: instantUrl })) / SINGLE_CALLS;
      await rollouts(false);
      await rollouts(true);
      const viaGateway: number[] = [];
      const straight: number[] = [];
      const callVia: number[] = [];
      const callDirect: number[] = [];
      await single(false);
      await single(true);
      for (let r = 0; r < REPEATS; r++) {
        straight.push(await rollouts(false));
        viaGateway.push(await rollouts(true));
        callDirect.push(await single(false));
        callVia.push(await single(true));
      }
      return [
        result(
          'gateway.overhead',
          'ms',
          median(viaGateway),
          median(straight),
          `${ROLLOUTS} rollouts × ${CALLS} calls, ${CONCURRENCY} at a time, ${LATENCY_MS} ms server latency, agents and server in threads of their own; baseline: the same calls straight to the server (target ratio ≤ 1.05)`,
        ),
        result('gateway.call', 'ms/call', median(callVia), median(callDirect), `${SINGLE_CALLS} calls one at a time to a server that answers at once; baseline: straight to the server (the gateway's own cost per call)`),
      ];
    } finally {
      await gateway.close();
      await agents.terminate();
      for (const w of [server, instant]) {
        w.postMessage('close');
        await new Promise((r) => w.once('exit', r));
      }
    }
  },
};
