import { Attr, type SpanRecord } from '../trace/span';

/*
 * Problems a run should not keep quiet about although every rollout of it
 * "succeeded": a server that cut prompts to fit its context, answers cut at
 * max_tokens, a custom reward that threw, a graph that ran past the turn
 * limit. The runner folds each finished rollout's spans (still in memory) in
 * here, says each kind once, when it first happens, and gives the totals at
 * the end.
 */

export type RunWarningKind = 'prompt_truncated' | 'output_truncated' | 'model_calls_retried' | 'custom_reward_failed' | 'turn_limit_exceeded' | 'otlp_export_failed';

export interface RunWarning {
  kind: RunWarningKind;
  /** One line from where it first happened: who, the sizes or the error, and the fix. */
  message: string;
  /** Rollouts of this invocation it hit (1 when reported as it first happens). */
  rollouts: number;
  /** Model calls for the two truncation kinds; rollouts for the others. */
  occurrences: number;
  /** The agents (truncation kinds) or reward modules it hit, in the order they showed up. */
  subjects: string[];
  /** Where it first happened: `rollout-lab traces --rollout ID` shows it. */
  firstRolloutId: string;
}

/** As a few words, for summaries. */
const RUN_WARNING_LABELS: Record<RunWarningKind, string> = {
  prompt_truncated: 'prompts cut by the server',
  output_truncated: 'answers cut at max_tokens',
  model_calls_retried: 'model calls retried',
  custom_reward_failed: 'custom reward failed',
  turn_limit_exceeded: 'turn limit exceeded',
  otlp_export_failed: 'OTLP export failed',
};

interface Finding {
  kind: RunWarningKind;
  /** Findings of one kind that need different fixes stay apart (answers cut under two max_tokens settings); '' when one fix serves all. */
  key: string;
  message: string;
  occurrences: number;
  subjects: string[];
}

const text = (v: unknown): string | null => (typeof v === 'string' && v ? v : null);
const count = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** "HypothesisRefiner (model senior = qwen2.5:7b at http://…)": who made a model call. */
function caller(s: SpanRecord): string {
  const agent = text(s.attributes[Attr.agentName]) ?? 'an agent';
  const logical = text(s.attributes[Attr.logicalModel]);
  const served = text(s.attributes[Attr.responseModel]) ?? text(s.attributes[Attr.requestModel]);
  const server = text(s.attributes[Attr.serverAddress]);
  const model = [logical ? `model ${logical}` : null, served && served !== logical ? `= ${served}` : null, server ? `at ${server}` : null].filter(Boolean).join(' ');
  return model ? `${agent} (${model})` : agent;
}

function promptCut(calls: SpanRecord[]): Finding {
  const s = calls[0]!;
  const sent = count(s.attributes[Attr.promptEstimatedTokens]);
  const read = count(s.attributes[Attr.inputTokens]);
  const sizes = sent !== null && read !== null ? `: at least ${sent} tokens sent, ${read} read` : '';
  return {
    kind: 'prompt_truncated',
    message:
      `the server cut the prompt of ${caller(s)} to fit its context${sizes} — raise its context per slot ` +
      '(llama.cpp: -c is shared by the -np slots, so raise -c or lower -np; Ollama: num_ctx; vLLM: --max-model-len) or shorten the prompt',
    key: '',
    occurrences: calls.length,
    subjects: agentsOf(calls),
  };
}

function answerCut(calls: SpanRecord[]): Finding {
  const s = calls[0]!;
  const max = count(s.attributes[Attr.requestMaxTokens]);
  const got = count(s.attributes[Attr.outputTokens]);
  const sizes = [got !== null ? `${got} tokens` : null, max !== null ? `max_tokens ${max}` : null].filter(Boolean).join(', ');
  const fix = `raise ${maxTokensKey(s)} in .rollout-lab/lab.json`;
  return {
    kind: 'output_truncated',
    key: cutKey(s),
    message: `the answer of ${caller(s)} was cut at max_tokens${sizes ? ` (${sizes})` : ''} — ${fix}, or ask for a shorter answer`,
    occurrences: calls.length,
    subjects: agentsOf(calls),
  };
}

/** Each agent's cut answers under each setting are their own warning: the fix of one is not the other's. */
function cutKey(call: SpanRecord): string {
  return `${text(call.attributes[Attr.agentName]) ?? call.name}\u0000${maxTokensKey(call)}`;
}

/** Calls that needed retries: the run absorbed them, but a server that keeps failing is worth knowing about. */
function callsRetried(calls: SpanRecord[]): Finding {
  const s = calls[0]!;
  const reasons = s.attributes[Attr.retryReasons];
  const why = Array.isArray(reasons) && reasons.length ? ` (${String(reasons[0]).replace(/\s+/g, ' ')})` : '';
  const retries = count(s.attributes[Attr.retries]) ?? 1;
  return {
    kind: 'model_calls_retried',
    key: '',
    message: `the call of ${caller(s)} was retried ${retries} time${retries === 1 ? '' : 's'}${why} — retries absorbed it; if it keeps happening, check the server's log`,
    occurrences: calls.length,
    subjects: agentsOf(calls),
  };
}

