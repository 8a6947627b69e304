import type { Hypothesis, PrincipalDecision, Protocol, Review, SupervisorDecision } from '../graph/researchLab/outputs';
import { jsonObjectsIn } from '../llm/structuredOutput';
import type { SeededRandom } from './seededRandom';
import { phrasesOf, readHypothesis, taskTerms } from './hypothesisQuality';
import { drawTraits, juniorHypothesisText } from './juniorHypothesis';
import type { SimConversation } from './simConversation';
import {
  findEntities,
  findingPolarity,
  keyPhrases,
  labelledSections,
  questionToClaim,
  sectionMatching,
  sentences,
} from './textFeatures';

/** The pieces of the task an answer is built from. */
interface Facts {
  a: string;
  b: string;
  c: string;
  entity: string | null;
  claim: string;
  firstSentence: string | null;
}

function factsOf(conv: SimConversation, rng: SeededRandom): Facts {
  const phrases = keyPhrases(`${conv.goal}\n${conv.context}`, conv.goal, 8).map((p) => p.text);
  const fallback = ['the exposure', 'the outcome', 'the mechanism'];
  // Keep the best phrase first but vary the rest, so agents and tasks differ.
  const rest = phrases.slice(1);
  const take = (i: number): string => {
    if (!rest.length) return phrases[0] ?? fallback[i]!;
    return rest.splice(rng.int(rest.length), 1)[0]!;
  };
  const a = phrases[0] ?? fallback[0]!;
  return {
    a,
    b: take(1),
    c: take(2),
    entity: findEntities(`${conv.goal}\n${conv.context}`)[0] ?? null,
    claim: questionToClaim(conv.goal),
    firstSentence: sentences(conv.context)[0] ?? null,
  };
}

