import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { LabConfig } from '../config/schema';
import { visibleTask } from '../data/visibleTask';
import { DEFAULT_COMMAND_TIMEOUT_MS, runCommandAgent } from '../graph/commandAgent';
import type { GraphOutcome } from '../graph/outcome';
import type { ModelRouter } from '../llm/routing';
import { startGateway, type Gateway } from '../gateway/gateway';
import { gatewayRouting, type GatewayRouting } from '../gateway/gatewayRouting';
import { startOtlpReceiver, type OtlpReceiver } from '../otlp/otlpReceiver';
import type { TraceStore } from '../store/traceStore';
import type { AgentVersions } from '../trace/llmSpanAttributes';
import { callMerger } from '../trace/llmCallMerge';
import { LiveRollouts, type LiveRollout } from '../trace/liveRollouts';
import { Attr } from '../trace/span';
import type { RolloutEnvironment } from '../rollout/runner';

/**
 * What command agents talk to while a lab is open: one OTLP receiver for the
 * spans they export and one recording gateway, whose routing is each running
 * rollout's own (it follows the variant of the batch the rollout belongs to).
 * Started on first use, on loopback ports the system picks; closed with the lab.
 */
export class AgentServices {
  readonly live = new LiveRollouts();
  private readonly routings = new WeakMap<LiveRollout, GatewayRouting>();
  private receiver: Promise<OtlpReceiver> | null = null;
  private gatewayStarted: Promise<Gateway> | null = null;
  private dir: string | null = null;
  private files = 0;

  constructor(private readonly store: TraceStore) {}

  otlpReceiver(): Promise<OtlpReceiver> {
    this.receiver ??= startOtlpReceiver({ port: 0, store: this.store, live: this.live });
    return this.receiver;
  }

  gateway(): Promise<Gateway> {
    this.gatewayStarted ??= startGateway({
      port: 0,
      live: this.live,
      routing: (rollout) => {
        const routing = this.routings.get(rollout);
        if (!routing) throw new Error(`rollout ${rollout.id} was registered without its routing`);
        return routing;
      },
    });
    return this.gatewayStarted;
  }

  /** Takes spans and model calls for the rollout while it runs, routed by `routing`; the function it returns ends that. */
  add(rollout: LiveRollout, routing: GatewayRouting): () => void {
    this.routings.set(rollout, routing);
    return this.live.add(rollout);
  }

  /** Writes a JSON file that lives until the lab closes. */
  writeFile(value: unknown): string {
    this.dir ??= mkdtempSync(join(tmpdir(), 'rollout-lab-agent-'));
    const file = join(this.dir, `${++this.files}.json`);
    writeFileSync(file, JSON.stringify(value, null, 2));
    return file;
  }

  async close(): Promise<void> {
    const closing = (p: Promise<{ close(): Promise<void> }> | null): Promise<void> | undefined => p?.then((s) => s.close(), () => undefined);
    await Promise.all([closing(this.gatewayStarted), closing(this.receiver)]);
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}

/** `OTEL_RESOURCE_ATTRIBUTES` value: key=value pairs, values percent-encoded as the OpenTelemetry spec asks. */
function resourceAttributes(pairs: Record<string, string | number>, inherited: string | undefined): string {
  const own = Object.entries(pairs).map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`);
  return [inherited?.trim(), ...own].filter(Boolean).join(',');
}

/**
 * runGraph for `graph.kind: "command"`: each rollout starts the user's
 * program with the task on standard input (only the fields the agents may
 * see), the gateway's per-rollout URL as OPENAI_BASE_URL, and the OTLP
 * receiver as OTEL_EXPORTER_OTLP_ENDPOINT with the rollout's ids as resource
 * attributes. Its model calls (through the gateway) and its exported spans
 * land under the rollout's root span while it runs.
 */
export async function commandRunGraph(opts: {
  config: LabConfig;
  workspaceDir: string;
  router: ModelRouter;
  versions: AgentVersions;
  /** The logical model a variant moves an agent to. */
  movedTo: (agent: string) => string | undefined;
  prompts: ReadonlyMap<string, { text: string; hash: string }>;
  services: AgentServices;
}): Promise<RolloutEnvironment['runGraph']> {
  const { config, workspaceDir, services } = opts;
  const graph = config.graph;
  const [receiver, gateway] = await Promise.all([services.otlpReceiver(), services.gateway()]);
  const routing = gatewayRouting(config, opts.router, opts.versions, opts.movedTo);
  // The lab's prompt per agent, for programs that take their prompts from the lab (so prompt optimisation reaches them).
  const promptsFile = services.writeFile(Object.fromEntries([...opts.prompts].map(([agent, p]) => [agent, p.text])));
  const agents = Object.keys(config.agents);
  const cwd = resolve(workspaceDir, graph.cwd ?? '.');
  return async (task, { signal, seed, rollout }): Promise<GraphOutcome> => {
    const id = rollout.tracer.traceId;
    const remove = services.add({ id, runId: rollout.runId, taskId: task.id, sample: rollout.sample, tracer: rollout.tracer, root: rollout.root, seed, signal, agents }, routing);
    const live = services.live.get(id)!;
    try {
      const ids = { [Attr.rolloutId]: id, [Attr.runId]: rollout.runId, [Attr.taskId]: task.id, [Attr.sample]: rollout.sample };
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        ...graph.env,
        OPENAI_BASE_URL: gateway.baseUrl(id),
        // The gateway holds the real keys; clients that insist on one get a placeholder.
        OPENAI_API_KEY: 'rollout-lab-gateway',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
        OTEL_RESOURCE_ATTRIBUTES: resourceAttributes(ids, graph.env?.OTEL_RESOURCE_ATTRIBUTES ?? process.env.OTEL_RESOURCE_ATTRIBUTES),
        ROLLOUT_LAB_ROLLOUT_ID: id,
        ROLLOUT_LAB_RUN_ID: rollout.runId,
        ROLLOUT_LAB_TASK_ID: task.id,
        ROLLOUT_LAB_SAMPLE: String(rollout.sample),
        ROLLOUT_LAB_SEED: String(seed),
        ROLLOUT_LAB_AGENT_BASE_URLS: JSON.stringify(Object.fromEntries(agents.map((a) => [a, gateway.baseUrl(id, a)]))),
        ROLLOUT_LAB_PROMPTS_FILE: promptsFile,
      };
      const out = await runCommandAgent({
        argv: graph.command!,
        cwd,
        env,
        input: `${JSON.stringify(visibleTask(task))}\n`,
        timeoutMs: graph.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
        signal,
      });
      // A program that does not count its turns made as many as the model calls it sent through the gateway.
      const turns = out.turns ?? rollout.tracer.spans().filter((s) => s.kind === 'llm' && s.attributes[Attr.unmatchedCall] !== true).length;
      return { ...out, turns };
    } finally {
      // The program has ended, its spans are in (an exporter flushes before exit): gateway records whose caller span never came hang under the root.
      callMerger(live).settle(new Set(rollout.tracer.spans().map((s) => s.spanId)), rollout.root.spanId);
      remove();
    }
  };
}
