import { ROLE_MARKER_RE } from '../graph/researchLab/outputs';
import { parseJudgeKeys } from '../reward/judgeSchema';
import { messageText, type SimChatRequest } from './simRequest';
import { labelledSections, sectionMatching, sentences } from './textFeatures';

/** What the simulator understands of a request: who is asking, about what, and how far along. */
export interface SimConversation {
  /** From the `[agent: Name]` marker in a system message; null for a user's own graph without one. */
  agent: string | null;
  system: string;
  /** Every user message, in order. */
  userText: string;
  lastUser: string;
  /** The research question (a "goal"/"question" section, else the first sentence). */
  goal: string;
  /** The material to ground on (a "context"/"abstract" section, else the rest of the user text). */
  context: string;
  /** Tool results that came after the last user message: the agent's current tool loop. */
  toolResults: string[];
  /** Lines starting "Previous review": how many review rounds already happened. */
  revisions: number;
  /** Hypotheses listed as `[0] ...`, `[1] ...` lines. */
  hypotheses: Array<{ index: number; text: string }>;
  judgeKeys: string[] | null;
}

export function readConversation(req: SimChatRequest): SimConversation {
  const system = req.messages
    .filter((m) => m.role === 'system' || m.role === 'developer')
    .map(messageText)
    .join('\n');
  let lastUserIdx = -1;
  req.messages.forEach((m, i) => {
    if (m.role === 'user') lastUserIdx = i;
  });
  const users = req.messages.filter((m) => m.role === 'user').map(messageText);
  const userText = users.join('\n\n');
  const lastUser = users.at(-1) ?? '';
  const toolResults = req.messages
    .slice(lastUserIdx + 1)
    .filter((m) => m.role === 'tool')
    .map(messageText);
  const sections = labelledSections(userText);
  const goal =
    sectionMatching(sections, /\b(goal|question|task|objective)\b/)?.split('\n')[0]?.trim() ||
    sentences(lastUser)[0] ||
    lastUser.split('\n')[0]!.trim();
  const context = sectionMatching(sections, /\b(context|abstract|background|evidence)\b/) ?? userText.replace(goal, '').trim();
  const hypotheses: SimConversation['hypotheses'] = [];
  for (const m of userText.matchAll(/^\s*\[(\d+)\]\s+(.+)$/gm)) hypotheses.push({ index: Number(m[1]), text: m[2]! });
  const all = `${system}\n${userText}`;
  return {
    agent: ROLE_MARKER_RE.exec(system)?.[1] ?? null,
    system,
    userText,
    lastUser,
    goal,
    context,
    toolResults,
    revisions: (all.match(/^\s*Previous review/gm) ?? []).length,
    hypotheses,
    judgeKeys: parseJudgeKeys(all),
  };
}
