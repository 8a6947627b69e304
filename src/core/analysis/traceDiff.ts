import { RESEARCH_LAB_DECISIONS, decisionAlignment, type Alignment, type DecisionLabels } from '../data/decisionAlignment';
import { diffArrays, diffWordsWithSpace } from 'diff';
import { UsageError } from '../errors';
import type { TraceStore } from '../store/traceStore';
import type { RolloutRecord } from '../store/types';
import { Attr, type AttributeValue, type SpanRecord } from '../trace/span';

/*
 * Two rollouts side by side, aligned by graph step: each rollout becomes the
 * sequence of its node visits (with what the step produced), the two
 * sequences are aligned by node name (a longest-common-subsequence diff), and
 * every aligned row says which aspects differ. Latency is shown but never
 * makes a row differ: two runs of the same thing never take the same time.
 */

export interface StepToolCall {
  name: string;
  /** Arguments as JSON text. */
  args: string;
  /** The tool's result for an executed call; null for a call the model only asked for (it runs in the tool node). */
  result: string | null;
  error: string | null;
}

export interface StepReward {
  name: string;
  value: number;
  rule: string | null;
}

/** One node visit of a rollout and what it did. */
export interface TraceStep {
  /** Position in the rollout's sequence (0-based). */
  index: number;
  node: string;
  /** LangGraph's superstep, when the tracer recorded it. */
  step: number | null;
  spanId: string;
  /** The text the node's model calls answered (joined), or the node's parsed output when it made no model call; null when there is neither. */
  output: string | null;
  /** Tool calls the node's model asked for, then the tool calls the node executed (with results). */
  toolCalls: StepToolCall[];
  llmCalls: number;
  inputTokens: number;
  outputTokens: number;
  latencyMs: number;
  /** Error messages of the node span and the spans under it. */
  errors: string[];
  /** AIR rewards (intermediate reward spans) given inside this visit. */
  rewards: StepReward[];
}

export type StepAspect = 'output' | 'toolCalls' | 'tokens' | 'errors' | 'rewards';
export const STEP_ASPECTS: readonly StepAspect[] = ['output', 'toolCalls', 'tokens', 'errors', 'rewards'];

/** A piece of a word diff: text in both, only on the left (removed) or only on the right (added). */
export interface TextPart {
  op: 'same' | 'removed' | 'added';
  text: string;
}

export type RowKind = 'same' | 'changed' | 'left' | 'right';

export interface DiffRow {
  kind: RowKind;
  left: TraceStep | null;
  right: TraceStep | null;
  /** The aspects that differ (empty unless kind is 'changed'). */
  differs: StepAspect[];
  /** Word diff of the outputs when both sides have one and they differ; null when the texts were too long to diff word by word. */
  outputDiff: TextPart[] | null;
}

export interface RolloutFacts {
  id: string;
  runId: string;
  taskId: string;
  sample: number;
  split: string | null;
  status: RolloutRecord['status'];
  failure: string | null;
  error: string | null;
  finalReward: number | null;
  criteria: Record<string, number> | null;
  decision: string | null;
  expectedDecision: string | null;
  /** The decision against the expected answer, under the graph's decision mapping (decisionAlignment). */
  alignment: Alignment;
  turns: number | null;
  inputTokens: number;
  outputTokens: number;
  durationMs: number | null;
  simulated: boolean;
  startTime: number;
  spanCount: number;
  steps: number;
  goal: string | null;
  finalOutput: string | null;
  /** Per agent: prompt version and model (with version) it ran. */
  versions: Record<string, { prompt: string | null; model: string | null }>;
}

export type RolloutAspect =
  | 'task'
  | 'path'
  | 'finalOutput'
  | 'decision'
  | 'finalReward'
  | 'criteria'
  | 'turns'
  | 'tokens'
  | 'status'
  | 'versions';

