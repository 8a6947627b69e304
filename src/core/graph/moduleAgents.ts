import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { ChatResult } from '@langchain/core/outputs';
import { describeGraph } from './introspect';
import { DEFAULT_GENE_ONTOLOGY_TABLE, DEFAULT_PROTEIN_TABLE } from './tools/defaultTables';
import { createLookupTable } from './tools/lookup';
import { researchLabTools } from './tools/researchLabTools';
import { datasetSearchProvider } from './tools/search';
import { loadUserGraph } from './userGraph';

/** What a graph module tells about itself without running: its agents, and the prompts it would fall back to. */
export interface ModuleAgents {
  /** In the order the factory named them, then graph order. */
  agents: string[];
  /** Where each agent's name was learnt. */
  source: 'factory' | 'graph nodes';
  /** The module's `prompts` export, by agent: the text it uses when lab.json gives none. */
  prompts: Record<string, string>;
}

/** Stands in for every model while the factory builds: building binds tools, it never calls a model. */
class RecordingChatModel extends BaseChatModel {
  constructor(private readonly agent: string) {
    super({});
  }

  _llmType(): string {
    return 'rollout-lab-recording';
  }

  override bindTools(): this {
    return this;
  }

  async _generate(): Promise<ChatResult> {
    throw new Error(`the graph called model "${this.agent}" while it was being built; Rollout Lab only reads the graph here and calls no model`);
  }
}

/**
 * Reads a graph module's agents without running it: its factory gets a
 * recording context, and the names it passes to ctx.model() and ctx.prompt()
 * are the agents. A module whose factory names none (a compiled graph export,
 * or models looked up only inside nodes) gets one agent per agent node of the
 * graph, from LangGraph's introspection.
 */
export async function discoverModuleAgents(file: string, exportName: string): Promise<ModuleAgents> {
  const named: string[] = [];
  const note = (agent: string): void => {
    if (!named.includes(agent)) named.push(agent);
  };
  const loaded = await loadUserGraph(file, exportName, {
    model: (agent) => {
      note(agent);
      return new RecordingChatModel(agent);
    },
    tools: researchLabTools({
      search: datasetSearchProvider([]),
      proteins: createLookupTable(DEFAULT_PROTEIN_TABLE),
      geneOntology: createLookupTable(DEFAULT_GENE_ONTOLOGY_TABLE),
      topK: 5,
    }),
    prompt: (agent) => {
      note(agent);
      return '';
    },
    maxTurns: 15,
  });
  if (named.length) return { agents: named, source: 'factory', prompts: loaded.prompts };
  const graph = await describeGraph(loaded.graph);
  return { agents: graph.nodes.filter((n) => n.kind === 'agent').map((n) => n.id), source: 'graph nodes', prompts: loaded.prompts };
}
