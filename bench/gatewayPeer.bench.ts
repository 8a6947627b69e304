import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { LabConfigSchema } from '../src/core/config/schema';
import { startGateway } from '../src/core/gateway/gateway';
import { gatewayRouting } from '../src/core/gateway/gatewayRouting';
import { ModelRouter } from '../src/core/llm/routing';
import { newTraceId } from '../src/core/trace/ids';
import { LiveRollouts } from '../src/core/trace/liveRollouts';
import { RolloutTracer } from '../src/core/trace/tracer';
import { PeerUnavailable, startAgentLightning } from '../test/peers/peerServers';
import { AGENT_MESSAGES, reply, tsWorker } from './benchThreads';
import { median, result, type Bench } from './harness';

/**
 * gateway.call.peer: what the recording model gateway adds to one model call,
 * beside what Agent Lightning's LLM proxy adds to the same call. Both are
 * recording reverse proxies in front of the same OpenAI-compatible stub (vLLM's
 * quirks, answering at once, in a thread of its own): the gateway writes a span
 * per call into its rollout, the Agent Lightning server (`agl-server` from
 * .venv-agentlightning, its own process) an event per call into its rollout's
 * attempt. The agent is the real openai client in a thread of its own, making
 * CALLS calls one at a time through each, and straight to the stub.
 * Value: ms per call through the gateway − ms per call direct; baseline: ms per
 * call through Agent Lightning's proxy − ms per call direct; the median of
 * REPEATS rounds. Target ratio ≤ 1.0.
 *
 * Agent Lightning needs Python ≥ 3.12: the bench makes its venv on demand
 * (scripts/setupPeerVenvs.sh agentlightning); where that fails, the row says why.
 */

const REPO = resolve(__dirname, '..');
const CALLS = 100;
const REPEATS = 3;
const MODEL = 'small-model';
/** Makes the Agent Lightning venv when it is not there; where that fails, the row says why. */
function ensureAgentLightning(): void {
  if (existsSync(join(REPO, '.venv-agentlightning/bin/agl-server'))) return;
  const setup = spawnSync('bash', [join(REPO, 'scripts/setupPeerVenvs.sh'), 'agentlightning'], { encoding: 'utf8' });
  if (setup.status !== 0) {
    throw new PeerUnavailable(`Agent Lightning could not be installed (scripts/setupPeerVenvs.sh agentlightning: ${(setup.stderr || setup.stdout).trim().split('\n').slice(-3).join(' ') || `exit ${setup.status}`})`);
  }
}

/** `agl-server` with its proxy's model on `upstream`, and one rollout to record into (its default attempt, "0", whose events the events API answers): the base URL its agents use. */
async function startAgentLightningProxy(upstream: string): Promise<{ baseUrl: string; url: string; rolloutId: string; version: string; stop: () => Promise<void> }> {
  ensureAgentLightning();
  const { url, version, stop } = await startAgentLightning(MODEL);
  const post = async (path: string, body: unknown): Promise<unknown> => {
    const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`agl-server ${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  try {
    await post('/api/models', [{ model: MODEL, endpoint: upstream }]);
    const [rollout] = (await post('/api/rollouts', [{ input: { task: 'bench' }, is_train: false }])) as Array<{ rollout_id: string }>;
    const rolloutId = rollout!.rollout_id;
    return { baseUrl: `${url}/proxy/rollout/${rolloutId}/attempt/0/mode/val/openai/v1`, url, rolloutId, version, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

export const bench: Bench = {
  names: ['gateway.call.peer'],
  async run() {
    const server = tsWorker('modelServerWorker.ts', { delayMs: 0, content: 'APOE4 carriers show more amyloid-beta in the cohort data.', server: 'vllm' });
    const agents = tsWorker('agentWorker.ts');
    const stubUrl = await reply<string>(server);
    let agl: Awaited<ReturnType<typeof startAgentLightningProxy>> | null = null;
    const config = LabConfigSchema.parse({ models: { small: { baseUrl: stubUrl, model: MODEL } }, agents: { Geneticist: { model: 'small' } }, reward: { judge: { model: 'small' } } });
    const live = new LiveRollouts();
    const routing = gatewayRouting(config, new ModelRouter(config, { env: {} }));
    const gateway = await startGateway({ live, routing: () => routing });
    try {
      agl = await startAgentLightningProxy(stubUrl);
      const calls = async (baseUrl: string): Promise<number> => {
        const done = reply<number>(agents);
        agents.postMessage({ baseUrls: [baseUrl], calls: CALLS, concurrency: 1, messages: AGENT_MESSAGES });
        return (await done) / CALLS;
      };
      const viaGateway = async (): Promise<number> => {
        const tracer = new RolloutTracer(newTraceId(), null);
        const remove = live.add({ id: tracer.traceId, runId: 'bench', taskId: 't', sample: 0, tracer, root: tracer.start('rollout', 'rollout', null), seed: 1 });
        try {
          const ms = await calls(gateway.baseUrl(tracer.traceId, 'Geneticist'));
          const recorded = tracer.spans().filter((s) => s.kind === 'llm').length;
          if (recorded !== CALLS) throw new Error(`the gateway recorded ${recorded} of ${CALLS} calls`);
          return ms;
        } finally {
          remove();
        }
      };
      let aglEvents = 0;
      const viaAgl = async (): Promise<number> => {
        const ms = await calls(agl!.baseUrl);
        const events = (await (await fetch(`${agl!.url}/api/rollouts/${agl!.rolloutId}/events`)).json()) as unknown[];
        if (events.length !== aglEvents + CALLS) throw new Error(`Agent Lightning recorded ${events.length - aglEvents} of ${CALLS} calls`);
        aglEvents = events.length;
        return ms;
      };
      // Warm-up: connections, JIT, the peer's first requests.
      await calls(stubUrl);
      await viaGateway();
      await viaAgl();
      const ours: number[] = [];
      const theirs: number[] = [];
      for (let r = 0; r < REPEATS; r++) {
        const direct = await calls(stubUrl);
        ours.push((await viaGateway()) - direct);
        theirs.push((await viaAgl()) - direct);
      }
      return [
        result('gateway.call.peer', 'ms/call', median(ours), median(theirs), `own cost per call (through − direct, ${CALLS} calls one at a time to a stub that answers at once); baseline: Agent Lightning ${agl.version}'s LLM proxy (agl-server) in front of the same stub; target ratio ≤ 1.0`),
      ];
    } finally {
      await agl?.stop();
      await gateway.close();
      await agents.terminate();
      server.postMessage('close');
      await new Promise((r) => server.once('exit', r));
    }
  },
};
