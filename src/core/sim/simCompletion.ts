import { seededRandom } from './seededRandom';
import { messageText, type SimChatRequest } from './simRequest';
import type { SimAnswer } from './simResponder';
import { tokenize } from './textFeatures';

/** Marks every simulated response, so nothing downstream mistakes it for a real model. */
export const SIM_FINGERPRINT = 'rollout-lab-simulated';

interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: Array<{ token: string; logprob: number; bytes: number[] }>;
}

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** The text whose tokens the answer "generated": the content, or the tool-call arguments. */
function generatedText(answer: SimAnswer): string {
  return answer.content ?? answer.toolCalls.map((c) => c.arguments).join('');
}

function usageOf(req: SimChatRequest, answer: SimAnswer): Usage {
  const promptText = req.messages.map(messageText).join('\n') + (req.tools ? JSON.stringify(req.tools) : '');
  // Each message costs a few framing tokens on real chat templates.
  const prompt = tokenize(promptText).length + 4 * req.messages.length;
  const completion = Math.max(1, tokenize(generatedText(answer)).length);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

const ALTERNATIVES = [' the', ',', ' a', ' of', '.', ' and', ' to', ' in'];

/** Plausible per-token logprobs: mostly confident, some uncertain, reproducible per answer. */
function logprobsOf(answer: SimAnswer, topN: number): TokenLogprob[] {
  const rng = seededRandom(answer.digest, 'logprobs');
  const bytes = (s: string): number[] => Array.from(Buffer.from(s, 'utf8'));
  return tokenize(generatedText(answer)).map((token) => {
    const logprob = -Math.round(rng.next() ** 3 * 4 * 10_000) / 10_000;
    const top = [{ token, logprob, bytes: bytes(token) }];
    for (let i = 1; i < topN; i++) {
      const alt = ALTERNATIVES[(i - 1) % ALTERNATIVES.length]!;
      top.push({ token: alt, logprob: logprob - 1 - i - rng.next(), bytes: bytes(alt) });
    }
    return { token, logprob, bytes: bytes(token), top_logprobs: topN > 0 ? top : [] };
  });
}

function finishReason(answer: SimAnswer): 'tool_calls' | 'stop' {
  return answer.toolCalls.length ? 'tool_calls' : 'stop';
}

function toolCallsOf(answer: SimAnswer): Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> {
  return answer.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
}

function header(req: SimChatRequest, answer: SimAnswer, object: string): Record<string, unknown> {
  return {
    id: `chatcmpl-sim-${answer.digest.slice(0, 24)}`,
    object,
    created: Math.floor(Date.now() / 1000),
    model: req.model,
    system_fingerprint: SIM_FINGERPRINT,
  };
}

/** A non-streaming chat.completion object. */
export function completionBody(req: SimChatRequest, answer: SimAnswer): Record<string, unknown> {
  const calls = toolCallsOf(answer);
  return {
    ...header(req, answer, 'chat.completion'),
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: answer.content, refusal: null, ...(calls.length ? { tool_calls: calls } : {}) },
        finish_reason: finishReason(answer),
        logprobs: req.logprobs ? { content: logprobsOf(answer, req.top_logprobs ?? 0), refusal: null } : null,
        // As vLLM answers return_token_ids: one id per generated token (the simulator's ids, not any real vocabulary's).
        ...(req.return_token_ids ? { token_ids: tokenize(generatedText(answer)).map(tokenId) } : {}),
      },
    ],
    usage: usageOf(req, answer),
  };
}

/**
 * The same answer as chat.completion.chunk objects: a role chunk, content (or
 * tool-call argument) pieces of a few tokens, a finish chunk, then a usage chunk.
 */
export function completionChunks(req: SimChatRequest, answer: SimAnswer): Array<Record<string, unknown>> {
  const head = header(req, answer, 'chat.completion.chunk');
  const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    ...head,
    choices: [{ index: 0, delta, finish_reason: null, logprobs: null, ...extra }],
  });
  const out = [chunk({ role: 'assistant', content: answer.content === null ? null : '' })];
  const lps = req.logprobs ? logprobsOf(answer, req.top_logprobs ?? 0) : null;
  const tokens = tokenize(generatedText(answer));
  const PIECE = 4;
  if (answer.content !== null) {
    for (let i = 0; i < tokens.length; i += PIECE) {
      const lp = lps ? { logprobs: { content: lps.slice(i, i + PIECE), refusal: null } } : {};
      out.push(chunk({ content: tokens.slice(i, i + PIECE).join('') }, lp));
    }
  } else {
    answer.toolCalls.forEach((c, index) => {
      out.push(chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }));
      const argTokens = tokenize(c.arguments);
      for (let i = 0; i < argTokens.length; i += PIECE) {
        out.push(chunk({ tool_calls: [{ index, function: { arguments: argTokens.slice(i, i + PIECE).join('') } }] }));
      }
    });
  }
  out.push(chunk({}, { finish_reason: finishReason(answer) }));
  out.push({ ...head, choices: [], usage: usageOf(req, answer) });
  return out;
}

/** A stable id for a simulator token (FNV-1a, folded into a 32k vocabulary). */
function tokenId(token: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < token.length; i++) h = Math.imul(h ^ token.charCodeAt(i), 0x01000193) >>> 0;
  return h % 32_000;
}
