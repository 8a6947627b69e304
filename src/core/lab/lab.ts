import { resolve } from 'node:path';
import { z } from 'zod';
import { loadConfig, type LoadedConfig } from '../config/loader';
import { ConfigError, UsageError } from '../errors';
import { loadDataset, selectTasks, type Task } from '../data/dataset';
import { datasetSearchProvider } from '../graph/tools/search';
import { buildResearchLabGraph } from '../graph/researchLab/graph';
import { RESEARCH_LAB_AGENTS } from '../graph/researchLab/outputs';
import { researchLabOutcome, type GraphOutcome } from '../graph/outcome';
import { ModelRouter, type RouterOptions } from '../llm/routing';
import { RoutedChatModel } from '../llm/routedChatModel';
import { withRequestSeed } from '../llm/requestSeed';
import { startSimServer } from '../sim/simServer';
import { loadCannedAnswers, type CannedAnswers } from '../sim/cannedAnswers';
import { TraceStore } from '../store/traceStore';
// The one upward import: reading a saved policy needs only config, the
// learners and the policy files (no store, no adapters), so no cycle forms.
import { loadSupervisorPolicy } from '../policy/supervisorPolicy';
import type { RolloutEnvironment, PlannedTask } from '../rollout/runner';
import type { Variant } from '../config/variantSpec';
import { resolveVariant, variantPrompt, type ResolvedVariant } from './variant';
import { AgentServices, commandRunGraph } from './commandGraph';
import { agentModelFactory, agentVersions, promptReader, researchToolsFactory, type GraphSetup } from './graphContext';
import { isolatedCannedAnswers, isolatedCustomReward, isolatedSearchProvider, type Closeable } from './isolatedModules';
import { isolatedGraph } from './isolatedGraph';

export interface LabOptions {
  workspace: string;
  /** Overrides every model's endpoint (--base-url). */
  baseUrl?: string;
  /** Overrides every model's id (--model). */
  model?: string;
  env?: NodeJS.ProcessEnv;
}

const LabOptionsSchema = z.object({
  workspace: z.string().min(1),
  // Empty means not given, as in the router.
  baseUrl: z.union([z.literal(''), z.url({ protocol: /^https?$/ })]).optional(),
  model: z.string().optional(),
});

/** The options of Lab.open, checked before anything opens: a wrong one is a UsageError. */
function checkLabOptions(opts: LabOptions): void {
  const r = LabOptionsSchema.safeParse(opts);
  if (r.success) return;
  const issue = r.error.issues[0]!;
  const key = String(issue.path[0] ?? '');
  if (key === 'baseUrl') throw new UsageError(`the base URL must be an http(s) URL such as http://127.0.0.1:8000/v1, got "${String(opts.baseUrl)}"`);
  throw new UsageError(`invalid lab option ${key}: ${issue.message}`);
}

export interface DatasetSelection {
  file: string;
  tasks: Task[];
  trainFraction: number;
}

/**
 * A workspace opened for work: its config, its trace store, the model routing
 * table and (only when some model has no endpoint) the built-in simulated
 * endpoint. The CLI and the VS Code extension both go through this.
 */
export class Lab {
  private constructor(
    readonly loaded: LoadedConfig,
    readonly store: TraceStore,
    readonly router: ModelRouter,
    private readonly sim: { url: string; close(): Promise<void> } | null,
    private readonly canned: CannedAnswers | null,
    /** How the router was built: a graph module's worker builds its own from the same options. */
    private readonly routerOptions: RouterOptions,
    /** Workers running the user's modules; closed with the lab. */
    private readonly isolates: Closeable[],
  ) {}

  /** The OTLP receiver and recording gateways command agents talk to; started on first use. */
  private agentServices: AgentServices | null = null;

  /**
   * Checks the options and lab.json before anything starts, builds the router
   * once, then opens the store and (only when some model has no endpoint)
   * starts the simulator: a bad option leaves no store file and no server.
   */
  static async open(opts: LabOptions): Promise<Lab> {
    checkLabOptions(opts);
    const loaded = await loadConfig(resolve(opts.workspace));
    const routerOptions: RouterOptions = {
      overrideBaseUrl: opts.baseUrl,
      overrideModel: opts.model,
      env: opts.env,
      agentModels: loaded.agentModels,
      served: loaded.overlaid,
    };
    const router = new ModelRouter(loaded.config, routerOptions);
    const isolates: Closeable[] = [];
    const simConfig = loaded.config.simulator;
    const canned = router.needsSimulator()
      ? await loadCannedAnswers(loaded.workspaceDir, simConfig, (file) => isolatedCannedAnswers(file, loaded.workspaceDir, simConfig?.moduleTimeoutMs ?? 30_000, isolates))
      : null;
    const closeIsolates = (): Promise<unknown> => Promise.all(isolates.map((i) => i.close()));
    let store: TraceStore;
    try {
      store = await TraceStore.open(loaded.workspaceDir);
    } catch (err) {
      await closeIsolates();
      throw err;
    }
    let sim: { url: string; close(): Promise<void> } | null = null;
    if (router.needsSimulator()) {
      try {
        sim = await startSimServer({ port: 0, answers: canned });
      } catch (err) {
        await store.close();
        await closeIsolates();
        throw err;
      }
      router.attachSimulator(sim.url);
    }
    return new Lab(loaded, store, router, sim, canned, routerOptions, isolates);
  }

