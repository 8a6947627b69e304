import { jsonObjectsIn } from '../llm/structuredOutput';
import { JUDGE_SCALE } from '../reward/judgeSchema';
import type { SeededRandom } from './seededRandom';
import type { SimConversation } from './simConversation';
import { groundingIn, hedges, taskTerms } from './hypothesisQuality';
import { contentWords, keyPhrases, labelledSections, overlap, sectionMatching } from './textFeatures';

/** What the judge can see in a protocol; better protocols score higher on every criterion. */
interface ProtocolFeatures {
  found: boolean;
  /** 0..1: numbers, steps, controls and endpoints named. */
  specificity: number;
  /** 0..1: long enough to be a protocol at all. */
  substance: number;
  /** 0..1: share of the protocol's words that the context supports. */
  grounded: number;
  budget: number | null;
  /** Says it will explore "in some way" instead of testing a claim. */
  hedged: boolean;
  /** 0..1: names the research question's own terms (taskTerms; three for all of it), so it studies what was asked. */
  onQuestion: number;
  /** Names a primary endpoint. */
  endpoint: boolean;
}

const RIGOUR_WORDS = /\b(control|controls|blind|blinded|randomi[sz]ed?|endpoint|power|pre-?register|replicat|placebo|baseline|assay)\w*/gi;

function protocolFeatures(conv: SimConversation): ProtocolFeatures {
  const sections = labelledSections(conv.userText);
  const context = sectionMatching(sections, /\b(context|abstract|background|evidence)\b/) ?? conv.context;
  const objects = jsonObjectsIn(conv.userText);
  const obj = [...objects].reverse().find((o) => Array.isArray(o.steps) || 'final_protocol' in o || 'title' in o);
  let text: string;
  let steps: number;
  let budget: number | null = null;
  if (obj) {
    const inner = (typeof obj.final_protocol === 'object' && obj.final_protocol ? obj.final_protocol : obj) as Record<string, unknown>;
    text = JSON.stringify(obj);
    steps = Array.isArray(inner.steps) ? inner.steps.length : text.split(/[.;]\s/).length;
    budget = typeof inner.budget_usd === 'number' ? inner.budget_usd : Number(inner.budget_usd) || null;
  } else {
    text = sectionMatching(sections, /protocol/) ?? '';
    steps = (text.match(/^\s*(?:\d+[.)]|[-*•])\s+/gm) ?? []).length || text.split(/[.;]\s/).length;
  }
  const words = text.split(/\s+/).filter(Boolean).length;
  if (words < 3) return { found: false, specificity: 0, substance: 0, grounded: 0, budget, hedged: false, onQuestion: 0, endpoint: false };
  const numbers = (text.match(/\d+(?:\.\d+)?/g) ?? []).length;
  const rigour = new Set((text.match(RIGOUR_WORDS) ?? []).map((w) => w.toLowerCase().slice(0, 6))).size;
  return {
    found: true,
    specificity: Math.min(1, 0.35 * Math.min(1, numbers / 8) + 0.35 * Math.min(1, steps / 7) + 0.3 * Math.min(1, rigour / 5)),
    substance: Math.min(1, words / 150),
    // sqrt spreads the typical small overlaps (0.05–0.3) over a usable range.
    grounded: Math.sqrt(overlap(contentWords(text), contentWords(context))),
    budget,
    hedged: hedges(text) > 0,
    onQuestion: groundingIn(text, taskTerms(conv), 3),
    endpoint: /primary endpoint/i.test(text),
  };
}

/**
 * Scores for the judge's criteria in the flat format of `judgeOutputSchema`:
 * each key an integer from 0 to JUDGE_SCALE, plus "rationale". Derived from the
 * protocol's specificity, substance and overlap with the context, with a little noise.
 */
export function judgeAnswer(conv: SimConversation, rng: SeededRandom, keys: string[]): Record<string, number | string> {
  const p = protocolFeatures(conv);
  const q = 0.35 * p.specificity + 0.25 * p.substance + 0.4 * p.grounded;
  const cost = p.budget === null ? 0.5 : Math.min(1, p.budget / 300_000);
  // A protocol that hedges has not committed to a test: less clear, less feasible, less likely to matter.
  const hedge = p.hedged ? 0.08 : 0;
  // A protocol about something other than the question asked matters little for it, however well designed.
  const relevance = 0.2 + 0.8 * p.onQuestion;
  // Without a primary endpoint nobody can tell whether the study worked.
  const endpoint = p.endpoint ? 0 : 0.1;
  const base: Record<string, number> = p.found
    ? {
        novelty: relevance * (0.35 + 0.3 * (1 - p.grounded) * p.substance + 0.25 * q),
        feasibility: 0.45 + 0.4 * p.specificity - 0.1 * cost - hedge,
        impact: relevance * (0.35 + 0.55 * q) - hedge - endpoint,
        clarity: 0.25 + 0.7 * p.specificity - 2 * hedge - endpoint,
        // Words shared with the context ground a protocol only when it is about the question.
        groundedness: 0.15 + 0.8 * p.grounded * relevance,
        efficiency: 0.45 + 0.35 * (1 - cost) + 0.1 * p.specificity,
      }
    : {};
  const out: Record<string, number | string> = {};
  for (const key of keys) {
    const b = base[key] ?? (p.found ? 0.3 + 0.6 * q : 0.1);
    const noisy = b + (rng.next() - 0.5) * 0.12;
    out[key] = Math.round(Math.min(1, Math.max(0, noisy)) * JUDGE_SCALE);
  }
  const topic = keyPhrases(`${conv.goal}\n${conv.context}`, conv.goal, 1)[0]?.text ?? 'the question';
  out.rationale = p.found
    ? `The protocol on ${topic} is ${p.specificity > 0.6 ? 'specific and measurable' : 'only loosely specified'}, ` +
      `${p.grounded > 0.4 ? 'well grounded in' : 'weakly tied to'} the context, and ${p.substance > 0.6 ? 'complete' : 'brief'}.`
    : 'No protocol was given, so every criterion scores low.';
  return out;
}
