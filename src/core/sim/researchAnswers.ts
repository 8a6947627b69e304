import type { Hypothesis, PrincipalDecision, Protocol, Review, SupervisorDecision } from '../graph/researchLab/outputs';
import { jsonObjectsIn } from '../llm/structuredOutput';
import type { SeededRandom } from './seededRandom';
import type { SimConversation } from './simConversation';
import {
  contentWords,
  findEntities,
  findingPolarity,
  keyPhrases,
  labelledSections,
  overlap,
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

type Template = (f: Facts) => string;
const JUNIOR_ANGLES: Record<string, Template[]> = {
  Geneticist: [
    (f) => `Inherited variation in ${f.a} modifies ${f.b}: carriers of risk alleles near ${f.entity ?? f.c} will show a stronger link between ${f.a} and ${f.b}.`,
    (f) => `${cap(f.claim)} in part through heritable factors; a polygenic score built from loci around ${f.entity ?? f.a} will stratify who shows ${f.b}.`,
    (f) => `Epigenetic regulation of ${f.a} (promoter methylation) mediates its relation to ${f.b}, and the effect is larger where ${f.c} is present.`,
  ],
  Pharmacologist: [
    (f) => `Targeting ${f.entity ?? f.a} pharmacologically will shift ${f.b}; an approved drug acting on this pathway should show a dose-dependent effect on ${f.c}.`,
    (f) => `If ${f.claim}, a randomised placebo-controlled trial of a ${f.a} modulator should improve ${f.b} within 12 weeks.`,
    (f) => `Repurposing a drug that lowers ${f.a} will reduce ${f.b}, with ${f.c} as the pharmacodynamic marker.`,
  ],
  Neurologist: [
    (f) => `${cap(f.a)} alters ${f.b} through a systems-level mechanism (network, inflammatory or vascular), detectable as a change in ${f.c} before clinical signs.`,
    (f) => `At the systems level, ${f.claim}; the effect is mediated by ${f.entity ?? f.a} and is strongest when ${f.b} is already impaired.`,
    (f) => `Longitudinal measures of ${f.a} predict ${f.b}, and the relation is explained by ${f.c} rather than by age alone.`,
  ],
};
const GENERIC_ANGLE: Template[] = [
  (f) => `${cap(f.a)} is causally linked to ${f.b}, and ${f.c} explains part of the effect.`,
  (f) => `${cap(f.claim)}, with ${f.a} acting through ${f.b}.`,
];

export function juniorAnswer(conv: SimConversation, rng: SeededRandom, citations: string[]): Hypothesis {
  const f = factsOf(conv, rng);
  const hypothesis = rng.pick(JUNIOR_ANGLES[conv.agent ?? ''] ?? GENERIC_ANGLE)(f);
  const papers = [...citations];
  if (f.firstSentence && (papers.length === 0 || rng.chance(0.5))) papers.push(`Task context: "${clip(f.firstSentence, 110)}"`);
  return { hypothesis, supporting_papers: papers };
}

export function supervisorAnswer(conv: SimConversation, rng: SeededRandom): SupervisorDecision {
  const goalWords = contentWords(`${conv.goal} ${conv.context}`);
  const options = conv.hypotheses.length ? conv.hypotheses : [{ index: 0, text: '' }];
  let best = options[0]!;
  let bestScore = -1;
  for (const h of options) {
    const score = overlap(contentWords(h.text), goalWords) + 0.6 * rng.next();
    if (score > bestScore) {
      best = h;
      bestScore = score;
    }
  }
  const quality = rng.pick(['novel yet feasible', 'closest to the evidence', 'most testable with standard methods', 'highest potential impact']);
  return {
    selected_hypothesis_index: best.index,
    justification: `Hypothesis [${best.index}] is ${quality}: ${clip(best.text || questionToClaim(conv.goal), 140)}`,
  };
}

export function refinerAnswer(conv: SimConversation, rng: SeededRandom, citations: string[]): { refined_hypothesis: string } {
  const f = factsOf(conv, rng);
  const sections = labelledSections(conv.userText);
  const chosen = sectionMatching(sections, /selected|chosen|refine/) ?? sectionMatching(sections, /hypothes/);
  const base =
    chosen
      ?.split('\n')[0]
      ?.replace(/^\s*\[\d+\]\s*/, '')
      .replace(/\s*\(proposed by [^)]*\)\s*$/, '')
      .replace(/^\(.*\)$/, '')
      .trim() || cap(f.claim);
  const pct = rng.pick([10, 15, 20, 25, 30]);
  const weeks = rng.pick([4, 8, 12, 24]);
  const n = rng.pick([40, 60, 80, 120, 200]);
  let text =
    `${base.replace(/[.\s]+$/, '')}. Specifically, ${f.a} will differ by at least ${pct}% from matched controls, ` +
    `measured as ${f.b} at ${weeks} weeks (primary endpoint; n = ${n} per arm, two-sided alpha 0.05), with ${f.c} as a secondary endpoint.`;
  if (conv.revisions > 0) text += ' This version narrows the claim and names the endpoint, as the reviewers asked.';
  if (citations.length) text += ` Grounded in ${citations[0]}.`;
  return { refined_hypothesis: text };
}

const DESIGNS = ['prospective cohort', 'randomised controlled', 'case-control', 'cross-sectional', 'in vitro and animal'];

export function protocolAnswer(conv: SimConversation, rng: SeededRandom, citations: string[]): Protocol {
  const f = factsOf(conv, rng);
  const n = rng.pick([40, 60, 90, 120, 240]);
  const weeks = rng.pick([4, 6, 8, 12]);
  const pool = [
    `Recruit ${n} participants (or samples) matching the study population; fix inclusion and exclusion criteria in advance.`,
    `Measure baseline ${f.a} with a validated assay; blind assessors to group allocation.`,
    `Randomise 1:1 to an intervention on ${f.entity ?? f.b} or a matched control (block size 4).`,
    `Quantify ${f.b} at 0, ${weeks} and ${2 * weeks} weeks as the primary endpoint.`,
    `Run positive and negative controls for the ${f.c} assay in every batch.`,
    `Analyse with a mixed-effects model (alpha 0.05, power 0.8) following a pre-registered plan.`,
    `Replicate the main effect in an independent cohort of ${Math.round(n / 2)}.`,
    `Report adverse events and protocol deviations to the safety board every month.`,
  ];
  // Each review round makes the design more complete, so revision loops improve it.
  const count = Math.min(pool.length, 3 + rng.int(3) + Math.min(conv.revisions, 3));
  const steps = pool.slice(0, count);
  if (citations.length) steps.splice(1, 0, `Choose assays and doses in line with ${citations[0]}.`);
  const concerns = [`Informed consent and data protection for participants`, `Adverse effects of modulating ${f.entity ?? f.a}`];
  return {
    title: `${cap(f.a)} and ${f.b}: a ${rng.pick(DESIGNS)} study`,
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
