import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import { datasetSearchProvider } from '../../../graph/tools/search';
import type { LookupTable } from '../../../graph/tools/lookup';
import { researchLabTools } from '../../../graph/tools/researchLabTools';

/** A tool as chat templates and TRL take it (`tools=[...]`). */
export interface ToolDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** A well-formed definition in fixed key order; the JSON Schema dialect marker is left out (templates do not use it). */
export function toolDefinition(raw: unknown): ToolDefinition | null {
  const fn = (raw as { function?: { name?: unknown; description?: unknown; parameters?: unknown } } | null)?.function;
  if (!fn || typeof fn.name !== 'string' || !fn.name) return null;
  const params: Record<string, unknown> = fn.parameters && typeof fn.parameters === 'object' ? { ...(fn.parameters as Record<string, unknown>) } : { type: 'object', properties: {} };
  delete params['$schema'];
  return { type: 'function', function: { name: fn.name, description: typeof fn.description === 'string' ? fn.description : '', parameters: params } };
}

let builtIn: Map<string, ToolDefinition> | null = null;

function emptyTable(kind: LookupTable['kind']): LookupTable {
  return { kind, file: null, entries: [], lookup: (query) => ({ found: false, query, message: 'not available' }) };
}

/**
 * Definitions of the research-lab tools by name, for calls whose span did not
 * record the tools it was given (a turn past the limit, traces from older
 * versions): the same tool objects the graph binds, over empty indexes.
 */
export function researchLabToolDefinition(name: string): ToolDefinition | null {
  if (!builtIn) {
    const tools = researchLabTools({ search: datasetSearchProvider([]), proteins: emptyTable('protein'), geneOntology: emptyTable('gene_ontology'), topK: 5 });
    builtIn = new Map();
    for (const t of Object.values(tools)) {
      const def = toolDefinition(convertToOpenAITool(t));
      if (def) builtIn.set(def.function.name, def);
    }
  }
  return builtIn.get(name) ?? null;
}