const cap = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);
const clip = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n - 1).trimEnd()}…` : s);

export function juniorAnswer(conv: SimConversation, rng: SeededRandom, citations: string[]): Hypothesis {
  const f = factsOf(conv, rng);
  const hypothesis = juniorHypothesisText(conv.agent, f, drawTraits(rng), rng);
  const papers = [...citations];
  if (f.firstSentence && (papers.length === 0 || rng.chance(0.5))) papers.push(`Task context: "${clip(f.firstSentence, 110)}"`);
  return { hypothesis, supporting_papers: papers };
}

/** The top pick of the ranking a learnt policy adds to the briefing in bandit mode "advise" (graph/researchLab/supervisorPolicy.ts writes it). */
const ADVICE_RE = /^policy \S+ ranks: \[(\d+)\]/m;

/**
 * A mediocre chooser, so that a learnt policy has room to do better: it does
 * not weigh the hypotheses but takes the first one listed half the time and
 * otherwise any, as a small model with a position bias does. Given a policy's
 * ranking (mode "advise") it mostly follows the top pick.
 */
export function supervisorAnswer(conv: SimConversation, rng: SeededRandom): SupervisorDecision {
  const options = conv.hypotheses.length ? conv.hypotheses : [{ index: 0, text: '' }];
  const advice = ADVICE_RE.exec(conv.userText);
  const advised = advice ? options.find((h) => h.index === Number(advice[1])) : undefined;
  const chosen = advised && rng.chance(0.8) ? advised : rng.chance(0.5) ? options[0]! : rng.pick(options);
  const quality = rng.pick(['novel yet feasible', 'closest to the evidence', 'most testable with standard methods', 'highest potential impact']);
  return {
    selected_hypothesis_index: chosen.index,
    justification: `Hypothesis [${chosen.index}] is ${quality}: ${clip(chosen.text || questionToClaim(conv.goal), 140)}`,
  };
}

/** How the refiner appends a citation; the designer leaves it out when it reads the claim (a paper's title is not the claim). */
const GROUNDED_IN = 'Grounded in ';

/**
 * Refines what it was given: the specifics are built from the phrases the
 * selected hypothesis names (the task's when it is grounded, its own when it
 * drifted), and a measurable endpoint is added only when the hypothesis had
 * one or a review asked for it. A poor pick stays a poor hypothesis.
 */
export function refinerAnswer(conv: SimConversation, rng: SeededRandom, citations: string[]): { refined_hypothesis: string } {
  const sections = labelledSections(conv.userText);
  const chosen = sectionMatching(sections, /selected|chosen|refine/) ?? sectionMatching(sections, /hypothes/);
  const base =
    chosen
      ?.split('\n')[0]
      ?.replace(/^\s*\[\d+\]\s*/, '')
      .replace(/\s*\(proposed by [^)]*\)\s*$/, '')
      .replace(/^\(.*\)$/, '')
      .trim() || cap(questionToClaim(conv.goal));
  const terms = taskTerms(conv);
  const reading = readHypothesis(base, terms);
  const [x, y, z] = phrasesOf(base, terms);
  const pct = rng.pick([10, 15, 20, 25, 30]);
  const weeks = rng.pick([4, 8, 12, 24]);
  const n = rng.pick([40, 60, 80, 120, 200]);
  let text = `${base.replace(/[.\s]+$/, '')}.`;
  // It ties a hypothesis that drifted from the question back to it only loosely: one of the task's terms, not the claim.
  const setting = reading.grounding < 1 && terms[0] && !reading.named.includes(terms[0]) ? `In the setting of ${terms[0]}, ` : '';
  text +=
    reading.measurable || conv.revisions > 0
      ? ` ${setting || 'Specifically, '}${x} will differ by at least ${pct}% from matched controls, measured as ${y} at ${weeks} weeks ` +
        `(primary endpoint; n = ${n} per arm, two-sided alpha 0.05)${reading.mechanism ? `, with ${z} as a secondary endpoint` : ''}.`
      : ` ${setting ? `${setting}w` : 'W'}hich change in ${y} would confirm it is left open.`;
  if (conv.revisions > 0) text += ' This version narrows the claim and names the endpoint, as the reviewers asked.';
  if (citations.length) text += ` ${GROUNDED_IN}${citations[0]}.`;
  return { refined_hypothesis: text };
}

const DESIGNS = ['prospective cohort', 'randomised controlled', 'case-control', 'cross-sectional', 'in vitro and animal'];

/**
 * Designs for the refined hypothesis it is given: about the phrases that
 * hypothesis names, as complete as the hypothesis is good (a vague or
 * off-topic one gets a thinner design, without an endpoint when it names no
 * measurable outcome), and more complete after each review round.
 */
export function protocolAnswer(conv: SimConversation, rng: SeededRandom, citations: string[]): Protocol {
  const refined = sectionMatching(labelledSections(conv.userText), /refined hypothes/)?.split(GROUNDED_IN)[0]?.trim() || cap(questionToClaim(conv.goal));
  const terms = taskTerms(conv);
  const reading = readHypothesis(refined, terms);
  const [x, y, z] = phrasesOf(refined, terms);
  const target = findEntities(refined)[0] ?? y;
  const n = rng.pick([40, 60, 90, 120, 240]);
  const weeks = rng.pick([4, 6, 8, 12]);
  const pool = [
    `Recruit ${n} participants (or samples) matching the study population; fix inclusion and exclusion criteria in advance.`,
    `Measure baseline ${x} with a validated assay; blind assessors to group allocation.`,
    `Randomise 1:1 to an intervention on ${target} or a matched control (block size 4).`,
    reading.measurable ? `Quantify ${y} at 0, ${weeks} and ${2 * weeks} weeks as the primary endpoint.` : `Follow ${y} over the study and note any change.`,
    reading.mechanism
      ? `Test the proposed mechanism: positive and negative controls for the ${z} assay in every batch.`
      : `Run positive and negative controls for the ${z} assay in every batch.`,
    `Analyse with a mixed-effects model (alpha 0.05, power 0.8) following a pre-registered plan.`,
    `Replicate the main effect in an independent cohort of ${Math.round(n / 2)}.`,
    `Report adverse events and protocol deviations to the safety board every month.`,
  ];
  // Each review round makes the design more complete, so revision loops improve it.
  const count = Math.min(pool.length, 2 + Math.round(3 * reading.quality) + rng.int(2) + Math.min(conv.revisions, 3));
  const steps = pool.slice(0, count);
  if (reading.hedged) steps.splice(1, 0, `Explore whether ${x} relates to ${y} in some way before fixing the design.`);
  if (citations.length) steps.splice(1, 0, `Choose assays and doses in line with ${citations[0]}.`);
  const concerns = [`Informed consent and data protection for participants`, `Adverse effects of modulating ${target}`];
  return {
    title: `${cap(x)} and ${y}: a ${rng.pick(DESIGNS)} study`,
    steps,
    safety_concerns: rng.chance(0.5) ? concerns : concerns.join('; '),
    budget_usd: rng.between(8, 240) * 1000,
  };
}

/** Base chance of a CRITICAL and of a MAJOR finding, before any revision. */
const SEVERITY_BASE: Record<string, { critical: number; major: number }> = {
  PeerReviewer: { critical: 0.2, major: 0.35 },
  SafetyOfficer: { critical: 0.1, major: 0.25 },
};
/** Each earlier review cuts the chance of a severe one, so loops end on their own most of the time. */
const SEVERITY_DECAY = 0.55;

export function reviewAnswer(conv: SimConversation, rng: SeededRandom): Review {
  const f = factsOf(conv, rng);
  const base = SEVERITY_BASE[conv.agent ?? ''] ?? { critical: 0.15, major: 0.3 };
  const decay = SEVERITY_DECAY ** conv.revisions;
  const r = rng.next();
  const severity = r < base.critical * decay ? 'CRITICAL' : r < (base.critical + base.major) * decay ? 'MAJOR' : 'MINOR';
  const safety = conv.agent === 'SafetyOfficer';
  const feedback = {
    CRITICAL: safety
      ? `The protocol exposes participants to unquantified risk from modulating ${f.entity ?? f.a}; the hypothesis must be restated with a safer mechanism.`
      : `The hypothesis about ${f.a} is not falsifiable as stated; it needs a measurable prediction about ${f.b}.`,
    MAJOR: safety
      ? `Add stopping rules, an independent safety board and consent procedures before any intervention on ${f.b}.`
      : `The design lacks a proper control for ${f.c} and a power calculation for the ${f.b} endpoint.`,
    MINOR: safety
      ? `Risks are acceptable; state how ${f.a} data will be stored and anonymised.`
      : `Sound design; clarify the assay used for ${f.b} and the timing of follow-up.`,
  }[severity];
  return { decision: severity === 'MINOR' ? 'APPROVE' : 'REVISE', critique_severity: severity, feedback };
}

export function principalAnswer(conv: SimConversation, rng: SeededRandom): PrincipalDecision {
  const f = factsOf(conv, rng);
  const polarity = findingPolarity(conv.context);
  // Mostly follow the evidence, sometimes not, so decision alignment is measurable and imperfect.
  const go = rng.chance(0.9) ? polarity.isPositive : !polarity.isPositive;
  const protocol = [...jsonObjectsIn(conv.userText)].reverse().find((o) => Array.isArray(o.steps));
  const section = sectionMatching(labelledSections(conv.userText), /protocol/);
  const finalProtocol: string | Record<string, unknown> =
    protocol ?? (section ? clip(section.trim(), 600) : `Study ${f.a} against ${f.b} with ${f.c} as the endpoint.`);
  const rationale = polarity.positive + polarity.negative === 0
    ? `The context gives no clear signal about ${f.a} either way; ${go ? 'a focused study is worth running' : 'the protocol does not justify its cost yet'}.`
    : go
    ? `The context reports a positive signal (${polarity.positive} supporting vs ${polarity.negative} null findings) for ${f.a}; the reviewed protocol tests it with adequate controls.`
    : `The context mostly reports null findings (${polarity.negative} vs ${polarity.positive}) for ${f.a}; the protocol is unlikely to change that at this cost.`;
  return { final_protocol: finalProtocol, final_decision: go ? 'GO' : 'NO-GO', final_rationale: rationale };
}