  get simulated(): boolean {
    return this.sim !== null;
  }

  /** One line that says plainly which models are simulated, or null when none is. */
  simulationNotice(): string | null {
    if (!this.sim) return null;
    const names = this.router.simulatedModels();
    return `SIMULATED: no endpoint is configured for model${names.length > 1 ? 's' : ''} ${names.join(', ')}, so the built-in simulated OpenAI-compatible server at ${this.sim.url} answers them; set models.<name>.baseUrl in .rollout-lab/lab.json or pass --base-url to use a real server${this.genericAnswersNotice(names)}`;
  }

  /**
   * The simulator knows the research lab's roles, not a module graph's: its
   * agents get generic text (prose where SQL is wanted, rewards near 0) unless
   * lab.json gives canned answers for them.
   */
  private genericAnswersNotice(simulatedModels: string[]): string {
    const { config } = this.loaded;
    if (config.graph.kind === 'research-lab' || this.canned?.agents === null) return '';
    const covered = this.canned?.agents ?? new Set<string>();
    const generic = Object.entries(config.agents)
      .filter(([agent, a]) => simulatedModels.includes(a.model) && !covered.has(agent))
      .map(([agent]) => agent);
    if (!generic.length) return '';
    return `. The graph module's agent${generic.length > 1 ? 's' : ''} ${generic.join(', ')} get${generic.length > 1 ? '' : 's'} generic simulated answers that know nothing of ${generic.length > 1 ? 'their roles' : 'its role'}, so expect low rewards; give canned answers per agent with "simulator": {"answers": "sim/answers.jsonl"} (one {"agent", "match", "answer"} per line) or {"module": "sim.ts"} in .rollout-lab/lab.json`;
  }

  /** Loads the dataset named by --dataset (a file) or the config's runner.dataset / only dataset. */
  async loadDataset(datasetArg?: string): Promise<DatasetSelection> {
    const { config, workspaceDir } = this.loaded;
    if (datasetArg) {
      const named = config.datasets[datasetArg];
      if (named) {
        const file = resolve(workspaceDir, named.path);
        return { file, tasks: await loadDataset(file, named.format, { fields: named.fields, maxRowBytes: named.maxRowBytes }), trainFraction: named.trainFraction };
      }
      const file = resolve(workspaceDir, datasetArg);
      // A file lab.json configures is read with its settings (its field mapping above all), whichever way it is named.
      const configured = Object.values(config.datasets).find((d) => resolve(workspaceDir, d.path) === file);
      return { file, tasks: await loadDataset(file, configured?.format ?? 'auto', { fields: configured?.fields, maxRowBytes: configured?.maxRowBytes }), trainFraction: configured?.trainFraction ?? 0.8 };
    }
    const key = config.runner.dataset ?? Object.keys(config.datasets)[0];
    if (!key) {
      throw new UsageError('no dataset given: pass --dataset FILE (JSONL or PubMedQA ori_pqal.json) or add one under "datasets" in .rollout-lab/lab.json');
    }
    const ds = config.datasets[key]!;
    const file = resolve(workspaceDir, ds.path);
    return { file, tasks: await loadDataset(file, ds.format, { fields: ds.fields, maxRowBytes: ds.maxRowBytes }), trainFraction: ds.trainFraction };
  }

  selectTasks(ds: DatasetSelection, opts: { split: 'train' | 'val' | 'all'; limit?: number; seed?: number }): PlannedTask[] {
    return selectTasks(ds.tasks, { ...opts, trainFraction: ds.trainFraction });
  }

