/*
 * The shop of the stock-lookup lab: its catalogue (each item's price and how
 * many are in stock), the two lookup tools' results, and the seeded question
 * generator. A question names one item and asks either its price or its
 * stock, in one of several phrasings; the right call follows from the text,
 * and the answer is what that call returns. Generated from a seed, so the data
 * file is the same on every machine:
 * `node --import tsx catalogue.ts > data/questions.jsonl`.
 */

/** Every item: its price in euros and how many are in stock (prices and counts all distinct, so a wrong call never returns the right answer). */
export const CATALOGUE: Record<string, { price: number; stock: number }> = {
  mug: { price: 6.5, stock: 14 },
  lamp: { price: 32, stock: 3 },
  kettle: { price: 24.9, stock: 8 },
  teapot: { price: 18, stock: 5 },
  blanket: { price: 45, stock: 11 },
  pillow: { price: 15.5, stock: 20 },
  candle: { price: 4.2, stock: 37 },
  vase: { price: 27, stock: 2 },
  clock: { price: 39.9, stock: 6 },
  mirror: { price: 58, stock: 4 },
  basket: { price: 12.8, stock: 9 },
  rug: { price: 79, stock: 1 },
  towel: { price: 9.9, stock: 25 },
  apron: { price: 11, stock: 13 },
  jar: { price: 3.6, stock: 42 },
  bowl: { price: 7.4, stock: 18 },
};

export const ITEMS = Object.keys(CATALOGUE);
export type Tool = 'get_price' | 'get_stock';
export const TOOLS: readonly Tool[] = ['get_price', 'get_stock'];

/** What a tool returns for an item; an unknown item is an error that lists the items. */
export function lookup(tool: Tool, item: string): string {
  const entry = CATALOGUE[item.trim().toLowerCase()];
  if (!entry) throw new Error(`no item "${item}" in the catalogue; items: ${ITEMS.join(', ')}`);
  return tool === 'get_price' ? `${entry.price.toFixed(2)} EUR` : `${entry.stock} in stock`;
}

/** The phrasings of each kind of question; {item} is the item. */
const PHRASINGS: Record<Tool, readonly string[]> = {
  get_price: ['How much is the {item}?', 'What does the {item} cost?', 'Price of the {item}, please.', 'What is the price of the {item}?'],
  get_stock: ['How many of the {item} do you have?', 'Is the {item} in stock?', 'Do you still have the {item}?', 'How many {item} units are left?'],
};

/** The call a question asks for, read from its text: the tool its phrasing asks about and the item it names; null for a question of another shape. */
export function callOf(question: string): { tool: Tool; item: string } | null {
  const item = ITEMS.find((i) => question.toLowerCase().split(/[^a-z]+/).includes(i));
  const tool = item ? TOOLS.find((t) => PHRASINGS[t].includes(question.replace(item, '{item}'))) : undefined;
  return item && tool ? { tool, item } : null;
}

export interface QuestionRow {
  id: string;
  question: string;
  /** The gold call, and what it returns: the answer the reward compares with. */
  tool: Tool;
  item: string;
  answer: string;
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

/** `count` questions from `seed`, ids q001, q002, ... in order. */
export function generateQuestions(seed = 7, count = 320): QuestionRow[] {
  const next = random(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  return Array.from({ length: count }, (_, i) => {
    const tool = pick(TOOLS);
    const item = pick(ITEMS);
    const question = pick(PHRASINGS[tool]).replace('{item}', item);
    return { id: `q${String(i + 1).padStart(3, '0')}`, question, tool, item, answer: lookup(tool, item) };
  });
}

/** The data file's text: one row a line. */
export function questionsJsonl(rows: readonly QuestionRow[] = generateQuestions()): string {
  return rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
}

if (typeof process !== 'undefined' && process.argv[1] && /catalogue\.ts$/.test(process.argv[1])) process.stdout.write(questionsJsonl());
