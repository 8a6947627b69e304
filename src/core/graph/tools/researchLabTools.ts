import { tool, type StructuredToolInterface } from '@langchain/core/tools';
import { z } from 'zod';
import type { RESEARCH_LAB_TOOLS } from '../../config/schema';
import type { LookupEntry, LookupTable } from './lookup';
import type { SearchKind, SearchProvider } from './search';

export type ResearchLabToolName = (typeof RESEARCH_LAB_TOOLS)[number];

export interface ResearchLabToolDeps {
  search: SearchProvider;
  proteins: LookupTable;
  geneOntology: LookupTable;
  /** Results when the agent does not ask for a number. */
  topK: number;
  /** The rollout's own task, hidden from search results unless excludeCurrentTask is false. */
  currentTaskId?: string;
  excludeCurrentTask?: boolean;
}

/** Most results an agent may ask for in one search; more would flood its context. */
const MAX_RESULTS = 20;

const searchInput = z.object({
  query: z.string().trim().min(1).describe('Keywords or a question, e.g. "TREM2 microglia amyloid clearance".'),
  max_results: z.number().int().min(1).max(MAX_RESULTS).optional().describe(`How many results to return (1-${MAX_RESULTS}).`),
});

function withoutAliases(entry: LookupEntry): Record<string, unknown> {
  const { aliases: _aliases, ...rest } = entry;
  return rest;
}

/**
 * The four tools of the research-lab agents as LangChain tools. Results are
 * compact JSON strings. A failed call (unknown protein, provider down, bad
 * arguments) throws: LangGraph's ToolNode turns that into a ToolMessage with
 * status "error", which the trace records as a tool error.
 */
export function researchLabTools(deps: ResearchLabToolDeps): Record<ResearchLabToolName, StructuredToolInterface> {
  const excludeIds = deps.currentTaskId && deps.excludeCurrentTask !== false ? [deps.currentTaskId] : undefined;
  const runSearch = async (kind: SearchKind, query: string, maxResults: number | undefined): Promise<string> => {
    const hits = await deps.search.search(query, { topK: maxResults ?? deps.topK, kind, excludeIds });
    return JSON.stringify(
      hits.length ? { query, results: hits } : { query, results: [], note: 'no matching documents; try other or fewer keywords' },
    );
  };
  const runLookup = (table: LookupTable, query: string): string => {
    const result = table.lookup(query);
    if (!result.found) throw new Error(result.message);
    return JSON.stringify({ query, match: result.match, entries: result.entries.map(withoutAliases) });
  };

  return {
    pubmed_search: tool(async ({ query, max_results }) => runSearch('pubmed', query, max_results), {
      name: 'pubmed_search',
      description:
        'Search biomedical literature (PubMed abstracts). Returns the best-matching articles with id, title, a relevant snippet and a relevance score.',
      schema: searchInput,
    }),
    clinical_trials_search: tool(async ({ query, max_results }) => runSearch('clinical_trials', query, max_results), {
      name: 'clinical_trials_search',
      description:
        'Search clinical studies (randomized trials, cohorts, placebo-controlled studies) on a drug, target or condition. Returns id, title, snippet and score.',
      schema: searchInput,
    }),
    protein_lookup: tool(async ({ name }) => runLookup(deps.proteins, name), {
      name: 'protein_lookup',
      description:
        'Look up a protein by name, gene symbol or alias (e.g. "amyloid-beta", "MAPT", "APOE4", "GLP-1"): function, location, associated diseases and known drugs.',
      schema: z.object({ name: z.string().trim().min(1).describe('Protein name, gene symbol or alias.') }),
    }),
    gene_ontology_lookup: tool(async ({ term }) => runLookup(deps.geneOntology, term), {
      name: 'gene_ontology_lookup',
      description:
        'Look up Gene Ontology terms by GO id (GO:0006915), term name ("apoptotic process") or gene symbol (returns the terms annotated with that gene).',
      schema: z.object({ term: z.string().trim().min(1).describe('GO id, term name or gene symbol.') }),
    }),
  };
}
