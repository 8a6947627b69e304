import { JUNIOR_AGENTS, SENIOR_AGENTS } from '../graph/researchLab/outputs';
import type { SeededRandom } from './seededRandom';
import type { SimConversation } from './simConversation';
import type { SimChatRequest, SimTool } from './simRequest';
import { findEntities, keyPhrases } from './textFeatures';

export interface SimToolCall {
  id: string;
  name: string;
  /** JSON text, as the protocol carries it. */
  arguments: string;
}

/** How often an agent reaches for a tool when it may: juniors explore, seniors less so. */
function toolAppetite(agent: string | null): number {
  if ((JUNIOR_AGENTS as readonly string[]).includes(agent ?? '')) return 0.5;
  if ((SENIOR_AGENTS as readonly string[]).includes(agent ?? '')) return 0.4;
  return 0.3;
}

/**
 * A tool call for this turn, or null to answer directly. At most one tool
 * round per turn: once a tool result follows the last user message the agent answers.
 */
export function decideToolCall(req: SimChatRequest, conv: SimConversation, rng: SeededRandom): SimToolCall | null {
  const tools = req.tools ?? [];
  const choice = req.tool_choice;
  if (!tools.length || choice === 'none') return null;
  let tool: SimTool | undefined;
  if (typeof choice === 'object') {
    tool = tools.find((t) => t.function.name === choice.function.name);
  } else if (choice === 'required') {
    tool = pickTool(tools, conv, rng);
  } else {
    if (conv.toolResults.length > 0 || !rng.chance(toolAppetite(conv.agent))) return null;
    tool = pickTool(tools, conv, rng);
  }
  if (!tool) return null;
  const args = argumentsFor(tool, conv, rng);
  return { id: `call_${rng.digest.slice(8, 32)}`, name: tool.function.name, arguments: JSON.stringify(args) };
}

function pickTool(tools: SimTool[], conv: SimConversation, rng: SeededRandom): SimTool {
  const byName = (re: RegExp): SimTool[] => tools.filter((t) => re.test(t.function.name));
  const lookups = byName(/protein|gene|ontology|uniprot/i);
  const searches = byName(/pubmed|literature|search|paper/i).filter((t) => !/trial/i.test(t.function.name));
  const trials = byName(/trial/i);
  const hasEntity = findEntities(`${conv.goal}\n${conv.context}`).length > 0;
  const r = rng.next();
  if (hasEntity && lookups.length && r < 0.4) return rng.pick(lookups);
  if (trials.length && r > 0.75) return rng.pick(trials);
  if (searches.length) return rng.pick(searches);
  return rng.pick(tools);
}

interface JsonSchemaProp {
  type?: string | string[];
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  items?: JsonSchemaProp;
}

/** Arguments that satisfy the tool's JSON schema, filled from the task: a query, a protein name, a count. */
function argumentsFor(tool: SimTool, conv: SimConversation, rng: SeededRandom): Record<string, unknown> {
  const params = (tool.function.parameters ?? {}) as { properties?: Record<string, JsonSchemaProp>; required?: string[] };
  const props = params.properties ?? {};
  const required = new Set(params.required ?? []);
  const entity = findEntities(`${conv.goal}\n${conv.context}`)[0];
  const phrases = keyPhrases(`${conv.goal}\n${conv.context}`, conv.goal, 4).map((p) => p.text);
  const query = [entity, ...phrases].filter(Boolean).slice(0, 3).join(' ') || conv.goal.slice(0, 80);
  const out: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(props)) {
    const queryLike = /query|^q$|search|keyword|topic|condition|term|text/i.test(name);
    const nameLike = /protein|gene|symbol|name|entity|target/i.test(name);
    if (!required.has(name) && !queryLike && !nameLike) continue;
    out[name] = valueFor(name, schema, { entity: entity ?? phrases[0] ?? query, query }, rng);
  }
  return out;
}

function valueFor(name: string, schema: JsonSchemaProp, fill: { entity: string; query: string }, rng: SeededRandom): unknown {
  if (schema.enum?.length) return rng.pick(schema.enum);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'integer':
    case 'number': {
      const want = /top|limit|max|count|^k$|^n$|results/i.test(name) ? 3 : 1;
      return Math.min(Math.max(want, schema.minimum ?? want), schema.maximum ?? want);
    }
    case 'boolean':
      return true;
    case 'array':
      return [valueFor(name, schema.items ?? { type: 'string' }, fill, rng)];
    default:
      return /protein|gene|symbol|name|entity|target/i.test(name) ? fill.entity : fill.query;
  }
}

/** Short citations from tool results: titles with their ids when the result is JSON, else its first line. */
export function citationsFrom(toolResults: string[], max = 2): string[] {
  const out: string[] = [];
  for (const raw of toolResults) {
    if (/^\s*(error|\{"error")/i.test(raw)) continue;
    let found: string[] = [];
    try {
      found = collectTitles(JSON.parse(raw));
    } catch {
      const line = raw.split('\n').find((l) => l.trim().length > 10);
      if (line) found = [line.trim().slice(0, 120)];
    }
    for (const f of found) if (!out.includes(f)) out.push(f);
    if (out.length >= max) break;
  }
  return out.slice(0, max);
}

function collectTitles(value: unknown, acc: string[] = []): string[] {
  if (acc.length >= 3 || value === null || typeof value !== 'object') return acc;
  if (Array.isArray(value)) {
    for (const v of value) collectTitles(v, acc);
    return acc;
  }
  const o = value as Record<string, unknown>;
  const title = [o.title, o.name, o.term, o.function].find((v): v is string => typeof v === 'string' && v.length > 0);
  const id = [o.pmid, o.nct_id, o.nctId, o.id, o.accession].find((v) => typeof v === 'string' || typeof v === 'number');
  if (title) {
    acc.push(id !== undefined ? `${/^\d+$/.test(String(id)) ? 'PMID ' : ''}${id}: ${title.slice(0, 100)}` : title.slice(0, 100));
    return acc;
  }
  for (const v of Object.values(o)) collectTitles(v, acc);
  return acc;
}
