import type OpenAI from 'openai';

/*
 * A server whose slot context is smaller than the prompt may cut the prompt and
 * still answer 200 (llama.cpp does); the answer then ignores whatever was cut,
 * usually the system prompt's instructions. The only trace is
 * `usage.prompt_tokens`, smaller than the prompt can be.
 */

// Letter runs (with an apostrophe contraction), digit runs and punctuation runs. Subword tokenizers split
// text at least about this finely: on the PubMedQA prompts this count is 0.78–0.98 of o200k's and
// cl100k's (0.66–0.97 on JSON), and tokenizers with smaller vocabularies (Llama 2, Mistral) count more.
const PIECE = /\p{L}+(?:['’]\p{L}+)?|\p{N}+|[^\s\p{L}\p{N}]+/gu;
// Chat templates wrap each message in role markers: at least this many tokens each.
const PER_MESSAGE = 3;
/** Reported below this share of the lower bound, the prompt was cut. */
const TRUNCATED_BELOW = 0.8;
/** Short prompts are never flagged: a few tokens of template difference mean nothing. */
const MIN_MISSING = 48;

/** A conservative lower bound on the tokens of a text, whatever the tokenizer. */
export function estimateTextTokens(text: string): number {
  return text.match(PIECE)?.length ?? 0;
}

/**
 * A lower bound on the prompt tokens of a chat request: the text of every
 * message (tool calls and results included) plus the template's framing.
 * Tool definitions are left out: how a server renders them differs too much.
 */
export function estimatePromptTokens(messages: readonly OpenAI.Chat.ChatCompletionMessageParam[]): number {
  let n = 0;
  for (const m of messages) {
    n += PER_MESSAGE + estimateTextTokens(messageText(m));
    if (m.role === 'assistant') {
      for (const c of m.tool_calls ?? []) if (c.type === 'function') n += estimateTextTokens(`${c.function.name} ${c.function.arguments}`);
    }
  }
  return n;
}

export interface PromptTruncation {
  estimatedTokens: number;
  truncated: boolean;
}

/**
 * Whether the server evidently cut the prompt: it says so itself (llama.cpp's
 * `truncated` in a verbose response), or the prompt tokens it reports are well
 * under the lower bound. A reported 0 or no usage at all proves nothing.
 */
export function promptTruncation(estimatedTokens: number, reportedTokens: number | undefined, serverSaysTruncated = false): PromptTruncation {
  const cut =
    reportedTokens !== undefined &&
    reportedTokens > 0 &&
    reportedTokens < estimatedTokens * TRUNCATED_BELOW &&
    estimatedTokens - reportedTokens >= MIN_MISSING;
  return { estimatedTokens, truncated: serverSaysTruncated || cut };
}

/** llama.cpp reports `truncated: true` on the native response, and inside `__verbose` on the OpenAI-shaped one. */
export function serverReportsTruncation(body: object): boolean {
  const b = body as { truncated?: unknown; __verbose?: { truncated?: unknown } };
  return b.truncated === true || b.__verbose?.truncated === true;
}

function messageText(m: OpenAI.Chat.ChatCompletionMessageParam): string {
  const c = m.content;
  if (typeof c === 'string') return c;
  if (!Array.isArray(c)) return '';
  return c.map((p) => ('text' in p && typeof p.text === 'string' ? p.text : '')).join(' ');
}
