/*
 * The tasks of the ticket-routing lab: short support tickets, each naming one
 * topic word, and the queue that handles that topic. The rule is in the text:
 * a model that reads the ticket can learn it; the ticket's id says nothing.
 * Generated from a seed, so the data file (data/tickets.jsonl) is the same on
 * every machine: `node --import tsx tickets.ts > data/tickets.jsonl`.
 */

/** Each queue and the topic words that belong to it. */
export const QUEUES: Record<string, readonly string[]> = {
  bill: ['refund', 'invoice', 'charge', 'payment', 'price', 'receipt'],
  ship: ['parcel', 'delivery', 'courier', 'tracking', 'package', 'address'],
  tech: ['login', 'crash', 'error', 'password', 'update', 'screen'],
  user: ['username', 'profile', 'signup', 'email', 'settings', 'delete'],
};

export const QUEUE_NAMES = Object.keys(QUEUES);

/** The queue of a ticket: the one whose topic word it names; null when it names none. */
export function queueOf(ticket: string): string | null {
  const words = new Set(ticket.toLowerCase().split(/[^a-z]+/));
  return QUEUE_NAMES.find((q) => QUEUES[q]!.some((w) => words.has(w))) ?? null;
}

export interface TicketRow {
  id: string;
  ticket: string;
  queue: string;
}

/** A small seeded generator (mulberry32), so the tasks never depend on Math.random. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` tickets from `seed`: "Ticket 42: refund", each with its queue; ids t001, t002, ... in order. */
export function generateTickets(seed = 12, count = 300): TicketRow[] {
  const next = random(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  return Array.from({ length: count }, (_, i) => {
    const queue = pick(QUEUE_NAMES);
    const ticket = `Ticket ${10 + Math.floor(next() * 90)}: ${pick(QUEUES[queue]!)}`;
    return { id: `t${String(i + 1).padStart(3, '0')}`, ticket, queue };
  });
}

/** The data file's text: one row a line. */
export function ticketsJsonl(rows: readonly TicketRow[] = generateTickets()): string {
  return rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
}

if (typeof process !== 'undefined' && process.argv[1] && /tickets\.ts$/.test(process.argv[1])) process.stdout.write(ticketsJsonl());
