import type { SeededRandom } from './seededRandom';

/*
 * A simulated junior's hypothesis, of a quality drawn per answer and shown in
 * its wording (the cues hypothesisQuality.ts reads back): on topic it names
 * the task's key phrases, off topic it drifts to generic ones ("Broadly, …
 * overall wellbeing"); it may name a mechanism ("through … pathway"), a
 * measurable outcome ("measurable as a 20% change in … at 12 weeks"), and it
 * may hedge ("Perhaps, in some way, …"). The draws are independent of the
 * agent, so only the text tells a good hypothesis from a poor one.
 */

/** The task's pieces a hypothesis is built from. */
export interface HypothesisSlots {
  a: string;
  b: string;
  c: string;
  entity: string | null;
}

/** How a junior's answer turned out; the chances are per answer. */
export interface HypothesisTraits {
  onTopic: boolean;
  mechanism: boolean;
  measurable: boolean;
  hedged: boolean;
}

const TRAIT_CHANCE = { onTopic: 0.65, mechanism: 0.5, measurable: 0.5, hedged: 0.3 } as const;

/** Where a junior drifts when it loses the thread of the task: topics no PubMedQA abstract is about. */
const OFF_TOPIC = ['general lifestyle', 'overall wellbeing', 'daily routine', 'social support', 'general fitness', 'overall mood', 'seasonal variation', 'screen time'];

type Core = (s: Required<HypothesisSlots>) => string;
const CORES: Record<string, Core[]> = {
  Geneticist: [
    (s) => `Inherited variation in ${s.a} modifies ${s.b}, so carriers of risk alleles near ${s.entity} show a stronger link between ${s.a} and ${s.b}`,
    (s) => `A polygenic score built from loci around ${s.entity} stratifies who shows ${s.b} after ${s.a}`,
  ],
  Pharmacologist: [
    (s) => `Targeting ${s.entity} pharmacologically shifts ${s.b}, with a dose-dependent effect of ${s.a} on ${s.c}`,
    (s) => `Repurposing a drug that lowers ${s.a} reduces ${s.b}`,
  ],
  Neurologist: [
    (s) => `${cap(s.a)} alters ${s.b} at the systems level, before clinical signs show in ${s.c}`,
    (s) => `Longitudinal measures of ${s.a} predict ${s.b} beyond age alone`,
  ],
};
const GENERIC_CORES: Core[] = [(s) => `${cap(s.a)} is causally linked to ${s.b}`, (s) => `Changes in ${s.a} lead to changes in ${s.b}`];

const MECHANISMS: Record<string, (s: Required<HypothesisSlots>) => string> = {
  Geneticist: (s) => `through promoter methylation in the ${s.c} pathway`,
  Pharmacologist: (s) => `through receptor blockade in the ${s.c} pathway`,
  Neurologist: (s) => `through a neuroinflammatory pathway involving ${s.c}`,
};
const GENERIC_MECHANISM = (s: Required<HypothesisSlots>): string => `through a pathway involving ${s.c}`;

const HEDGES = ['Perhaps, in some way, ', 'It might somehow be that '];

export function drawTraits(rng: SeededRandom): HypothesisTraits {
  return {
    onTopic: rng.chance(TRAIT_CHANCE.onTopic),
    mechanism: rng.chance(TRAIT_CHANCE.mechanism),
    measurable: rng.chance(TRAIT_CHANCE.measurable),
    hedged: rng.chance(TRAIT_CHANCE.hedged),
  };
}

export function juniorHypothesisText(agent: string | null, task: HypothesisSlots, traits: HypothesisTraits, rng: SeededRandom): string {
  const s: Required<HypothesisSlots> = traits.onTopic ? { ...task, entity: task.entity ?? task.c } : offTopicSlots(rng);
  let text = rng.pick(CORES[agent ?? ''] ?? GENERIC_CORES)(s);
  if (!traits.onTopic) text = `Broadly, ${lowerFirst(text)}`;
  if (traits.mechanism) text += `, ${(MECHANISMS[agent ?? ''] ?? GENERIC_MECHANISM)(s)}`;
  if (traits.measurable) text += `, measurable as a ${rng.pick([15, 20, 25, 30])}% change in ${s.b} at ${rng.pick([8, 12, 24])} weeks`;
  if (traits.hedged) text = `${rng.pick(HEDGES)}${lowerFirst(text)}`;
  return `${text}.`;
}

function offTopicSlots(rng: SeededRandom): Required<HypothesisSlots> {
  const pool = [...OFF_TOPIC];
  const take = (): string => pool.splice(rng.int(pool.length), 1)[0]!;
  const a = take();
  const b = take();
  const c = take();
  return { a, b, c, entity: a };
}

function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** Lower-cases the first letter unless it starts an acronym ("IL-6", "APOE4"). */
function lowerFirst(s: string): string {
  return /^[A-Z][A-Z0-9]/.test(s) ? s : s.charAt(0).toLowerCase() + s.slice(1);
}
