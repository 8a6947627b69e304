import { seededRandom } from '../../data/seededRandom';
import { hypothesisFeatures } from '../../policy/features';
import type { BanditLearner } from '../../policy/learner';

/*
 * A synthetic Supervisor problem with a known best arm, to measure a learner's
 * regret (the benchmark and the tests): each round offers K hypothesis texts,
 * each built around one "arm" — a characteristic phrase — buried in filler
 * words, proposed by a random junior. Choosing a text earns a Bernoulli reward
 * with its arm's probability; one arm is clearly best. Regret is counted on
 * the probabilities (pseudo-regret), so it measures the choices, not the luck
 * of the draws.
 */

const ARMS: ReadonlyArray<{ phrase: string; p: number }> = [
  { phrase: 'kinase inhibitor dosing', p: 0.8 },
  { phrase: 'sleep deprivation', p: 0.45 },
  { phrase: 'gut microbiome shift', p: 0.35 },
  { phrase: 'vascular stiffness', p: 0.3 },
  { phrase: 'dopamine receptor density', p: 0.25 },
  { phrase: 'statin exposure', p: 0.2 },
];
const FILLER = (
  'the a of in with and patients cohort trial effect outcome risk baseline increase decrease measured marker level ' +
  'protein gene expression response clinical change associated reduced higher lower adults children women men ' +
  'months weeks during after before through pathway mechanism signal severity onset progression treatment control'
).split(' ');
const AGENTS = ['Geneticist', 'Pharmacologist', 'Neurologist'];

export interface SyntheticRound {
  candidates: Array<{ agent: string; text: string }>;
  /** Each candidate's reward probability. */
  probabilities: number[];
}

/** The rounds of one environment seed: the same seed gives the same rounds for every policy. */
export function syntheticRounds(seed: number, candidatesPerRound = 4): () => SyntheticRound {
  const rng = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;
  return () => {
    const arms = [...ARMS.keys()];
    for (let i = arms.length - 1; i > 0; i--) {
      const j = Math.floor(rng() * (i + 1));
      [arms[i], arms[j]] = [arms[j]!, arms[i]!];
    }
    const chosen = arms.slice(0, Math.min(candidatesPerRound, arms.length));
    const candidates = chosen.map((a) => {
      const filler = Array.from({ length: 5 + Math.floor(rng() * 6) }, () => pick(FILLER));
      filler.splice(Math.floor(rng() * (filler.length + 1)), 0, ARMS[a]!.phrase);
      return { agent: pick(AGENTS), text: filler.join(' ') };
    });
    return { candidates, probabilities: chosen.map((a) => ARMS[a]!.p) };
  };
}

export interface RegretRun {
  /** Cumulative pseudo-regret after each round (index t = after t+1 rounds). */
  cumulative: Float64Array;
  /** Rounds in which the best offered candidate was chosen. */
  bestChosen: number;
}

/**
 * Plays `rounds` rounds; `learner` null is the uniform random policy. The
 * environment seed fixes the candidates and rewards' draws; the policy has its
 * own random stream.
 */
export function playSynthetic(
  learner: BanditLearner | null,
  opts: { rounds: number; seed: number; epsilon?: number; candidatesPerRound?: number },
): RegretRun {
  const next = syntheticRounds(opts.seed, opts.candidatesPerRound);
  const rewardRng = seededRandom(opts.seed ^ 0x5bd1e995);
  const policyRng = seededRandom(opts.seed ^ 0x27d4eb2f);
  const cumulative = new Float64Array(opts.rounds);
  let total = 0;
  let bestChosen = 0;
  for (let t = 0; t < opts.rounds; t++) {
    const round = next();
    const draw = rewardRng();
    let index: number;
    if (learner) {
      const xs = round.candidates.map((c) => hypothesisFeatures(c.text, c.agent, learner.dim));
      index = learner.choose(xs, policyRng, opts.epsilon ?? 0).index;
      learner.update(xs[index]!, draw < round.probabilities[index]! ? 1 : 0);
    } else {
      index = Math.floor(policyRng() * round.candidates.length);
    }
    const best = Math.max(...round.probabilities);
    if (round.probabilities[index] === best) bestChosen++;
    total += best - round.probabilities[index]!;
    cumulative[t] = total;
  }
  return { cumulative, bestChosen };
}
