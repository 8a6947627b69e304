import { jsonObjectsIn } from '../llm/structuredOutput';
import { schemaInstance } from './schemaInstance';
import type { SeededRandom } from './seededRandom';
import type { SimConversation } from './simConversation';
import { keyPhrases, questionToClaim, sentences } from './textFeatures';

const KEYS_RE =
  /\b(?:keys|fields|properties)\b[^:\n]{0,20}:\s*((?:["'`]?[A-Za-z_][\w-]*["'`]?(?:\s*,\s*(?:and\s+)?|\s+and\s+))+["'`]?[A-Za-z_][\w-]*["'`]?)/i;

/**
 * The answer for a role the simulator does not know (a user's own graph): a
 * value of the schema the request's response_format enforces; else JSON when
 * the prompt asks for it (shaped like an example object in the prompt, or with
 * the keys it lists); else a short answer built from the last user message.
 */
export function genericAnswer(conv: SimConversation, rng: SeededRandom, wantsJson: boolean, schema?: unknown): string | Record<string, unknown> | unknown[] {
  const phrases = keyPhrases(conv.lastUser, conv.goal, 4).map((p) => p.text);
  const [a = 'the question', b = 'the evidence', c = 'the context'] = phrases;
  const sentence = sentences(conv.context).find((s) => !s.endsWith('?') && !/:\s/.test(s.slice(0, 20)));
  const text =
    `Regarding ${a}: ${sentence ? sentence.replace(/\.$/, '') : cap(questionToClaim(conv.goal))}. ` +
    `The main factors to weigh are ${b} and ${c}; ${rng.pick(['the evidence so far is suggestive', 'more data would settle it', 'a controlled comparison is the next step'])}.`;
  // A schema the request enforces shapes the answer, as a grammar-constrained server would.
  if (schema !== undefined) {
    const value = schemaInstance(schema, text, rng);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : JSON.stringify(value);
  }
  const prompt = `${conv.system}\n${conv.userText}`;
  const example = jsonObjectsIn(prompt).at(-1);
  const listed = KEYS_RE.exec(prompt)?.[1]
    ?.split(/\s*,\s*(?:and\s+)?|\s+and\s+/)
    .map((k) => k.replace(/["'`]/g, '').trim())
    .filter(Boolean);
  if (!wantsJson && !example && !listed && !/\bjson\b/i.test(prompt)) return text;
  if (example) return shapedLike(example, text, rng);
  if (listed?.length) return Object.fromEntries(listed.map((k, i) => [k, i === 0 ? text : (phrases[i] ?? a)]));
  return { answer: text };
}

/** A value of the same shape as the example, filled with this answer. */
function shapedLike(example: Record<string, unknown>, text: string, rng: SeededRandom): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let first = true;
  for (const [k, v] of Object.entries(example)) {
    if (typeof v === 'number') out[k] = Math.round(rng.next() * 100) / 100;
    else if (typeof v === 'boolean') out[k] = rng.chance(0.5);
    else if (Array.isArray(v)) out[k] = [text.split(';')[0]];
    else if (v !== null && typeof v === 'object') out[k] = shapedLike(v as Record<string, unknown>, text, rng);
    else out[k] = first ? text : text.split(';')[1]?.trim() || text;
    if (typeof v === 'string') first = false;
  }
  return out;
}

const cap = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);
