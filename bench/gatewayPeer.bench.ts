import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import type OpenAI from 'openai';
import { LabConfigSchema } from '../src/core/config/schema';
import { startGateway } from '../src/core/gateway/gateway';
import { gatewayRouting } from '../src/core/gateway/gatewayRouting';
import { ModelRouter } from '../src/core/llm/routing';
import { newTraceId } from '../src/core/trace/ids';
import { LiveRollouts } from '../src/core/trace/liveRollouts';
import { RolloutTracer } from '../src/core/trace/tracer';
import { freePort } from '../test/peers/peerServers';
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
const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
  { role: 'system', content: 'You are the Geneticist. Answer briefly.' },
  { role: 'user', content: 'Does APOE4 raise amyloid-beta in plasma? Cite the cohort.' },
];

class PeerMissing extends Error {
  readonly missingPrerequisite = true;
}

function tsWorker(file: string, workerData?: unknown): Worker {
  return new Worker(`require('tsx/cjs'); require(${JSON.stringify(join(__dirname, 'fixtures', file))});`, { eval: true, workerData });
}

function reply<T>(w: Worker): Promise<T> {
  return new Promise((done, fail) => {
    w.once('message', (m: T | string) => {
      w.off('error', fail);
      if (typeof m === 'string' && m.startsWith('agent failed')) fail(new Error(m));
      else done(m as T);
    });
    w.once('error', fail);
  });
}

/** The venv's agl-server and the installed version, making the venv first if it is not there. */
function agentLightning(): { bin: string; version: string } {
  const bin = join(REPO, '.venv-agentlightning/bin/agl-server');
  if (!existsSync(bin)) {
    const setup = spawnSync('bash', [join(REPO, 'scripts/setupPeerVenvs.sh'), 'agentlightning'], { encoding: 'utf8' });
    if (setup.status !== 0 || !existsSync(bin)) {
      throw new PeerMissing(`Agent Lightning could not be installed (scripts/setupPeerVenvs.sh agentlightning: ${(setup.stderr || setup.stdout).trim().split('\n').slice(-3).join(' ') || `exit ${setup.status}`})`);
    }
  }
  const v = spawnSync(join(REPO, '.venv-agentlightning/bin/python'), ['-c', 'from importlib.metadata import version; print(version("agentlightning"))'], { encoding: 'utf8' });
  return { bin, version: v.status === 0 ? v.stdout.trim() : 'unknown' };
}

/** `agl-server` on a free port with its proxy's model on `upstream`, and one rollout to record into (its default attempt, "0", whose events the events API answers): the base URL its agents use. */
async function startAgentLightning(upstream: string): Promise<{ baseUrl: string; url: string; rolloutId: string; version: string; stop: () => Promise<void> }> {
  const { bin, version } = agentLightning();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'rl-agl-'));
  // Hydra's overrides; its run folder in the temp folder.
  const child = spawn(bin, [`host=127.0.0.1`, `port=${port}`, `default_proxy.model_name=${MODEL}`, `hydra.run.dir=${dir}`], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
  child.stderr.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
  let exited = false;
  const gone = new Promise<void>((r) => child.once('exit', () => ((exited = true), r())));
  const stop = async (): Promise<void> => {
    if (!exited) child.kill('SIGTERM');
    await gone;
    rmSync(dir, { recursive: true, force: true });
  };
  const url = `http://127.0.0.1:${port}`;
  const started = Date.now();
  for (;;) {
    if (exited) {
      await stop();
      throw new PeerMissing(`agentlightning ${version}'s agl-server exited before it answered: ${log.trim().split('\n').slice(-5).join(' ')}`);
    }
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() - started > 60_000) {
      await stop();
      throw new PeerMissing(`agentlightning ${version}'s agl-server did not answer on ${url}/healthz within 60 s: ${log.trim().split('\n').slice(-5).join(' ')}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const post = async (path: string, body: unknown): Promise<unknown> => {
    const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`agl-server ${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  await post('/api/models', [{ model: MODEL, endpoint: upstream }]);
  const [rollout] = (await post('/api/rollouts', [{ input: { task: 'bench' }, is_train: false }])) as Array<{ rollout_id: string }>;
  const rolloutId = rollout!.rollout_id;
  return { baseUrl: `${url}/proxy/rollout/${rolloutId}/attempt/0/mode/val/openai/v1`, url, rolloutId, version, stop };
}

export const bench: Bench = {
  names: ['gateway.call.peer'],
  async run() {
    const server = tsWorker('modelServerWorker.ts', { delayMs: 0, content: 'APOE4 carriers show more amyloid-beta in the cohort data.', server: 'vllm' });
    const agents = tsWorker('agentWorker.ts');
    const stubUrl = await reply<string>(server);
    let agl: Awaited<ReturnType<typeof startAgentLightning>> | null = null;
    const config = LabConfigSchema.parse({ models: { small: { baseUrl: stubUrl, model: MODEL } }, agents: { Geneticist: { model: 'small' } }, reward: { judge: { model: 'small' } } });
    const live = new LiveRollouts();
    const routing = gatewayRouting(config, new ModelRouter(config, { env: {} }));
    const gateway = await startGateway({ live, routing: () => routing });
    try {
      agl = await startAgentLightning(stubUrl);
      const calls = async (baseUrl: string): Promise<number> => {
        const done = reply<number>(agents);
        agents.postMessage({ baseUrls: [baseUrl], calls: CALLS, concurrency: 1, messages });
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
