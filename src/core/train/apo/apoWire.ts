/*
 * The wire format of prompt optimisation's conversation with a critic and an
 * editor model: the markers that open their system prompts, the block a prompt
 * is quoted in, and the editor's request line. Any model (the simulated endpoint
 * included) can recognise these calls and read the prompt back.
 */

/** First line of the critic's system prompt. */
export const PROMPT_CRITIC_MARKER = '[rollout-lab: prompt critic]';
/** First line of the editor's system prompt. */
export const PROMPT_EDITOR_MARKER = '[rollout-lab: prompt editor]';

const OPEN = '<<<PROMPT';
const CLOSE = 'PROMPT>>>';

/** A prompt quoted in a critic or editor message, between lines the model can tell apart from the prompt. */
export function promptBlock(text: string): string {
  return `${OPEN}\n${text.replace(/\s+$/, '')}\n${CLOSE}`;
}

/** Every prompt quoted with promptBlock in `text`, in order. */
export function promptsInBlocks(text: string): string[] {
  const out: string[] = [];
  const re = new RegExp(`^${OPEN}\\n([\\s\\S]*?)\\n${CLOSE}$`, 'gm');
  for (const m of text.matchAll(re)) out.push(m[1]!);
  return out;
}

/** The editor's request line for `n` rewrites; the simulator reads `n` back from it. */
export function rewriteCountLine(n: number): string {
  return `Write ${n} rewritten prompt${n === 1 ? '' : 's'}.`;
}

const COUNT_RE = /Write (\d+) rewritten prompts?\./;

/** The `n` of a rewriteCountLine found in `text`; null when there is none. */
export function rewriteCountOf(text: string): number | null {
  const m = COUNT_RE.exec(text);
  return m ? Number(m[1]) : null;
}

/** `{name}` and `{{name}}` tokens: slots the graph or the user's code fills in, which a rewrite must keep. */
export const PLACEHOLDER_RE = /\{\{\s*[A-Za-z_][\w.-]*\s*\}\}|\{[A-Za-z_][\w.-]*\}/g;