export interface TraceDiff {
  left: RolloutFacts;
  right: RolloutFacts;
  rows: DiffRow[];
  /** Rollout-level aspects that differ. */
  differs: RolloutAspect[];
  /** Per criterion of either side: both scores and right − left. */
  criteria: Array<{ criterion: string; left: number | null; right: number | null; delta: number | null }>;
  /** Agents whose prompt or model version differs. */
  versionChanges: Array<{ agent: string; left: { prompt: string | null; model: string | null } | null; right: { prompt: string | null; model: string | null } | null }>;
  /** Word diff of the final outputs when they differ; null when equal or too long. */
  finalOutputDiff: TextPart[] | null;
  /** right − left, null when either side lacks the value. */
  deltas: { finalReward: number | null; inputTokens: number; outputTokens: number; turns: number | null; steps: number; durationMs: number | null };
  counts: Record<RowKind, number>;
  /** Whether the node alignment is an exact LCS (false: the paths differed too much and only common prefix and suffix were aligned). */
  exactAlignment: boolean;
}

/** Texts longer than this (either side) are not diffed word by word. */
const MAX_WORD_DIFF_CHARS = 20_000;
/** Edit distance past which the word diff or the path alignment gives up. */
const MAX_EDIT_LENGTH = 4_000;

// ---- reading one rollout ---------------------------------------------------

function str(v: AttributeValue | undefined): string | null {
  return typeof v === 'string' ? v : null;
}
function num(v: AttributeValue | undefined): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function jsonText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return '';
  return JSON.stringify(v);
}

/** The text and requested tool calls of a model call's `gen_ai.output.messages` (the tracer's shape, or OpenAI's nested `function`). */
function modelAnswer(raw: AttributeValue | undefined): { text: string; calls: StepToolCall[] } {
  const out = { text: '', calls: [] as StepToolCall[] };
  if (typeof raw !== 'string') return out;
  let messages: unknown;
  try {
    messages = JSON.parse(raw);
  } catch {
    out.text = raw;
    return out;
  }
  if (!Array.isArray(messages)) return out;
  const texts: string[] = [];
  for (const m of messages) {
    if (!isObject(m)) continue;
    const c = m.content;
    if (typeof c === 'string') texts.push(c);
    else if (Array.isArray(c)) for (const p of c) if (isObject(p) && typeof p.text === 'string') texts.push(p.text);
    for (const call of Array.isArray(m.tool_calls) ? m.tool_calls : []) {
      if (!isObject(call)) continue;
      const fn = isObject(call.function) ? call.function : call;
      if (typeof fn.name !== 'string') continue;
      out.calls.push({ name: fn.name, args: jsonText(fn.arguments ?? fn.args), result: null, error: null });
    }
  }
  out.text = texts.filter(Boolean).join('\n');
  return out;
}

/** Spans in a fixed order: start time, then span id. */
function byStart(a: SpanRecord, b: SpanRecord): number {
  return a.startTime - b.startTime || (a.spanId < b.spanId ? -1 : a.spanId > b.spanId ? 1 : 0);
}

/**
 * A rollout's node visits in graph order: by superstep, and within a
 * superstep (parallel branches) by node name, so the same graph walk gives the
 * same sequence however the branches' start times interleave. Visits without
 * a recorded step keep their start order.
 */