function agentsOf(calls: SpanRecord[]): string[] {
  return [...new Set(calls.map((s) => text(s.attributes[Attr.agentName]) ?? s.name))];
}

function rewardFailed(span: SpanRecord, root: SpanRecord | undefined): Finding {
  const module = text(span.attributes[Attr.rewardModule]) ?? 'reward.module';
  const error = text(root?.attributes[Attr.rewardError]) ?? text(span.statusMessage) ?? 'no error message';
  const penalty = count(span.attributes[Attr.rewardValue]);
  return {
    kind: 'custom_reward_failed',
    key: '',
    message:
      `the custom reward ${module} failed: ${error.replace(/\s+/g, ' ')} — the rollout got reward.customFailurePenalty` +
      `${penalty !== null ? ` (${penalty})` : ''} instead of a score; fix the reward function`,
    occurrences: 1,
    subjects: [module],
  };
}

function turnsOver(root: SpanRecord): Finding {
  const turns = count(root.attributes[Attr.turn]);
  const limit = count(root.attributes[Attr.turnLimit]);
  return {
    kind: 'turn_limit_exceeded',
    key: '',
    message:
      `the graph took ${turns ?? 'more'} turns, over runner.maxTurns (${limit ?? '?'}) — end the graph at ctx.maxTurns ` +
      '(a module graph receives it in its factory) or raise runner.maxTurns in .rollout-lab/lab.json',
    occurrences: 1,
    subjects: [],
  };
}

/** What one finished rollout's spans show: one finding per kind, answers cut once per agent and setting. */
export function rolloutFindings(spans: readonly SpanRecord[]): Finding[] {
  const root = spans.find((s) => s.kind === 'rollout' && s.parentSpanId === null);
  const llm = spans.filter((s) => s.kind === 'llm');
  const findings: Finding[] = [];
  const promptsCut = llm.filter((s) => s.attributes[Attr.promptTruncated] === true);
  if (promptsCut.length) findings.push(promptCut(promptsCut));
  const answersCut = new Map<string, SpanRecord[]>();
  for (const s of llm.filter((c) => c.attributes[Attr.truncated] === true)) answersCut.set(cutKey(s), [...(answersCut.get(cutKey(s)) ?? []), s]);
  for (const calls of answersCut.values()) findings.push(answerCut(calls));
  // A call that failed after its retries is the rollout's failure, not something the retries absorbed.
  const retried = llm.filter((s) => s.status !== 'error' && (count(s.attributes[Attr.retries]) ?? 0) > 0);
  if (retried.length) findings.push(callsRetried(retried));
  const reward = spans.find((s) => s.kind === 'reward' && s.attributes[Attr.errorType] === 'custom_reward_failed');
  if (reward) findings.push(rewardFailed(reward, root));
  if (root?.attributes[Attr.turnLimitExceeded] === true) findings.push(turnsOver(root));
  return findings;
}

/** The warnings of one run: each kind once when it first happens, and the totals. */
export class RunWarnings {
  private readonly byKind = new Map<string, RunWarning>();

  /** Folds in one finished rollout; returns the warnings it is the first to show. */
  add(rolloutId: string, spans: readonly SpanRecord[]): RunWarning[] {
    const first: RunWarning[] = [];
    for (const f of rolloutFindings(spans)) {
      const key = `${f.kind}\u0000${f.key}`;
      const seen = this.byKind.get(key);
      if (seen) {
        seen.rollouts++;
        seen.occurrences += f.occurrences;
        for (const s of f.subjects) if (!seen.subjects.includes(s)) seen.subjects.push(s);
        continue;
      }
      const w: RunWarning = { kind: f.kind, message: f.message, rollouts: 1, occurrences: f.occurrences, subjects: [...f.subjects], firstRolloutId: rolloutId };
      this.byKind.set(key, w);
      first.push({ ...w, subjects: [...w.subjects] });
    }
    return first;
  }

  /** The totals, in the order the kinds first happened. */
  list(): RunWarning[] {
    return [...this.byKind.values()].map((w) => ({ ...w, subjects: [...w.subjects] }));
  }
}

/** One line of a run's summary: how often, where, and the first occurrence with its fix. */
export function warningSummaryLine(w: RunWarning, rollouts: number): string {
  const calls = w.kind === 'prompt_truncated' || w.kind === 'output_truncated' || w.kind === 'model_calls_retried' ? ` (${w.occurrences} model call${w.occurrences === 1 ? '' : 's'})` : '';
  const who = w.subjects.length > 1 ? `; ${w.kind === 'custom_reward_failed' ? 'modules' : 'agents'}: ${w.subjects.join(', ')}` : '';
  return `${RUN_WARNING_LABELS[w.kind]} in ${w.rollouts} of ${rollouts} rollout${rollouts === 1 ? '' : 's'}${calls}${who}; first (rollout ${w.firstRolloutId}): ${w.message}`;
}

/** The lab.json key that set a call's max_tokens, as the call recorded it (the judge's and an agent's own differ from its model's). */
export function maxTokensKey(call: SpanRecord): string {
  const recorded = text(call.attributes[Attr.maxTokensSetting]);
  if (recorded) return recorded;
  const logical = text(call.attributes[Attr.logicalModel]);
  return logical ? `models.${logical}.maxTokens` : 'maxTokens of its model';
}
