import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { alignSteps, diffStoredRollouts, diffTraces, traceSteps, wordDiff, type TraceStep } from '../../../src/core/analysis/traceDiff';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';
import { realTraces, type TraceFixture } from '../../webview/fixtures/realTraces';

/** Length of a longest common subsequence, by the textbook table (the alignment must pair this many steps). */
function lcsLength(a: readonly string[], b: readonly string[]): number {
  const t = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = 1; i <= a.length; i++) for (let j = 1; j <= b.length; j++) t[i]![j] = a[i - 1] === b[j - 1] ? t[i - 1]![j - 1]! + 1 : Math.max(t[i - 1]![j]!, t[i]![j - 1]!);
  return t[a.length]![b.length]!;
}

function clone(f: TraceFixture): TraceFixture {
  return structuredClone(f);
}

/** The spans of a node visit and everything under it. */
function subtree(spans: readonly SpanRecord[], rootId: string): Set<string> {
  const ids = new Set([rootId]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const s of spans) if (s.parentSpanId && ids.has(s.parentSpanId) && !ids.has(s.spanId)) ids.add(s.spanId), (grew = true);
  }
  return ids;
}

describe('trace diff on real research-lab rollouts (simulated endpoint)', () => {
  let traces: TraceFixture[];
  let sameTask: TraceFixture[];
  before(async () => {
    traces = await realTraces({ tasks: 2, samples: 1, seed: 5, logprobs: false });
    sameTask = await realTraces({ tasks: 1, samples: 2, seed: 11, logprobs: false });
  });

  it('reads each node visit in graph order with its output, tool calls, tokens and AIR rewards', () => {
    const { spans, rollout } = traces[0]!;
    const steps = traceSteps(spans);
    const nodeSpans = spans.filter((s) => s.kind === 'node');
    assert.equal(steps.length, nodeSpans.length);
    // Supersteps never go backwards, and the names within one are sorted.
    for (let i = 1; i < steps.length; i++) {
      const [a, b] = [steps[i - 1]!, steps[i]!];
      assert.ok(a.step! <= b.step!, `step ${a.step} before ${b.step}`);
      if (a.step === b.step) assert.ok(a.node < b.node);
    }
    // Tokens per step add up to the rollout's (the judge's calls are not under a node and not in the row's agents).
    const tokens = steps.reduce((s, x) => s + x.inputTokens + x.outputTokens, 0);
    const rowTokens = rollout.agents.reduce((s, a) => s + a.inputTokens + a.outputTokens, 0);
    assert.equal(tokens, rowTokens);
    // Every intermediate reward lands on a tool step, and every executed tool call has its result.
    const air = spans.filter((s) => s.kind === 'reward' && s.attributes[Attr.rewardKind] === 'intermediate').length;
    assert.equal(steps.reduce((s, x) => s + x.rewards.length, 0), air);
    for (const s of steps) {
      if (s.node.endsWith('_tools')) {
        assert.ok(s.toolCalls.length > 0 && s.toolCalls.every((c) => c.result !== null), `${s.node} executed its calls`);
        assert.equal(s.llmCalls, 0);
      } else {
        assert.ok(s.llmCalls >= 1, `${s.node} made a model call`);
        assert.ok(s.output !== null || s.toolCalls.length > 0, `${s.node} answered or asked for a tool`);
      }
    }
    assert.ok(steps.some((s) => s.rewards.length > 0));
    // A node that asked for a tool shows the request (name and arguments, no result yet).
    const asked = steps.find((s) => !s.node.endsWith('_tools') && s.toolCalls.length > 0)!;
    assert.ok(asked.toolCalls.every((c) => c.result === null && c.args.startsWith('{')));
  });

  it('finds no difference between a rollout and itself', () => {
    const d = diffTraces(traces[0]!, clone(traces[0]!));
    assert.deepEqual(d.differs, []);
    assert.equal(d.counts.changed + d.counts.left + d.counts.right, 0);
    assert.equal(d.counts.same, d.left.steps);
    assert.ok(d.rows.every((r) => r.kind === 'same' && r.differs.length === 0 && r.left!.node === r.right!.node));
    assert.equal(d.finalOutputDiff, null);
    assert.deepEqual(d.deltas, { finalReward: 0, inputTokens: 0, outputTokens: 0, turns: 0, steps: 0, durationMs: 0 });
    assert.deepEqual(d.versionChanges, []);
  });

  it('aligns two tasks with paths of different lengths and loops by a longest common subsequence', () => {
    const [a, b] = traces as [TraceFixture, TraceFixture];
    const d = diffTraces(a, b);
    const la = traceSteps(a.spans).map((s) => s.node);
    const lb = traceSteps(b.spans).map((s) => s.node);
    assert.notEqual(la.length, lb.length, 'the two tasks took paths of different lengths');
    // Loops: a node visited more than once on each side.
    assert.ok(la.some((n, i) => la.indexOf(n) !== i) && lb.some((n, i) => lb.indexOf(n) !== i));
    assert.ok(d.exactAlignment);
    const paired = d.rows.filter((r) => r.left && r.right);
    assert.equal(paired.length, lcsLength(la, lb));
    assert.ok(paired.every((r) => r.left!.node === r.right!.node));
    // Each side's steps appear once, in order.
    assert.deepEqual(d.rows.filter((r) => r.left).map((r) => r.left!.index), la.map((_, i) => i));
    assert.deepEqual(d.rows.filter((r) => r.right).map((r) => r.right!.index), lb.map((_, i) => i));
    assert.equal(d.counts.left, la.length - paired.length);
    assert.equal(d.counts.right, lb.length - paired.length);
    assert.ok(d.counts.left + d.counts.right > 0);
    for (const k of ['task', 'path', 'finalOutput', 'finalReward', 'criteria', 'tokens'] as const) assert.ok(d.differs.includes(k), k);
    assert.equal(d.deltas.steps, lb.length - la.length);
    assert.equal(d.deltas.finalReward, b.rollout.finalReward! - a.rollout.finalReward!);
    // Different tasks: the outputs of paired model steps differ, with a word diff whose sides rebuild each text.
    const changed = paired.find((r) => r.differs.includes('output') && r.outputDiff)!;
    assert.ok(changed);
    const side = (keep: 'removed' | 'added'): string => changed.outputDiff!.filter((p) => p.op !== (keep === 'removed' ? 'added' : 'removed')).map((p) => p.text).join('');
    assert.equal(side('removed'), changed.left!.output);
    assert.equal(side('added'), changed.right!.output);
  });

  it('compares two samples of the same task step by step', () => {
    const [a, b] = sameTask as [TraceFixture, TraceFixture];
    assert.equal(a.rollout.taskId, b.rollout.taskId);
    const d = diffTraces(a, b);
    assert.ok(!d.differs.includes('task'));
    assert.ok(!d.differs.includes('versions'), 'same configuration');
    // The graph starts the same way on both sides: the first superstep's three juniors pair up.
    assert.deepEqual(
      d.rows.slice(0, 3).map((r) => [r.left?.node, r.right?.node]),
      [['Geneticist', 'Geneticist'], ['Neurologist', 'Neurologist'], ['Pharmacologist', 'Pharmacologist']],
    );
    const criteria = Object.keys(a.rollout.criteria ?? {});
    assert.deepEqual(d.criteria.map((c) => c.criterion), criteria);
    for (const c of d.criteria) assert.equal(c.delta, b.rollout.criteria![c.criterion]! - a.rollout.criteria![c.criterion]!);
  });

  it('marks a removed visit, a changed answer, a changed tool result and a changed reward', () => {
    const left = traces[1]!;
    const right = clone(left);
    const nodes = right.spans.filter((s) => s.kind === 'node');
    // Drop the first tool-node visit (and what ran under it) from the right side.
    const tools = nodes.find((s) => s.name.endsWith('_tools'))!;
    const gone = subtree(right.spans, tools.spanId);
    right.spans = right.spans.filter((s) => !gone.has(s.spanId));
    // Change one word of the last model answer, and one tool result of a later tool visit.
    const nodeIds = new Set(right.spans.filter((s) => s.kind === 'node').map((s) => s.spanId));
    const llm = right.spans.filter((s) => s.kind === 'llm' && nodeIds.has(s.parentSpanId ?? '') && typeof s.attributes[Attr.outputMessages] === 'string' && (s.attributes[Attr.outputMessages] as string).includes('"content":"{')).at(-1)!;
    llm.attributes[Attr.outputMessages] = (llm.attributes[Attr.outputMessages] as string).replace(/"content":"\{/, '"content":"CHANGED {');
    const tool = right.spans.filter((s) => s.kind === 'tool').at(-1)!;
    tool.attributes[Attr.toolResult] = '{"results":[]}';
    const air = right.spans.find((s) => s.kind === 'reward' && s.parentSpanId === tool.spanId)!;
    air.attributes[Attr.rewardValue] = -0.1;

    const d = diffTraces(left, right);
    const only = d.rows.filter((r) => r.kind === 'left');
    assert.deepEqual(only.map((r) => r.left!.spanId), [tools.spanId]);
    assert.equal(d.counts.right, 0);
    assert.ok(d.differs.includes('path'));
    const byLlm = d.rows.find((r) => r.right && r.right.spanId === llm.parentSpanId)!;
    assert.equal(byLlm.kind, 'changed');
    assert.deepEqual(byLlm.differs, ['output']);
    assert.deepEqual(byLlm.outputDiff!.filter((p) => p.op !== 'same').map((p) => [p.op, p.text.trim()]), [['added', 'CHANGED']]);
    const byTool = d.rows.find((r) => r.right && r.right.spanId === tool.parentSpanId)!;
    assert.deepEqual(byTool.differs, ['toolCalls', 'rewards']);
    // Every other paired row is the same.
    assert.equal(d.counts.changed, 2);
    assert.equal(d.counts.same, d.rows.length - 3);
  });

  it('keeps the order of parallel branches when their start times interleave differently', () => {
    const a = traces[0]!;
    const b = clone(a);
    const first = b.spans.filter((s) => s.kind === 'node' && s.attributes[Attr.nodeStep] === 1);
    assert.ok(first.length >= 2);
    const times = first.map((s) => s.startTime).reverse();
    first.forEach((s, i) => (s.startTime = times[i]!));
    assert.deepEqual(
      traceSteps(b.spans).map((s) => s.node),
      traceSteps(a.spans).map((s) => s.node),
    );
    assert.deepEqual(diffTraces(a, b).differs, []);
  });

  it('says which rollout the store does not hold', () => {
    const store = { getRollout: (id: string) => (id === traces[0]!.rollout.id ? traces[0]!.rollout : null), getSpans: () => traces[0]!.spans };
    assert.throws(() => diffStoredRollouts(store, traces[0]!.rollout.id, 'f'.repeat(32)), /the right rollout f{32} is not in this workspace's store/);
    const d = diffStoredRollouts(store, traces[0]!.rollout.id, traces[0]!.rollout.id);
    assert.equal(d.counts.same, d.rows.length);
  });
});

describe('trace diff alignment', () => {
  const step = (node: string, index: number, output = 'x'): TraceStep => ({
    index, node, step: index, spanId: String(index).padStart(16, '0'), output, toolCalls: [], llmCalls: 1, inputTokens: 1, outputTokens: 1, latencyMs: index, errors: [], rewards: [],
  });
  it('pairs a loop that ran once more on one side with the visits both made', () => {
    const left = ['A', 'B', 'C', 'B', 'C', 'D'].map((n, i) => step(n, i));
    const right = ['A', 'B', 'C', 'D'].map((n, i) => step(n, i));
    const { rows } = alignSteps(left, right);
    assert.deepEqual(rows.map((r) => r.kind), ['same', 'same', 'same', 'left', 'left', 'same']);
  });
  it('does not let latency alone make a step differ', () => {
    const { rows } = alignSteps([step('A', 0)], [{ ...step('A', 0), latencyMs: 999 }]);
    assert.equal(rows[0]!.kind, 'same');
  });
  it('gives up the word diff on very long texts but still marks the output changed', () => {
    const long = 'word '.repeat(5000);
    assert.equal(wordDiff(long, long + 'more'), null);
    const { rows } = alignSteps([step('A', 0, long)], [step('A', 0, long + 'more')]);
    assert.deepEqual(rows[0]!.differs, ['output']);
    assert.equal(rows[0]!.outputDiff, null);
  });
});
