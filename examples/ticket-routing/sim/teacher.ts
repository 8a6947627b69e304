/*
 * The simulated teacher: canned answers for the lab's simulated endpoint
 * ("simulator": { "module": "sim/teacher.ts" }). It is not a model. For the
 * Router it reads the ticket's topic word and answers its queue, except for
 * about one ticket in six, where it names another queue (a noisy teacher, so
 * the SFT phase's reward threshold has something to leave out). The Responder
 * gets a fixed acknowledgement. Rollouts it answers are marked simulated.
 */
import { QUEUE_NAMES, queueOf } from '../tickets';

interface CannedRequest {
  agent: string | null;
  messages: Array<{ role: string; content: string }>;
}

/** A stable hash of the ticket, so the teacher gives the same answer to the same ticket. */
function hash(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619) >>> 0;
  return h;
}

export default function answer({ agent, messages }: CannedRequest): string | undefined {
  const last = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  if (agent === 'Router') {
    const right = queueOf(last) ?? 'user';
    const h = hash(last);
    if (h % 6 !== 0) return right;
    const others = QUEUE_NAMES.filter((q) => q !== right);
    return others[(h >>> 8) % others.length];
  }
  if (agent === 'Responder') {
    const queue = /Queue: (\S+)/.exec(last)?.[1] ?? 'none';
    return `Thanks, the ${queue} team has your ticket.`;
  }
  return undefined;
}