  /**
   * Everything a batch of rollouts needs: prompts read and versioned now (a
   * rollout records the version it ran), the search index over the dataset,
   * and the graph (the research lab, or the user's module).
   * A `variant` (a configuration being compared) moves chosen agents to
   * another logical model or prompt; it is checked before anything runs.
   */
  async environment(allTasks: readonly Task[], variant?: Variant): Promise<RolloutEnvironment> {
    const { config, labDir, workspaceDir } = this.loaded;
    const resolvedVariant: ResolvedVariant | null = variant ? await resolveVariant(this.loaded, this.store, variant) : null;
    const agents = Object.keys(config.agents);
    const setup: GraphSetup = { prompts: {}, moved: Object.fromEntries(resolvedVariant?.models ?? []), agentModels: this.loaded.agentModels };
    for (const agent of agents) {
      // A command lab's program may hold its agents' prompts itself: an agent without one is left out of ROLLOUT_LAB_PROMPTS_FILE.
      const p = await variantPrompt(this.loaded, resolvedVariant, agent, config.graph.kind === 'command');
      if (!p) continue;
      setup.prompts[agent] = { text: p.text, hash: p.hash };
      this.store.putPromptVersion({ hash: p.hash, agent, text: p.text, firstSeen: Date.now() });
    }
    const versions = agentVersions(config, setup);
    const prompt = promptReader(setup);
    // Workers this environment starts: closed by env.close() (after its batch) or with the lab.
    const own: Closeable[] = [];
    const isolate = <T extends Closeable>(x: T): T => {
      own.push(x);
      this.isolates.push(x);
      return x;
    };
    const searchModule = config.tools.searchProvider ? resolve(workspaceDir, config.tools.searchProvider) : null;
    const recursionLimit = config.runner.maxTurns * 6 + 50;
    if (config.bandit.mode !== 'off' && config.graph.kind !== 'research-lab') {
      throw new ConfigError(
        `bandit.mode "${config.bandit.mode}" needs the built-in research-lab graph's Supervisor; set bandit.mode to "off" in .rollout-lab/lab.json for graph kind "${config.graph.kind}"`,
      );
    }
    // Read once per batch: every rollout of it uses the same policy version.
    const supervisorPolicy = loadSupervisorPolicy(labDir, config);
    const customReward = config.reward.module
      ? isolate(await isolatedCustomReward(resolve(workspaceDir, config.reward.module), workspaceDir, config.reward.customTimeoutMs))
      : null;

    let runGraph: RolloutEnvironment['runGraph'];
    if (config.graph.kind === 'command') {
      this.agentServices ??= new AgentServices(this.store);
      runGraph = await commandRunGraph({
        config,
        workspaceDir,
        router: this.router,
        versions,
        movedTo: (agent) => resolvedVariant?.models.get(agent),
        prompts: new Map(Object.entries(setup.prompts)),
        services: this.agentServices,
      });
    } else if (config.graph.kind === 'module') {
      // The user's graph runs in worker threads (its own code cannot stop the lab); only what the agents may see is sent to it.
      const graph = isolate(
        await isolatedGraph(resolve(workspaceDir, config.graph.module!), {
          config,
          labDir,
          workspaceDir,
          routerOptions: { ...this.routerOptions, env: { ...(this.routerOptions.env ?? process.env) } },
          simulatorUrl: this.sim?.url ?? null,
          setup,
          allTasks: searchModule ? [] : [...allTasks],
        }),
      );
      runGraph = graph.runGraph;
    } else {
      // The built-in graph runs in the lab's own thread: it is not user code, and its spans and model calls stay direct.
      const search = searchModule
        ? isolate(await isolatedSearchProvider(searchModule, workspaceDir, config.tools.searchProviderTimeoutMs))
        : datasetSearchProvider([...allTasks]);
      const toolsFor = await researchToolsFactory(config, labDir, search);
      const model = agentModelFactory(config, this.router, setup);
      runGraph = async (task, { callbacks, signal, seed }): Promise<GraphOutcome> => {
        const graph = buildResearchLabGraph({
          model,
          tools: toolsFor(task.id),
          agentTools: (agent) => config.agents[agent]?.tools ?? [],
          prompt,
          maxTurns: config.runner.maxTurns,
          agents: [...RESEARCH_LAB_AGENTS],
          supervisorPolicy,
        });
        const input = { task: { id: task.id, goal: task.goal, context: task.context } };
        const state = await withRequestSeed(seed, () => graph.invoke(input, { callbacks, signal, recursionLimit, runName: 'rollout' }));
        return researchLabOutcome(state);
      };
    }
    return {
      config,
      store: this.store,
      runGraph,
      judgeModel: new RoutedChatModel({ resolved: this.router.forJudge(), agent: 'Judge' }),
      versions,
      simulated: this.simulated,
      customReward,
      close: async () => {
        await Promise.all(own.map((x) => x.close()));
        for (const x of own) this.isolates.splice(this.isolates.indexOf(x), 1);
      },
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.isolates.splice(0).map((x) => x.close()));
    await this.agentServices?.close();
    await this.store.close();
    await this.sim?.close();
  }
}
