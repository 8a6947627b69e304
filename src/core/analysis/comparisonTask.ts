import { RESEARCH_LAB_DECISIONS, decisionAlignment, type Alignment, type DecisionLabels } from '../data/decisionAlignment';
import { UsageError } from '../errors';
import type { TraceStore } from '../store/traceStore';
import type { RolloutRecord } from '../store/types';
import { Attr, type SpanRecord } from '../trace/span';
import { comparisonOfRun } from './comparisonRunParams';
import { judgeSpan, protocolFromJudgeInput } from './judgeInputProtocol';

/** One sample of a task on one side, with the protocol the judge scored. */
export interface ProtocolSample {
  rolloutId: string;
  sample: number;
  status: RolloutRecord['status'];
  finalReward: number | null;
  decision: string | null;
  /** The decision against the task's expected answer, under the graph's decision mapping (decisionAlignment). */
  alignment: Alignment;
  criteria: Record<string, number> | null;
  judgeFailed: boolean;
  rationale: string | null;
  /** The text the judge scored; null when the rollout produced none. */
  protocol: string | null;
  /** Where `protocol` was read: the root span (rollouts stored since it is recorded there) or the judge's input (older ones). */
  protocolSource: 'output' | 'judge-input' | null;
  error: string | null;
}

export interface ComparisonTaskSide {
  runId: string;
  label: string;
  samples: ProtocolSample[];
}

export interface ComparisonTaskDetail {
  taskId: string;
  goal: string | null;
  expectedDecision: string | null;
  a: ComparisonTaskSide;
  b: ComparisonTaskSide;
}

/**
 * Both sides' protocols for one task with their judge scores and rationale.
 * Loaded per task on demand: protocols are the large part of a trace.
 */
export function comparisonTask(store: TraceStore, comparison: { runA: string; runB: string }, taskId: string, labels: DecisionLabels = RESEARCH_LAB_DECISIONS): ComparisonTaskDetail {
  const task: { goal: string | null; expected: string | null } = { goal: null, expected: null };
  const side = (runId: string, what: string): ComparisonTaskSide => {
    const run = store.getRun(runId);
    if (!run) throw new UsageError(`${what} run "${runId}" is not in this workspace's store`);
    const rollouts = store
      .listRollouts({ runId, taskId, superseded: false, limit: Number.MAX_SAFE_INTEGER })
      .rollouts.filter((r) => r.status === 'succeeded' || r.status === 'failed')
      .sort((x, y) => x.sample - y.sample || x.startTime - y.startTime);
    const samples = rollouts.map((r): ProtocolSample => {
      const spans = store.getSpans(r.id);
      const root = spans.find((s) => s.parentSpanId === null && s.kind === 'rollout');
      const g = root?.attributes[Attr.taskGoal];
      if (task.goal === null && typeof g === 'string') task.goal = g;
      task.expected ??= r.expectedDecision;
      const { text, source } = protocolOf(spans, root);
      const judge = judgeSpan(spans);
      const rationale = judge?.attributes[Attr.judgeRationale];
      return {
        rolloutId: r.id,
        sample: r.sample,
        status: r.status,
        finalReward: r.finalReward,
        decision: r.decision,
        alignment: decisionAlignment(r.decision, r.expectedDecision, labels),
        criteria: r.criteria,
        judgeFailed: r.judgeFailed,
        rationale: typeof rationale === 'string' && rationale ? rationale : null,
        protocol: text,
        protocolSource: source,
        error: r.error,
      };
    });
    return { runId, label: comparisonOfRun(run)?.label ?? runId, samples };
  };
  const a = side(comparison.runA, 'side A');
  const b = side(comparison.runB, 'side B');
  if (a.samples.length === 0 && b.samples.length === 0) {
    throw new UsageError(`task "${taskId}" has no finished rollout in ${comparison.runA} or ${comparison.runB}`);
  }
  return { taskId, goal: task.goal, expectedDecision: task.expected, a, b };
}

function protocolOf(spans: readonly SpanRecord[], root: SpanRecord | undefined): { text: string | null; source: ProtocolSample['protocolSource'] } {
  const own = root?.attributes[Attr.finalOutput];
  if (typeof own === 'string') return { text: own, source: 'output' };
  if (root && Attr.finalOutput in root.attributes) return { text: null, source: null };
  // Rollouts stored before the root kept the output: read what the judge was shown.
  const text = protocolFromJudgeInput(spans);
  return text === null ? { text: null, source: null } : { text, source: 'judge-input' };
}
