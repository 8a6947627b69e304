import { availableParallelism } from 'node:os';
import { DEFAULT_COMMAND_TIMEOUT_MS } from '../graph/commandAgent';
import { IsolatePool } from '../graph/moduleIsolate';
import type { GraphOutcome } from '../graph/outcome';
import { visibleTask } from '../data/visibleTask';
import type { RolloutEnvironment } from '../rollout/runner';
import type { SpanRecord } from '../trace/span';
import type { GraphRolloutCall, GraphWorkerData } from './graphInWorker';
import { moduleLabel, type Closeable } from './isolatedModules';

/**
 * A graph module (graph.kind "module") run in worker threads, shared by the
 * rollouts in flight: a rollout past graph.timeoutMs or cancelled is asked to
 * stop, and its worker is stopped if it does not (a busy loop); a graph that
 * calls process.exit() or crashes fails the rollouts of its worker, and the
 * next rollouts get a fresh worker. Its spans are recorded in the worker and added to the
 * rollout's trace here as each one ends, so the store sees them as it did.
 */
export async function isolatedGraph(
  file: string,
  data: GraphWorkerData,
): Promise<{ runGraph: RolloutEnvironment['runGraph'] } & Closeable> {
  const label = moduleLabel('graph module', file, data.workspaceDir);
  const timeoutMs = data.config.graph.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
  // Rollouts share a few workers (they mostly wait on the model): one per core, so that each worker's code warms up.
  const pool = new IsolatePool({ role: 'graph', file, label, data }, Math.max(2, availableParallelism()));
  await pool.start();
  return {
    runGraph: async (task, { callbacks, signal, seed, rollout }) => {
      // The runner's tracer handler is what tracing on means; the worker records the graph's spans with its own.
      const tracing = Array.isArray(callbacks) ? callbacks.length > 0 : Boolean(callbacks);
      const call: GraphRolloutCall = { task: visibleTask(task), seed, traceId: rollout.tracer.traceId, rootSpanId: rollout.root.spanId, tracing };
      return (await pool.call('rollout', call, {
        timeoutMs,
        timeoutMessage: () => `${label} did not finish the rollout within graph.timeoutMs = ${timeoutMs} ms; its worker was stopped — make the graph finish sooner, or raise "graph.timeoutMs" in .rollout-lab/lab.json`,
        signal,
        onEvent: (span) => rollout.tracer.add(span as SpanRecord),
      })) as GraphOutcome;
    },
    close: () => pool.close(),
  };
}
