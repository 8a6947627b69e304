import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { roleMarker } from '../../../src/core/graph/researchLab/outputs';
import { judgeKeysLine } from '../../../src/core/reward/judgeSchema';

/** The real PubMedQA PQA-L set, kept beside the repository (../shared), never copied into it. */
export const PUBMEDQA_FILE = join(__dirname, '..', '..', '..', '..', 'shared', 'data', 'pubmedqa', 'ori_pqal.json');

export interface LabTask {
  id: string;
  goal: string;
  context: string;
  decision: string;
}

let cache: LabTask[] | null = null;

/** The first `n` PubMedQA items as tasks, context paragraphs headed by their section labels as the loader does. */
export function pubmedqaTasks(n: number): LabTask[] {
  cache ??= Object.entries(
    JSON.parse(readFileSync(PUBMEDQA_FILE, 'utf8')) as Record<string, { QUESTION: string; CONTEXTS: string[]; LABELS?: string[]; final_decision: string }>,
  ).map(([id, it]) => ({
    id,
    goal: it.QUESTION,
    context: it.CONTEXTS.map((c, i) => (it.LABELS?.[i] ? `${it.LABELS[i]}: ${c}` : c)).join('\n\n'),
    decision: it.final_decision,
  }));
  return cache.slice(0, n);
}

/** A chat message in the OpenAI wire format, as the simulator receives it. */
export type WireMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> }
  | { role: 'tool'; content: string; tool_call_id: string };

export function taskBlock(t: LabTask): string {
  return `Research question: ${t.goal}\n\nContext:\n${t.context}`;
}

/** The system and user messages an agent of the research-lab graph sends, in the graph's briefing shape. */
export function agentMessages(agent: string, user: string): WireMessage[] {
  return [
    { role: 'system', content: `${roleMarker(agent)}\nYou are the ${agent} of a research lab. Answer with JSON only.` },
    { role: 'user', content: user },
  ];
}

export function judgeMessages(t: LabTask, protocol: string, keys: string[]): WireMessage[] {
  return [
    { role: 'system', content: `${roleMarker('Judge')}\nYou score experimental protocols.` },
    {
      role: 'user',
      content: `Research question:\n${t.goal}\n\nContext:\n${t.context}\n\nProtocol to score:\n${protocol}\n\nCriteria:\n${keys
        .map((k) => `- ${k}: a criterion`)
        .join('\n')}\n\n${judgeKeysLine(keys)}`,
    },
  ];
}

export const LAB_TOOLS = [
  {
    type: 'function' as const,
    function: {
      name: 'pubmed_search',
      description: 'Search the literature.',
      parameters: { type: 'object', properties: { query: { type: 'string' }, top_k: { type: 'integer', minimum: 1, maximum: 10 } }, required: ['query'] },
    },
  },
  {
    type: 'function' as const,
    function: {
      name: 'clinical_trials_search',
      description: 'Search clinical trials.',
      parameters: { type: 'object', properties: { condition: { type: 'string' } }, required: ['condition'] },
    },
  },
  {
    type: 'function' as const,
    function: {
      name: 'protein_lookup',
      description: 'Look up a protein.',
      parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    },
  },
];