export function traceSteps(spans: readonly SpanRecord[]): TraceStep[] {
  const children = new Map<string, SpanRecord[]>();
  for (const s of spans) {
    if (!s.parentSpanId) continue;
    const list = children.get(s.parentSpanId) ?? [];
    list.push(s);
    children.set(s.parentSpanId, list);
  }
  const nodes = spans.filter((s) => s.kind === 'node');
  const stepOf = (s: SpanRecord): number | null => {
    const v = s.attributes[Attr.nodeStep];
    return typeof v === 'number' ? v : null;
  };
  nodes.sort((a, b) => {
    const sa = stepOf(a);
    const sb = stepOf(b);
    if (sa !== null && sb !== null && sa !== sb) return sa - sb;
    if (sa !== null && sb !== null && a.name !== b.name) return a.name < b.name ? -1 : 1;
    return byStart(a, b);
  });
  return nodes.map((node, index) => {
    // The spans under this visit, down to (not into) a nested node.
    const under: SpanRecord[] = [];
    const stack = [...(children.get(node.spanId) ?? [])];
    while (stack.length) {
      const s = stack.pop()!;
      if (s.kind === 'node') continue;
      under.push(s);
      stack.push(...(children.get(s.spanId) ?? []));
    }
    under.sort(byStart);
    const texts: string[] = [];
    const requested: StepToolCall[] = [];
    const executed: StepToolCall[] = [];
    const errors: string[] = [];
    const rewards: StepReward[] = [];
    let llmCalls = 0;
    let inputTokens = 0;
    let outputTokens = 0;
    if (node.status === 'error') errors.push(node.statusMessage || 'error');
    for (const s of under) {
      if (s.status === 'error') errors.push(s.statusMessage || `${s.kind} ${s.name} failed`);
      if (s.kind === 'llm') {
        llmCalls++;
        inputTokens += num(s.attributes[Attr.inputTokens]);
        outputTokens += num(s.attributes[Attr.outputTokens]);
        const answer = modelAnswer(s.attributes[Attr.outputMessages]);
        if (answer.text) texts.push(answer.text);
        requested.push(...answer.calls);
      } else if (s.kind === 'tool') {
        executed.push({
          name: str(s.attributes[Attr.toolName]) ?? s.name,
          args: str(s.attributes[Attr.toolArguments]) ?? '',
          result: str(s.attributes[Attr.toolResult]) ?? '',
          error: s.status === 'error' ? s.statusMessage || 'error' : null,
        });
      } else if (s.kind === 'reward' && s.attributes[Attr.rewardKind] === 'intermediate') {
        rewards.push({ name: str(s.attributes[Attr.rewardName]) ?? s.name, value: num(s.attributes[Attr.rewardValue]), rule: str(s.attributes['rollout_lab.reward.rule']) });
      }
    }
    const own = str(node.attributes[Attr.output]);
    return {
      index,
      node: node.name,
      step: stepOf(node),
      spanId: node.spanId,
      output: texts.length ? texts.join('\n') : own,
      toolCalls: [...requested, ...executed],
      llmCalls,
      inputTokens,
      outputTokens,
      latencyMs: Math.max(0, node.endTime - node.startTime),
      errors,
      rewards,
    };
  });
}

export function rolloutFacts(rollout: RolloutRecord, spans: readonly SpanRecord[], steps: number, labels: DecisionLabels = RESEARCH_LAB_DECISIONS): RolloutFacts {
  const root = spans.find((s) => s.parentSpanId === null && s.kind === 'rollout');
  const versions: RolloutFacts['versions'] = {};
  let inputTokens = 0;
  let outputTokens = 0;
  for (const a of rollout.agents) {
    inputTokens += a.inputTokens;
    outputTokens += a.outputTokens;
    versions[a.agent] = { prompt: a.promptVersion, model: a.model === null ? a.modelVersion : a.modelVersion ? `${a.model}@${a.modelVersion}` : a.model };
  }
  return {
    id: rollout.id,
    runId: rollout.runId,
    taskId: rollout.taskId,
    sample: rollout.sample,
    split: rollout.split,
    status: rollout.status,
    failure: rollout.failure ?? null,
    error: rollout.error,
    finalReward: rollout.finalReward,
    criteria: rollout.criteria,
    decision: rollout.decision,
    expectedDecision: rollout.expectedDecision,
    alignment: decisionAlignment(rollout.decision, rollout.expectedDecision, labels),
    turns: rollout.turns,
    inputTokens,
    outputTokens,
    durationMs: rollout.endTime === null ? null : Math.max(0, rollout.endTime - rollout.startTime),
    simulated: rollout.simulated,
    startTime: rollout.startTime,
    spanCount: rollout.spanCount,
    steps,
    goal: str(root?.attributes[Attr.taskGoal]),
    finalOutput: str(root?.attributes[Attr.finalOutput]),
    versions,
  };
}

