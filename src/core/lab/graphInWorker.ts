import { resolve } from 'node:path';
import type { LabConfig } from '../config/schema';
import type { Task } from '../data/tasks';
import type { VisibleTask } from '../data/visibleTask';
import { datasetSearchProvider } from '../graph/tools/search';
import { loadSearchProvider } from '../graph/tools/searchProviderModule';
import { loadUserGraph, type LoadedUserGraph } from '../graph/userGraph';
import type { GraphOutcome } from '../graph/outcome';
import { ModelRouter, type RouterOptions } from '../llm/routing';
import { withRequestSeed } from '../llm/requestSeed';
import { LangChainTracer } from '../trace/langchainTracer';
import type { SpanRecord } from '../trace/span';
import { RolloutTracer, type OpenSpan } from '../trace/tracer';
import { agentModelFactory, agentVersions, promptReader, researchToolsFactory, type GraphSetup } from './graphContext';

/** What the lab's thread hands a graph module's worker: plain data, cloned across. */
export interface GraphWorkerData {
  config: LabConfig;
  labDir: string;
  workspaceDir: string;
  routerOptions: RouterOptions;
  simulatorUrl: string | null;
  setup: GraphSetup;
  /** Every task of the dataset, for the built-in search tool's index (a module graph that reads ctx.tools). */
  allTasks: Task[];
}

/** One rollout asked of the worker. */
export interface GraphRolloutCall {
  task: VisibleTask;
  seed: number;
  traceId: string;
  rootSpanId: string;
  tracing: boolean;
}

/**
 * The graph module loaded in its worker, as lab.environment loads it in the
 * lab's thread: routed models (the router rebuilt from the same options), the
 * prompts and tools of the batch. A rollout's spans are recorded here by the
 * same LangChain tracer and sent to the lab's thread as each one ends.
 */
export async function loadGraphInWorker(file: string, data: GraphWorkerData): Promise<(call: GraphRolloutCall, emit: (span: SpanRecord) => void, signal: AbortSignal) => Promise<GraphOutcome>> {
  const { config, setup } = data;
  const router = new ModelRouter(config, data.routerOptions);
  if (data.simulatorUrl) router.attachSimulator(data.simulatorUrl);
  const search = config.tools.searchProvider ? await loadSearchProvider(resolve(data.workspaceDir, config.tools.searchProvider)) : datasetSearchProvider(data.allTasks);
  const toolsFor = await researchToolsFactory(config, data.labDir, search);
  const versions = agentVersions(config, setup);
  const labAgents = Object.keys(config.agents);
  const user: LoadedUserGraph = await loadUserGraph(file, config.graph.export, {
    model: agentModelFactory(config, router, setup),
    get tools() {
      return toolsFor('');
    },
    prompt: promptReader(setup),
    maxTurns: config.runner.maxTurns,
  });
  const recursionLimit = config.runner.maxTurns * 6 + 50;
  return async (call, emit, signal) => {
    const tracer = new RolloutTracer(call.traceId, call.tracing ? { writeSpan: emit } : null);
    // Only its id is read: the spans of the graph hang under the rollout span the lab's thread holds.
    const root: OpenSpan = { spanId: call.rootSpanId, parentSpanId: null, name: 'rollout', kind: 'rollout', startTime: Date.now(), attributes: {} };
    const handler = call.tracing ? new LangChainTracer(tracer, root, versions, labAgents) : null;
    try {
      const state = await withRequestSeed(call.seed, () =>
        user.graph.invoke(user.input(call.task), { callbacks: handler ? [handler] : [], signal, recursionLimit, runName: 'rollout' }),
      );
      return user.outcome(state);
    } catch (err) {
      handler?.closeOpen(err instanceof Error ? err.message : String(err));
      throw err;
    }
  };
}
