import type { ChatMessage, ChatToolCall } from './chatMessages';
import { codicon, el, textBlock } from './dom';
import { prettyJson, shortId } from './format';

const ROLES: Record<string, { label: string; icon: string }> = {
  system: { label: 'System', icon: 'settings-gear' },
  developer: { label: 'Developer', icon: 'settings-gear' },
  user: { label: 'User', icon: 'account' },
  assistant: { label: 'Assistant', icon: 'hubot' },
  tool: { label: 'Tool', icon: 'tools' },
};

export interface ConversationLinks {
  /** The tool span that ran a call, with its result, when the trace has it. */
  toolSpan(callId: string): { index: number; result: string | null; error: string | null } | null;
  selectSpan(index: number): void;
}

/**
 * A model call as a conversation: the messages it was sent, then the answer
 * it gave, each with its role; tool calls show their arguments and, when the
 * trace holds them, their results.
 */
export function renderConversation(input: ChatMessage[] | null, output: ChatMessage[] | null, links: ConversationLinks): HTMLElement {
  const box = el('div', 'te-conversation');
  const answered = new Set<string>();
  for (const m of [...(input ?? []), ...(output ?? [])]) if (m.role === 'tool' && m.toolCallId) answered.add(m.toolCallId);
  if (input?.length) for (const m of input) box.append(renderMessage(m, answered, links));
  if (output?.length) {
    box.append(el('div', 'te-conv-divider', 'Response'));
    for (const m of output) box.append(renderMessage(m, answered, links));
  }
  return box;
}

function renderMessage(m: ChatMessage, answered: Set<string>, links: ConversationLinks): HTMLElement {
  const known = ROLES[m.role];
  const box = el('div', `te-msg te-role-${known ? m.role : 'other'}`);
  box.dataset.role = m.role;
  const head = el('div', 'te-msg-head');
  head.append(codicon(known?.icon ?? 'comment'), el('span', 'te-msg-role', known?.label ?? m.role));
  if (m.name) head.append(el('span', 'te-muted', m.name));
  if (m.toolCallId) head.append(el('span', 'te-muted', `answers ${shortId(m.toolCallId, 14)}`));
  box.append(head);
  if (m.content) box.append(textBlock(m.role === 'tool' ? prettyJson(m.content) : m.content, 'te-pre te-msg-body'));
  else if (!m.toolCalls.length) box.append(el('div', 'te-muted te-msg-empty', '(empty)'));
  for (const c of m.toolCalls) box.append(renderToolCall(c, answered, links));
  return box;
}

function renderToolCall(c: ChatToolCall, answered: Set<string>, links: ConversationLinks): HTMLElement {
  const box = el('div', 'te-toolcall');
  box.dataset.tool = c.name;
  const head = el('div', 'te-toolcall-head');
  head.append(codicon('symbol-method'), el('span', 'te-toolcall-name', c.name));
  if (c.id) head.append(el('span', 'te-muted', shortId(c.id, 14)));
  const span = c.id ? links.toolSpan(c.id) : null;
  if (span) {
    const go = el('button', 'te-link', 'Go to tool span');
    go.type = 'button';
    go.addEventListener('click', () => links.selectSpan(span.index));
    head.append(go);
  }
  box.append(head, el('div', 'te-sub', 'Arguments'), textBlock(prettyJson(c.arguments), 'te-pre te-toolcall-args'));
  if (c.id && answered.has(c.id)) {
    box.append(el('div', 'te-muted te-sub', 'Result: in the tool message'));
  } else if (span && (span.result !== null || span.error !== null)) {
    box.append(el('div', 'te-sub', span.error !== null ? 'Error' : 'Result'));
    box.append(textBlock(prettyJson(span.error ?? span.result ?? ''), `te-pre te-toolcall-result${span.error !== null ? ' te-error-text' : ''}`));
  }
  return box;
}
