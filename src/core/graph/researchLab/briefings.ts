import { JUNIOR_AGENTS } from './outputs';
import type { AgentHypothesis, ResearchLabStateType, ReviewRecord } from './state';

/*
 * The user message each agent receives when it takes its turn. The Supervisor's
 * `[i] ` lines and the `Previous review` lines are a contract with the
 * simulated endpoint and with the bandit adapter: keep their shape.
 */

function taskBlock(s: ResearchLabStateType): string {
  return `Research question: ${s.task.goal}\n\nContext:\n${s.task.context || '(none given)'}`;
}

/** Hypotheses in junior-agent order, whatever order the parallel branches finished in. */
export function orderedHypotheses(hypotheses: AgentHypothesis[]): AgentHypothesis[] {
  const rank = (agent: string): number => {
    const i = (JUNIOR_AGENTS as readonly string[]).indexOf(agent);
    return i < 0 ? JUNIOR_AGENTS.length : i;
  };
  return [...hypotheses].sort((a, b) => rank(a.agent) - rank(b.agent));
}

export function hypothesisLines(hypotheses: AgentHypothesis[]): string {
  return hypotheses
    .map((h, i) => {
      const papers = h.supporting_papers.length ? h.supporting_papers.join('; ') : 'none';
      return `[${i}] ${h.agent}: ${h.hypothesis} (papers: ${papers})`;
    })
    .join('\n');
}

function reviewLines(history: ReviewRecord[]): string {
  return history
    .map((r) => `Previous review (round ${r.round}, ${r.agent}): ${r.decision}, severity ${r.critique_severity}\n${r.feedback}`)
    .join('\n\n');
}

function protocolJson(s: ResearchLabStateType): string {
  return s.protocol ? JSON.stringify(s.protocol, null, 2) : '(no valid protocol was produced)';
}

function selectedHypothesis(s: ResearchLabStateType): string {
  const hs = orderedHypotheses(s.hypotheses);
  const h = s.selectedIndex !== null ? hs[s.selectedIndex] : undefined;
  if (!h) return '(no hypothesis was selected; derive one from the research question)';
  const why = s.selectionJustification ? `\nSupervisor's reason: ${s.selectionJustification}` : '';
  return `${h.hypothesis} (proposed by ${h.agent})${why}`;
}

export function juniorBriefing(s: ResearchLabStateType): string {
  return `${taskBlock(s)}\n\nPropose your hypothesis.`;
}

/** `advice`: a learnt policy's ranking (lab.json bandit mode "advise"); one line that does not start with `[`. */
export function supervisorBriefing(s: ResearchLabStateType, hypotheses: AgentHypothesis[], advice: string | null = null): string {
  const adviceBlock = advice ? `\n\n${advice}` : '';
  return `Research question: ${s.task.goal}\n\nHypotheses:\n${hypothesisLines(hypotheses)}${adviceBlock}\n\nSelect the most promising hypothesis.`;
}

export function refinerBriefing(s: ResearchLabStateType): string {
  const parts = [taskBlock(s), `Selected hypothesis: ${selectedHypothesis(s)}`];
  if (s.reviewHistory.length) {
    parts.push(`Your previous refined hypothesis: ${s.refinedHypothesis ?? '(none)'}`, reviewLines(s.reviewHistory));
    parts.push('Revise the hypothesis so that it answers every review above.');
  } else {
    parts.push('Refine this hypothesis into a specific, testable statement.');
  }
  return parts.join('\n\n');
}

export function designerBriefing(s: ResearchLabStateType): string {
  const parts = [taskBlock(s), `Refined hypothesis: ${s.refinedHypothesis ?? '(none)'}`];
  if (s.reviewHistory.length) {
    parts.push(`Your previous protocol:\n${protocolJson(s)}`, reviewLines(s.reviewHistory));
    parts.push('Revise the protocol so that it answers every review above.');
  } else {
    parts.push('Design the experimental protocol.');
  }
  return parts.join('\n\n');
}

export function reviewerBriefing(s: ResearchLabStateType): string {
  return [
    taskBlock(s),
    `Refined hypothesis: ${s.refinedHypothesis ?? '(none)'}`,
    `Protocol:\n${protocolJson(s)}`,
    'Review the protocol.',
  ].join('\n\n');
}

export function principalBriefing(s: ResearchLabStateType): string {
  const reviews = Object.values(s.reviews)
    .map((r) => `${r.agent}: ${r.decision}, severity ${r.critique_severity}\n${r.feedback}`)
    .join('\n\n');
  return [
    taskBlock(s),
    `Refined hypothesis: ${s.refinedHypothesis ?? '(none)'}`,
    `Protocol:\n${protocolJson(s)}`,
    `Reviews:\n${reviews || '(none)'}`,
    'Give the final protocol and your decision.',
  ].join('\n\n');
}
