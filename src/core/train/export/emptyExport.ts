import { RuntimeFailure } from '../../errors';

/**
 * An export, a phase or a pre-flight that would train on nothing fails, and
 * says why: each reason rollouts (or model calls) were dropped for, with its
 * count and what to change. Never an empty file and "done".
 */

/** The skip reason of a rollout in which none of the chosen agents made a model call. */
export const NO_AGENT_CALLS = 'no_agent_calls';

/** Skip reasons counted per model call; every other reason is per rollout. */
const CALL_REASONS = new Set(['call_failed', 'call_invalid', 'call_other_prompt_version', 'call_other_model_version']);

export interface EmptyExportFacts {
  format: 'sft' | 'rl' | 'bandit';
  options: { agents: readonly string[]; minReward: number | null; split: string | null; runId: string | null };
  /** Skip counts by reason, as the manifest has them. */
  skipped: Record<string, number>;
  /** Agents that made model calls in the rollouts in scope (simulated ones too): where the calls went instead. */
  agentsSeen: readonly string[];
}

function plural(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}

/** One dropped reason in words: the reason, its count, what to change. */
function reasonText(reason: string, n: number, f: EmptyExportFacts): string {
  const unit = plural(n, CALL_REASONS.has(reason) ? 'model call' : 'rollout');
  const agents = f.options.agents.join(', ') || 'the chosen agents';
  switch (reason) {
    case NO_AGENT_CALLS: {
      const others = f.agentsSeen.filter((a) => !f.options.agents.includes(a));
      const chosenSeen = f.agentsSeen.filter((a) => f.options.agents.includes(a));
      const seen = others.length
        ? `the agents that made model calls are: ${others.join(', ')} — name one with --agents (the phase's "agents"), or check which node the calls are credited to`
        : chosenSeen.length
          ? `the rollouts' summaries count model calls of ${chosenSeen.join(', ')}, but no model-call span of theirs is stored — open one of these traces`
          : 'no agent made model calls in these rollouts — check that the graph calls its models through the lab';
      return `agent not found: ${unit} with no model call of ${agents} (${seen})`;
    }
    case 'simulated':
      return `simulated: ${unit} answered by the simulated endpoint, a test double (give the models a baseUrl and gather again, or include them with --include-simulated / the phase's "includeSimulated": true)`;
    case 'below_min_reward':
      return `below the minimum reward ${f.options.minReward ?? ''}: ${unit} (lower --min-reward / the phase's "minReward", or gather rollouts that score better)`;
    case 'penalised':
      return `penalised: ${unit} whose reward is a penalty because the judge or the custom reward failed (fix the reward and rescore or re-run them, or include them with --include-penalised / the phase's "includePenalised": true)`;
    case 'no_reward':
      return `no final reward: ${unit} (rescore them: rollout-lab rescore)`;
    case 'running':
      return `still running: ${unit}`;
    case 'failed':
    case 'cancelled':
      return `${reason}: ${unit} (open one to see its error, fix it and re-run)`;
    default:
      return `${reason.replace(/_/g, ' ')}: ${unit}`;
  }
}

/** Every reason in words, the largest count first. */
export function droppedText(f: EmptyExportFacts): string {
  const entries = Object.entries(f.skipped).sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1));
  if (!entries.length) return `no rollouts in scope${f.options.split ? ` (${f.options.split} split)` : ''}${f.options.runId ? ` of run ${f.options.runId}` : ''} — run some first (rollout-lab run)`;
  return entries.map(([reason, n]) => reasonText(reason, n, f)).join('; ');
}

/** What an export that found no rows says. */
export function emptyExportMessage(f: EmptyExportFacts): string {
  const split = f.options.split ? `the ${f.options.split} split` : 'every split';
  const agents = f.options.agents.length ? `of ${f.options.agents.join(', ')}` : '(no agents: none made model calls in the rollouts in scope)';
  return `no training rows: the ${f.format} export ${agents} (${split}) has 0 rows to train on; dropped: ${droppedText(f)}`;
}

/** Exit 1 in the CLI, an error in the editor: an export with 0 rows. */
export class EmptyExportError extends RuntimeFailure {
  constructor(readonly facts: EmptyExportFacts) {
    super(emptyExportMessage(facts));
  }
}
