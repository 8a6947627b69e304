import { rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { visibleTask } from '../src/core/data/visibleTask';
import type { GraphOutcome } from '../src/core/graph/outcome';
import { loadUserGraph } from '../src/core/graph/userGraph';
import { agentModelFactory, promptReader, type GraphSetup } from '../src/core/lab/graphContext';
import { Lab } from '../src/core/lab/lab';
import { variantPrompt } from '../src/core/lab/variant';
import { withRequestSeed } from '../src/core/llm/requestSeed';
import { runRollouts, type RolloutEnvironment } from '../src/core/rollout/runner';
import { startSimServer } from '../src/core/sim/simServer';
import { benchWorkspace } from './benchWorkspace';
import { median, result, type Bench, type BenchResult } from './harness';

/** The one-call graph module of runner.scaling, run the way the lab ran it before isolation: in the lab's own thread. */
async function inProcess(lab: Lab, env: RolloutEnvironment): Promise<RolloutEnvironment> {
  const { config } = lab.loaded;
  const setup: GraphSetup = { prompts: {}, moved: {}, agentModels: lab.loaded.agentModels };
  for (const agent of Object.keys(config.agents)) {
    const p = await variantPrompt(lab.loaded, null, agent);
    if (p) setup.prompts[agent] = p;
  }
  const user = await loadUserGraph(resolve(lab.loaded.workspaceDir, config.graph.module!), config.graph.export, {
    model: agentModelFactory(config, lab.router, setup),
    tools: {},
    prompt: promptReader(setup),
    maxTurns: config.runner.maxTurns,
  });
  return {
    ...env,
    runGraph: async (task, { callbacks, signal, seed }): Promise<GraphOutcome> =>
      user.outcome(await withRequestSeed(seed, () => user.graph.invoke(user.input(visibleTask(task)), { callbacks, signal, runName: 'rollout' }))),
  };
}

/**
 * isolation.graphModule: what running a user's graph module in worker threads
 * costs, in rollouts/s of a one-call graph against a zero-latency server
 * (the worst case: no model time to hide it), 32 rollouts at concurrency 4,
 * tracing on; baseline: the same graph in the lab's own thread.
 */
export const bench: Bench = {
  names: ['isolation.graphModule'],
  async run(): Promise<BenchResult[]> {
    const sim = await startSimServer({ port: 0 });
    const dir = await benchWorkspace('rl-bench-iso-', true);
    try {
      const lab = await Lab.open({ workspace: dir, baseUrl: sim.url });
      try {
        const ds = await lab.loadDataset();
        const isolated = await lab.environment(ds.tasks);
        const local = await inProcess(lab, isolated);
        const tasks = lab.selectTasks(ds, { split: 'train', limit: 32, seed: 1 });
        const rate = async (env: RolloutEnvironment): Promise<number> => {
          const t0 = performance.now();
          const r = await runRollouts(env, { tasks, samples: 1, concurrency: 4, params: {} });
          if (r.rollouts.some((x) => x.status !== 'succeeded')) throw new Error('a benchmark rollout failed');
          return tasks.length / ((performance.now() - t0) / 1000);
        };
        // Warm-up: the JIT, and the workers (started as the first batch needs them).
        await rate(local);
        await rate(isolated);
        const a: number[] = [];
        const b: number[] = [];
        for (let i = 0; i < 5; i++) {
          b.push(await rate(local));
          a.push(await rate(isolated));
        }
        await isolated.close?.();
        return [result('isolation.graphModule', 'rollouts/s', median(a), median(b), 'graph module in worker threads vs in-process, zero-latency server, c4')];
      } finally {
        await lab.close();
      }
    } finally {
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
