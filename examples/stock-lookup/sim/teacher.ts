/*
 * The simulated teacher: canned answers for the lab's simulated endpoint
 * ("simulator": { "module": "sim/teacher.ts" }). It is not a model. For the
 * Clerk it reads the question and makes the call it asks for, except for about
 * one question in six, where it asks for another item or the other tool (a
 * noisy teacher, so the SFT phase's reward threshold has something to leave
 * out). The Responder repeats the lookup result. Rollouts it answers are
 * marked simulated.
 */
import { ITEMS, TOOLS, callOf } from '../catalogue';

interface CannedRequest {
  agent: string | null;
  messages: Array<{ role: string; content: string }>;
}

/** A stable hash of the question, so the teacher gives the same answer to the same question. */
function hash(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619) >>> 0;
  return h;
}

export default function answer({ agent, messages }: CannedRequest) {
  const last = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  if (agent === 'Clerk') {
    const right = callOf(last);
    if (!right) return 'Sorry, I cannot tell what you are looking for.';
    const h = hash(last);
    const wrong = h % 6 === 0;
    const tool = wrong && h % 12 === 0 ? TOOLS.find((t) => t !== right.tool)! : right.tool;
    const item = wrong && h % 12 !== 0 ? ITEMS[(ITEMS.indexOf(right.item) + 1 + ((h >>> 8) % (ITEMS.length - 1))) % ITEMS.length]! : right.item;
    return { tool_calls: [{ name: tool, arguments: { item } }] };
  }
  if (agent === 'Responder') {
    const found = /Lookup: (.+)$/m.exec(last)?.[1] ?? 'nothing found';
    return found === 'nothing found' ? 'Sorry, I could not find that item.' : `Thanks for asking: ${found}.`;
  }
  return undefined;
}
