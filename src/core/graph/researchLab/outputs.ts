import { z } from 'zod';

/** Structured outputs of the research-lab agents; the graph validates model answers against these. */
export const HypothesisOutput = z.object({
  hypothesis: z.string().min(1),
  supporting_papers: z.array(z.string()).default([]),
});

export const SupervisorOutput = z.object({
  selected_hypothesis_index: z.number().int().min(0),
  justification: z.string().default(''),
});

export const RefinerOutput = z.object({
  refined_hypothesis: z.string().min(1),
});

export const ProtocolOutput = z.object({
  title: z.string().min(1),
  steps: z.array(z.string().min(1)).min(1),
  safety_concerns: z.union([z.string(), z.array(z.string())]).default(''),
  budget_usd: z.coerce.number().nonnegative(),
});

export const Severity = z.enum(['CRITICAL', 'MAJOR', 'MINOR']);
export const ReviewOutput = z.object({
  decision: z.enum(['APPROVE', 'REVISE']),
  critique_severity: Severity,
  feedback: z.string().default(''),
});

export const PrincipalOutput = z.object({
  final_protocol: z.union([z.string(), z.record(z.string(), z.unknown())]),
  final_decision: z.enum(['GO', 'NO-GO']),
  final_rationale: z.string().default(''),
});

export type Hypothesis = z.output<typeof HypothesisOutput>;
export type SupervisorDecision = z.output<typeof SupervisorOutput>;
export type Protocol = z.output<typeof ProtocolOutput>;
export type Review = z.output<typeof ReviewOutput>;
export type PrincipalDecision = z.output<typeof PrincipalOutput>;

export const JUNIOR_AGENTS = ['Geneticist', 'Pharmacologist', 'Neurologist'] as const;
export const SENIOR_AGENTS = ['HypothesisRefiner', 'ProtocolDesigner'] as const;
export const REVIEW_AGENTS = ['PeerReviewer', 'SafetyOfficer'] as const;
export const RESEARCH_LAB_AGENTS = [
  ...JUNIOR_AGENTS,
  'Supervisor',
  ...SENIOR_AGENTS,
  ...REVIEW_AGENTS,
  'PrincipalInvestigator',
] as const;
export type ResearchLabAgent = (typeof RESEARCH_LAB_AGENTS)[number];

/** Which output each agent must produce. */
export const AGENT_OUTPUT: Record<ResearchLabAgent, z.ZodType> = {
  Geneticist: HypothesisOutput,
  Pharmacologist: HypothesisOutput,
  Neurologist: HypothesisOutput,
  Supervisor: SupervisorOutput,
  HypothesisRefiner: RefinerOutput,
  ProtocolDesigner: ProtocolOutput,
  PeerReviewer: ReviewOutput,
  SafetyOfficer: ReviewOutput,
  PrincipalInvestigator: PrincipalOutput,
};

/**
 * Every agent's system prompt starts with this marker line so that logs, the
 * simulated endpoint and the trace explorer can tell which role a call is for.
 */
export function roleMarker(agent: string): string {
  return `[agent: ${agent}]`;
}
export const ROLE_MARKER_RE = /\[agent: ([A-Za-z_][A-Za-z0-9_.-]*)\]/;
