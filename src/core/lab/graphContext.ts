import { resolve } from 'node:path';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { LabConfig, ModelConfig } from '../config/schema';
import { ConfigError, errorMessage } from '../errors';
import { loadLookupTable, type LookupTable } from '../graph/tools/lookup';
import { researchLabTools } from '../graph/tools/researchLabTools';
import type { SearchProvider } from '../graph/tools/search';
import type { ModelRouter } from '../llm/routing';
import { RoutedChatModel } from '../llm/routedChatModel';
import type { AgentVersions } from '../trace/llmSpanAttributes';

/*
 * What a graph is given to run one batch (its agents' models, prompts, tools,
 * and the versions recorded on their spans), in plain data so that a user's
 * graph module in its worker thread gets the same as the built-in graph does
 * in the lab's own thread.
 */

/** One batch's prompts (read and hashed once) and the models a variant moves agents to. */
export interface GraphSetup {
  prompts: Record<string, { text: string; hash: string }>;
  /** agent → the logical model a variant moves it to. */
  moved: Record<string, string>;
  /** LoadedConfig.agentModels: agents routed to a version their model's other agents do not run. */
  agentModels: Record<string, ModelConfig>;
}

export function agentVersions(config: LabConfig, setup: GraphSetup): AgentVersions {
  const logicalModel = (agent: string): string | null => setup.moved[agent] ?? config.agents[agent]?.model ?? null;
  return {
    promptVersion: (agent) => setup.prompts[agent]?.hash ?? null,
    model: (agent) => {
      const logical = logicalModel(agent);
      if (logical === null) return null;
      const own = logical === config.agents[agent]?.model ? setup.agentModels[agent] : undefined;
      return { logical, version: (own ?? config.models[logical])?.version ?? null };
    },
  };
}

export function promptReader(setup: GraphSetup): (agent: string) => string {
  return (agent) => {
    const p = setup.prompts[agent];
    if (!p) throw new ConfigError(`agent "${agent}" has no entry under "agents" in .rollout-lab/lab.json — add it with a model and a prompt`);
    return p.text;
  };
}

/** One routed, traced chat model per agent (or logical model name), made on first use. */
export function agentModelFactory(config: LabConfig, router: ModelRouter, setup: GraphSetup): (agent: string) => BaseChatModel {
  const models = new Map<string, BaseChatModel>();
  return (agent) => {
    let m = models.get(agent);
    if (!m) {
      const moved = setup.moved[agent];
      const resolved = config.agents[agent] ? router.forAgent(agent, moved) : router.resolve(moved ?? agent);
      m = new RoutedChatModel({ resolved, agent });
      models.set(agent, m);
    }
    return m;
  };
}

export type ResearchTools = ReturnType<typeof researchLabTools>;

/**
 * The research-lab tools for a task. A module graph may never touch them
 * (`init --graph` writes no tables): their tables are needed only if it reads
 * ctx.tools, so a missing table is an error then, not at load.
 */
export async function researchToolsFactory(config: LabConfig, labDir: string, search: SearchProvider): Promise<(taskId: string) => ResearchTools> {
  const loadTables = async (): Promise<{ proteins: LookupTable; geneOntology: LookupTable }> => ({
    proteins: await loadLookupTable(resolve(labDir, config.tools.proteinTable)),
    geneOntology: await loadLookupTable(resolve(labDir, config.tools.geneOntologyTable)),
  });
  const tables =
    config.graph.kind !== 'research-lab'
      ? await loadTables().then((t) => ({ ok: true as const, ...t }), (err: unknown) => ({ ok: false as const, err }))
      : { ok: true as const, ...(await loadTables()) };
  return (taskId) => {
    if (!tables.ok) throw new ConfigError(`the graph reads ctx.tools, the research-lab tools, but ${errorMessage(tables.err)}`);
    const { proteins, geneOntology } = tables;
    return researchLabTools({ search, proteins, geneOntology, topK: config.tools.searchTopK, currentTaskId: taskId, excludeCurrentTask: config.tools.excludeCurrentTask });
  };
}
