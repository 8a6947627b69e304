import { DEFAULT_CRITERIA } from '../config/schema';
import { JUNIOR_AGENTS, REVIEW_AGENTS } from '../graph/researchLab/outputs';
import { genericAnswer } from './genericAnswer';
import { judgeAnswer } from './judgeAnswer';
import { juniorAnswer, principalAnswer, protocolAnswer, refinerAnswer, reviewAnswer, supervisorAnswer } from './researchAnswers';
import { seededRandom, type SeededRandom } from './seededRandom';
import { readConversation, type SimConversation } from './simConversation';
import { conversationFingerprint, type SimChatRequest } from './simRequest';
import { citationsFrom, decideToolCall, type SimToolCall } from './simTools';

/** The assistant turn the simulator gives: text, or tool calls (then content is null). */
export interface SimAnswer {
  agent: string | null;
  content: string | null;
  toolCalls: SimToolCall[];
  /** Seeds ids and logprobs, so they are as reproducible as the answer. */
  digest: string;
}

export interface ResponderOptions {
  seed: number;
  /**
   * Wrap some JSON answers in ```json fences or put a sentence before them,
   * as real models do, so parsers get exercised. Deterministic per input.
   */
  jsonNoise: boolean;
  /** Return the JSON answer cut short: a model that stopped mid-object. */
  truncateJson?: boolean;
  /** The calling agent when the request names it (the lab's agent header); else the system prompt's role marker says. */
  agent?: string | null;
}

/**
 * The simulator's answer to a chat request. Depends only on the server seed,
 * the request's `seed` and the conversation, so runs replay exactly while
 * different tasks, agents and samples get different answers.
 */
export function respond(req: SimChatRequest, opts: ResponderOptions): SimAnswer {
  const read = readConversation(req);
  const conv = opts.agent ? { ...read, agent: opts.agent } : read;
  const rng = seededRandom(opts.seed, conv.agent, req.seed ?? '', conversationFingerprint(req));
  const isJudge = conv.agent === 'Judge' || (conv.agent === null && conv.judgeKeys !== null);
  if (!isJudge) {
    const call = decideToolCall(req, conv, rng);
    if (call) return { agent: conv.agent, content: null, toolCalls: [call], digest: rng.digest };
  }
  const value = isJudge ? judgeAnswer(conv, rng, conv.judgeKeys ?? Object.keys(DEFAULT_CRITERIA)) : roleAnswer(req, conv, rng);
  // A response_format is enforced the way servers do it, by grammar: bare JSON, never fenced or wrapped in prose.
  const enforced = enforcedFormat(req) !== null;
  const content = typeof value === 'string' ? value : formatJson(value, rng, enforced ? { ...opts, jsonNoise: false } : opts);
  return { agent: conv.agent, content, toolCalls: [], digest: rng.digest };
}

function roleAnswer(req: SimChatRequest, conv: SimConversation, rng: SeededRandom): string | object {
  const citations = citationsFrom(conv.toolResults);
  const agent = conv.agent ?? '';
  if ((JUNIOR_AGENTS as readonly string[]).includes(agent)) return juniorAnswer(conv, rng, citations);
  if ((REVIEW_AGENTS as readonly string[]).includes(agent)) return reviewAnswer(conv, rng);
  switch (agent) {
    case 'Supervisor':
      return supervisorAnswer(conv, rng);
    case 'HypothesisRefiner':
      return refinerAnswer(conv, rng, citations);
    case 'ProtocolDesigner':
      return protocolAnswer(conv, rng, citations);
    case 'PrincipalInvestigator':
      return principalAnswer(conv, rng);
    default:
      return genericAnswer(conv, rng, enforcedFormat(req) !== null, enforcedFormat(req)?.schema);
  }
}

/** The JSON the request's response_format makes the server produce: any JSON (json_object) or a schema's (json_schema); null for none. */
function enforcedFormat(req: SimChatRequest): { schema?: unknown } | null {
  const f = req.response_format as { type?: string; json_schema?: { schema?: unknown } } | null | undefined;
  if (f?.type === 'json_object') return {};
  if (f?.type === 'json_schema') return f.json_schema?.schema === undefined ? {} : { schema: f.json_schema.schema };
  return null;
}

function formatJson(value: object, rng: SeededRandom, opts: ResponderOptions): string {
  const json = JSON.stringify(value, null, rng.chance(0.5) ? 2 : undefined);
  if (opts.truncateJson) return json.slice(0, Math.max(1, Math.floor(json.length * 0.6)));
  if (!opts.jsonNoise) return json;
  const r = rng.next();
  if (r < 0.2) return `\`\`\`json\n${json}\n\`\`\``;
  if (r < 0.3) return `Here is my answer as JSON.\n${json}`;
  return json;
}