// ---- comparing ----------------------------------------------------------------

/** A word diff of two texts, or null when either is too long (or they differ too much) to diff word by word. */
export function wordDiff(left: string, right: string): TextPart[] | null {
  if (left.length > MAX_WORD_DIFF_CHARS || right.length > MAX_WORD_DIFF_CHARS) return null;
  const changes = diffWordsWithSpace(left, right, { maxEditLength: MAX_EDIT_LENGTH });
  if (!changes) return null;
  return changes.map((c) => ({ op: c.added ? 'added' : c.removed ? 'removed' : 'same', text: c.value }));
}

function callKey(c: StepToolCall): string {
  return JSON.stringify([c.name, c.args, c.result, c.error]);
}

/** The aspects in which two visits of the same node differ. */
export function stepDifferences(a: TraceStep, b: TraceStep): StepAspect[] {
  const out: StepAspect[] = [];
  if ((a.output ?? '') !== (b.output ?? '')) out.push('output');
  if (a.toolCalls.length !== b.toolCalls.length || a.toolCalls.some((c, i) => callKey(c) !== callKey(b.toolCalls[i]!))) out.push('toolCalls');
  if (a.inputTokens !== b.inputTokens || a.outputTokens !== b.outputTokens) out.push('tokens');
  if (a.errors.join('\n') !== b.errors.join('\n')) out.push('errors');
  if (JSON.stringify(a.rewards) !== JSON.stringify(b.rewards)) out.push('rewards');
  return out;
}

/**
 * Pairs of positions aligned by node name: an exact LCS when the paths are
 * close enough, else the common prefix and suffix with the middle unpaired.
 */
function alignNames(left: readonly string[], right: readonly string[]): { ops: Array<[number | null, number | null]>; exact: boolean } {
  const ops: Array<[number | null, number | null]> = [];
  const changes = diffArrays([...left], [...right], { maxEditLength: MAX_EDIT_LENGTH });
  if (changes) {
    let i = 0;
    let j = 0;
    for (const c of changes) {
      for (let k = 0; k < (c.count ?? c.value.length); k++) {
        if (c.removed) ops.push([i++, null]);
        else if (c.added) ops.push([null, j++]);
        else ops.push([i++, j++]);
      }
    }
    return { ops, exact: true };
  }
  let pre = 0;
  while (pre < left.length && pre < right.length && left[pre] === right[pre]) pre++;
  let suf = 0;
  while (suf < left.length - pre && suf < right.length - pre && left[left.length - 1 - suf] === right[right.length - 1 - suf]) suf++;
  for (let k = 0; k < pre; k++) ops.push([k, k]);
  for (let k = pre; k < left.length - suf; k++) ops.push([k, null]);
  for (let k = pre; k < right.length - suf; k++) ops.push([null, k]);
  for (let k = suf; k > 0; k--) ops.push([left.length - k, right.length - k]);
  return { ops, exact: false };
}

/** Aligns two step sequences by node name and says, per row, what differs. */
export function alignSteps(left: readonly TraceStep[], right: readonly TraceStep[]): { rows: DiffRow[]; exact: boolean } {
  const { ops, exact } = alignNames(
    left.map((s) => s.node),
    right.map((s) => s.node),
  );
  const rows = ops.map(([i, j]): DiffRow => {
    const l = i === null ? null : left[i]!;
    const r = j === null ? null : right[j]!;
    if (!l) return { kind: 'right', left: null, right: r, differs: [], outputDiff: null };
    if (!r) return { kind: 'left', left: l, right: null, differs: [], outputDiff: null };
    const differs = stepDifferences(l, r);
    const outputDiff = differs.includes('output') && l.output !== null && r.output !== null ? wordDiff(l.output, r.output) : null;
    return { kind: differs.length ? 'changed' : 'same', left: l, right: r, differs, outputDiff };
  });
  return { rows, exact };
}

