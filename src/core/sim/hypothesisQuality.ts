import type { SimConversation } from './simConversation';
import { findEntities, keyPhrases } from './textFeatures';

/*
 * How the simulated society tells a good hypothesis from a poor one, by its
 * text alone: the juniors write these cues (juniorHypothesis.ts) and the
 * refiner, designer and judge read them back, so the quality of the hypothesis
 * the Supervisor picks flows through to the reward. A learnt policy can only
 * see the text too, so the cues are plain words it can pick up.
 */

/** Words of a hypothesis that names how the effect comes about. */
export const MECHANISM_CUE = /\b(?:through|via|mediated by|pathway)\b/i;
/** Words of a hypothesis that says what would be measured, and by how much. */
export const MEASURABLE_CUE = /\b(?:measurable|measured|endpoint)\b|\d+(?:\.\d+)?\s*%/i;
/** Words of a hypothesis (or protocol) that will not commit to a claim. */
export const HEDGE_CUE = /\b(?:perhaps|somehow|in some way|might)\b/gi;

/** What the simulator reads in a hypothesis. */
export interface HypothesisReading {
  /** The task's terms the text names, in the task's order of importance. */
  named: string[];
  /** 0..1: two or more of the task's terms named is fully grounded; none is off-topic. */
  grounding: number;
  mechanism: boolean;
  measurable: boolean;
  hedged: boolean;
  /** 0..1: grounding weighs most, then a measurable outcome, a mechanism, and not hedging. */
  quality: number;
}

/** The terms a grounded hypothesis about this task names: its key phrases and the proteins or genes it mentions. */
export function taskTerms(conv: Pick<SimConversation, 'goal' | 'context'>): string[] {
  const text = `${conv.goal}\n${conv.context}`;
  const phrases = keyPhrases(text, conv.goal, 8).map((p) => p.text);
  const entities = findEntities(text).slice(0, 2);
  return [...phrases, ...entities.filter((e) => !phrases.some((p) => p.toLowerCase() === e.toLowerCase()))];
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Whether the text names the term as a whole word (so "IA" is not found inside "via"). */
export function namesTerm(text: string, term: string): boolean {
  return new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegExp(term)}(?![\\p{L}\\p{N}])`, 'iu').test(text);
}

/** 0..1: how much of the task a text is about, by the task's terms it names (`full` or more is all of it). */
export function groundingIn(text: string, terms: readonly string[], full = 2): number {
  return Math.min(1, terms.filter((t) => namesTerm(text, t)).length / full);
}

export function readHypothesis(text: string, terms: readonly string[]): HypothesisReading {
  const named = terms.filter((t) => namesTerm(text, t));
  const grounding = groundingIn(text, terms);
  const mechanism = MECHANISM_CUE.test(text);
  const measurable = MEASURABLE_CUE.test(text);
  const hedged = hedges(text) > 0;
  const quality = 0.45 * grounding + 0.25 * (measurable ? 1 : 0) + 0.15 * (mechanism ? 1 : 0) + 0.15 * (hedged ? 0 : 1);
  return { named, grounding, mechanism, measurable, hedged, quality };
}

/** How many hedging words the text has. */
export function hedges(text: string): number {
  return text.match(HEDGE_CUE)?.length ?? 0;
}

const FALLBACK_PHRASES = ['the exposure', 'the outcome', 'the mechanism'];

/**
 * The three phrases an agent builds on when it works from a hypothesis: the
 * task's terms the hypothesis names, then the hypothesis's own phrases. So a
 * grounded hypothesis leads to a protocol about the task, and an off-topic
 * one to a protocol about whatever it drifted to.
 */
export function phrasesOf(text: string, terms: readonly string[]): [string, string, string] {
  const out = terms.filter((t) => namesTerm(text, t));
  for (const p of keyPhrases(text, text, 8)) {
    if (out.length >= 3) break;
    const lower = p.text.toLowerCase();
    if (!out.some((q) => q.toLowerCase().includes(lower) || lower.includes(q.toLowerCase()))) out.push(p.text);
  }
  for (const f of FALLBACK_PHRASES) if (out.length < 3) out.push(f);
  return [out[0]!, out[1]!, out[2]!];
}
