import { JUNIOR_AGENTS } from '../../../graph/researchLab/outputs';
import type { TraceStore } from '../../../store/traceStore';
import type { ChatMessageRecord } from '../../../trace/messages';
import { Attr, type SpanRecord } from '../../../trace/span';
import { orderedSpans } from './llmCalls';
import { PENALISED, rewardOrigin, rewardPenalty, type RewardOrigin } from './rewardPenalty';
import { countSkip, selectRollouts, type RolloutFilter, type RolloutScope, type SelectedRollout } from './rolloutSelection';
import { BANDIT_ATTR } from '../../../graph/researchLab/supervisorPolicy';

/** One Supervisor decision: the hypotheses it saw, the one it chose, and how the rollout ended. */
export interface BanditRecord {
  rolloutId: string;
  taskId: string;
  runId: string;
  candidates: Array<{ agent: string; text: string }>;
  chosen: number;
  reward: number;
  reward_source: RewardOrigin['reward_source'];
  penalty: RewardOrigin['penalty'];
  policyVersion: string | null;
}

/** The agent whose choice the bandit learns: the research-lab graph's Supervisor. */
export const SUPERVISOR = 'Supervisor';

function parsed(v: unknown): unknown {
  if (typeof v !== 'string') return null;
  try {
    return JSON.parse(v);
  } catch {
    return null;
  }
}

function nodesOf(spans: readonly SpanRecord[], agent: string): SpanRecord[] {
  return spans.filter((s) => s.kind === 'node' && s.attributes[Attr.nodeName] === agent);
}

/** The juniors' hypotheses in the order the Supervisor lists them (junior-agent order, as briefings.orderedHypotheses). */
function hypothesesFromNodes(spans: readonly SpanRecord[]): Array<{ agent: string; text: string }> {
  const out: Array<{ agent: string; text: string }> = [];
  for (const agent of JUNIOR_AGENTS) {
    const answered = nodesOf(spans, agent).filter((s) => s.attributes[Attr.outputOk] === true);
    const value = parsed(answered[answered.length - 1]?.attributes[Attr.output]) as { hypothesis?: unknown } | null;
    if (typeof value?.hypothesis === 'string') out.push({ agent, text: value.hypothesis });
  }
  return out;
}

/** The `[i] Agent: hypothesis (papers: ...)` lines of the Supervisor's briefing (a contract of briefings.ts). */
function hypothesesFromPrompt(spans: readonly SpanRecord[]): Array<{ agent: string; text: string }> {
  const call = spans.find((s) => s.kind === 'llm' && s.attributes[Attr.agentName] === SUPERVISOR);
  const messages = parsed(call?.attributes[Attr.inputMessages]);
  if (!Array.isArray(messages)) return [];
  const user = (messages as ChatMessageRecord[]).find((m) => m.role === 'user');
  const out: Array<{ agent: string; text: string }> = [];
  for (const line of (user?.content ?? '').split('\n')) {
    const m = /^\[(\d+)\] ([^:]+): (.*?)(?: \(papers: .*\))?$/.exec(line);
    if (m && Number(m[1]) === out.length) out.push({ agent: m[2]!, text: m[3]! });
  }
  return out;
}

/** The bandit record of one rollout, or why it has none. */
export function banditRecordOfRollout(rollout: SelectedRollout, spans: readonly SpanRecord[], origin: RewardOrigin): BanditRecord | { skip: string } {
  const ordered = orderedSpans(spans);
  const decisions = nodesOf(ordered, SUPERVISOR);
  const decision = decisions[decisions.length - 1];
  if (!decision) return { skip: 'no_supervisor_decision' };
  if (decision.attributes[Attr.outputOk] !== true) return { skip: 'supervisor_output_invalid' };
  const chosen = (parsed(decision.attributes[Attr.output]) as { selected_hypothesis_index?: unknown } | null)?.selected_hypothesis_index;
  const fromNodes = hypothesesFromNodes(ordered);
  const candidates = fromNodes.length ? fromNodes : hypothesesFromPrompt(ordered);
  if (typeof chosen !== 'number' || !Number.isInteger(chosen) || chosen < 0 || chosen >= candidates.length) return { skip: 'chosen_index_out_of_range' };
  const policy = decision.attributes[BANDIT_ATTR.policyVersion];
  return {
    rolloutId: rollout.id,
    taskId: rollout.taskId,
    runId: rollout.runId,
    candidates,
    chosen,
    reward: rollout.finalReward,
    reward_source: origin.reward_source,
    penalty: origin.penalty,
    policyVersion: typeof policy === 'string' && policy ? policy : null,
  };
}

/**
 * One record per Supervisor decision of a succeeded rollout with a final
 * reward, in rollout start order (simulated rollouts, and those whose reward
 * is a penalty, only when the scope includes them); the rollouts left out are
 * counted in `skipped` by reason. Reads one rollout's spans at a time.
 */
export function banditRecords(
  store: TraceStore,
  scope: RolloutScope & Pick<RolloutFilter, 'includePenalised'> = {},
  skipped: Record<string, number> = {},
): BanditRecord[] {
  const filter: RolloutFilter = { agents: [SUPERVISOR], ...scope };
  const out: BanditRecord[] = [];
  for (const r of selectRollouts(store, filter, skipped)) {
    const spans = store.getSpans(r.id);
    const penalty = rewardPenalty(r, spans);
    if (penalty && !filter.includePenalised) {
      countSkip(skipped, PENALISED);
      continue;
    }
    const rec = banditRecordOfRollout(r, spans, rewardOrigin(r, penalty));
    if ('skip' in rec) countSkip(skipped, rec.skip);
    else out.push(rec);
  }
  return out;
}