function delta(a: number | null, b: number | null): number | null {
  return a === null || b === null ? null : b - a;
}

/** The trace diff of two rollouts from their rows and spans. */
export function diffTraces(
  left: { rollout: RolloutRecord; spans: readonly SpanRecord[] },
  right: { rollout: RolloutRecord; spans: readonly SpanRecord[] },
  labels: DecisionLabels = RESEARCH_LAB_DECISIONS,
): TraceDiff {
  const ls = traceSteps(left.spans);
  const rs = traceSteps(right.spans);
  const L = rolloutFacts(left.rollout, left.spans, ls.length, labels);
  const R = rolloutFacts(right.rollout, right.spans, rs.length, labels);
  const { rows, exact } = alignSteps(ls, rs);
  const counts: Record<RowKind, number> = { same: 0, changed: 0, left: 0, right: 0 };
  for (const r of rows) counts[r.kind]++;

  const names = [...new Set([...Object.keys(L.criteria ?? {}), ...Object.keys(R.criteria ?? {})])];
  const criteria = names.map((criterion) => {
    const a = L.criteria?.[criterion] ?? null;
    const b = R.criteria?.[criterion] ?? null;
    return { criterion, left: a, right: b, delta: delta(a, b) };
  });
  const agents = [...new Set([...Object.keys(L.versions), ...Object.keys(R.versions)])].sort();
  const versionChanges = agents
    .map((agent) => ({ agent, left: L.versions[agent] ?? null, right: R.versions[agent] ?? null }))
    .filter((v) => JSON.stringify(v.left) !== JSON.stringify(v.right));

  const differs: RolloutAspect[] = [];
  if (L.taskId !== R.taskId) differs.push('task');
  if (ls.length !== rs.length || ls.some((s, i) => s.node !== rs[i]!.node)) differs.push('path');
  if ((L.finalOutput ?? '') !== (R.finalOutput ?? '')) differs.push('finalOutput');
  if (L.decision !== R.decision || L.alignment !== R.alignment) differs.push('decision');
  if (L.finalReward !== R.finalReward) differs.push('finalReward');
  if (criteria.some((c) => c.left !== c.right)) differs.push('criteria');
  if (L.turns !== R.turns) differs.push('turns');
  if (L.inputTokens !== R.inputTokens || L.outputTokens !== R.outputTokens) differs.push('tokens');
  if (L.status !== R.status || L.failure !== R.failure) differs.push('status');
  if (versionChanges.length) differs.push('versions');

  return {
    left: L,
    right: R,
    rows,
    differs,
    criteria,
    versionChanges,
    finalOutputDiff: differs.includes('finalOutput') && L.finalOutput !== null && R.finalOutput !== null ? wordDiff(L.finalOutput, R.finalOutput) : null,
    deltas: {
      finalReward: delta(L.finalReward, R.finalReward),
      inputTokens: R.inputTokens - L.inputTokens,
      outputTokens: R.outputTokens - L.outputTokens,
      turns: delta(L.turns, R.turns),
      steps: rs.length - ls.length,
      durationMs: delta(L.durationMs, R.durationMs),
    },
    counts,
    exactAlignment: exact,
  };
}

/** The trace diff of two stored rollouts; a clear error names a rollout the store does not hold. */
export function diffStoredRollouts(store: Pick<TraceStore, 'getRollout' | 'getSpans'>, leftId: string, rightId: string, labels: DecisionLabels = RESEARCH_LAB_DECISIONS): TraceDiff {
  const read = (id: string, side: string): { rollout: RolloutRecord; spans: SpanRecord[] } => {
    const rollout = store.getRollout(id);
    if (!rollout) throw new UsageError(`the ${side} rollout ${id} is not in this workspace's store — list rollouts with \`rollout-lab traces\``);
    return { rollout, spans: store.getSpans(id) };
  };
  return diffTraces(read(leftId, 'left'), read(rightId, 'right'), labels);
}
