import { findNodeAtLocation, getNodeValue, modify, parseTree, type Edit } from 'jsonc-parser';

/**
 * Prompts written inline in lab.json (`agents.<Agent>.promptText`), found in
 * the text as it is in the editor, saved or not. Pure: no vscode.
 */

/** One agent's inline prompt and where it sits in the lab.json text (offsets into it). */
export interface InlinePrompt {
  agent: string;
  /** The prompt as the runner reads it: the parsed string value. */
  text: string;
  /** Offset of the `"promptText"` key. */
  keyOffset: number;
  /** Offset and length of the string value, quotes included. */
  valueOffset: number;
  valueLength: number;
}

const PARSE_OPTIONS = { allowTrailingComma: true, disallowComments: false } as const;

/**
 * Every agent with a string `promptText`, in file order. Text that does not
 * parse yields what can be read of it: a half-typed config shows no lens
 * rather than an error.
 */
export function findInlinePrompts(labJson: string): InlinePrompt[] {
  const root = parseTree(labJson, [], PARSE_OPTIONS);
  const agents = root ? findNodeAtLocation(root, ['agents']) : undefined;
  if (!agents || agents.type !== 'object') return [];
  const out: InlinePrompt[] = [];
  for (const prop of agents.children ?? []) {
    const [key, value] = prop.children ?? [];
    if (!key || key.type !== 'string' || !value || value.type !== 'object') continue;
    const agent = getNodeValue(key) as string;
    const text = findNodeAtLocation(value, ['promptText']);
    if (!text || text.type !== 'string' || !text.parent?.children?.[0]) continue;
    out.push({ agent, text: getNodeValue(text) as string, keyOffset: text.parent.children[0].offset, valueOffset: text.offset, valueLength: text.length });
  }
  return out;
}

/** The edits that set `agents.<agent>.promptText` to `prompt` in the lab.json text, keeping its formatting and comments. */
export function setInlinePromptEdits(labJson: string, agent: string, prompt: string, opts: { tabSize?: number; insertSpaces?: boolean; eol?: string } = {}): Edit[] {
  if (!findInlinePrompts(labJson).some((p) => p.agent === agent)) {
    throw new Error(`agent "${agent}" has no inline "promptText" in lab.json — restore its prompt file instead`);
  }
  return modify(labJson, ['agents', agent, 'promptText'], prompt, {
    formattingOptions: { tabSize: opts.tabSize ?? 2, insertSpaces: opts.insertSpaces ?? true, eol: opts.eol ?? '\n' },
  });
}
