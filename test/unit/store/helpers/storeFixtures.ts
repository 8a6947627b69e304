import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { SpanKind, SpanRecord } from '../../../../src/core/trace/span';
import type { FailureKind } from '../../../../src/core/store/failureKinds';
import type { RolloutAgentRecord, RolloutRecord, RolloutStatus, RunRecord, Split } from '../../../../src/core/store/types';

export function tempWorkspace(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'rl-store-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function traceId(): string {
  return randomBytes(16).toString('hex');
}

export function spanId(): string {
  return randomBytes(8).toString('hex');
}

export function makeRun(id: string, over: Partial<RunRecord> = {}): RunRecord {
  return { id, startTime: 1_000, endTime: null, status: 'running', params: { dataset: 'pubmedqa', samples: 2 }, simulated: true, planned: 10, ...over };
}

export function makeAgent(agent: string, over: Partial<RolloutAgentRecord> = {}): RolloutAgentRecord {
  return {
    agent,
    promptVersion: `pv-${agent}-1`,
    model: 'small',
    modelVersion: 'v1',
    visits: 1,
    llmCalls: 2,
    toolCalls: 1,
    errors: 0,
    inputTokens: 100,
    outputTokens: 50,
    latencyMs: 200,
    ...over,
  };
}

export interface RolloutSpec {
  id?: string;
  runId: string;
  taskId?: string;
  sample?: number;
  split?: Split | null;
  status?: RolloutStatus;
  failure?: FailureKind | null;
  finalReward?: number | null;
  rewardBreakdown?: Record<string, number> | null;
  truncatedAnswers?: number | null;
  truncatedPrompts?: number | null;
  startTime?: number;
  endTime?: number | null;
  agents?: RolloutAgentRecord[];
}

export function makeRollout(spec: RolloutSpec): RolloutRecord {
  const startTime = spec.startTime ?? 10_000;
  return {
    id: spec.id ?? traceId(),
    runId: spec.runId,
    taskId: spec.taskId ?? 'task-1',
    split: spec.split === undefined ? 'train' : spec.split,
    sample: spec.sample ?? 0,
    status: spec.status ?? 'succeeded',
    failure: spec.failure ?? null,
    finalReward: spec.finalReward === undefined ? 0.5 : spec.finalReward,
    criteria: { novelty: 0.5, clarity: 0.75 },
    rewardBreakdown: spec.rewardBreakdown ?? null,
    judgeFailed: false,
    decision: 'GO',
    expectedDecision: 'yes',
    turns: 7,
    error: null,
    simulated: true,
    startTime,
    endTime: spec.endTime === undefined ? startTime + 500 : spec.endTime,
    spanCount: 0,
    agents: spec.agents ?? [makeAgent('Geneticist'), makeAgent('Supervisor')],
    truncatedAnswers: spec.truncatedAnswers === undefined ? 0 : spec.truncatedAnswers,
    truncatedPrompts: spec.truncatedPrompts === undefined ? 0 : spec.truncatedPrompts,
  };
}

/** A span tree shaped like a research-lab rollout: root, nodes, llm calls with KBs of messages, tools. */
export function makeSpans(rolloutId: string, count: number, startTime = 10_000): SpanRecord[] {
  const root: SpanRecord = {
    traceId: rolloutId,
    spanId: spanId(),
    parentSpanId: null,
    name: 'rollout',
    kind: 'rollout',
    startTime,
    endTime: startTime + count + 1,
    status: 'ok',
    attributes: { 'rollout_lab.task.id': 'task-1' },
  };
  const spans: SpanRecord[] = [root];
  let node = root;
  for (let i = 1; i < count; i++) {
    const kind: SpanKind = i % 5 === 1 ? 'node' : i % 5 === 4 ? 'tool' : 'llm';
    const parent = kind === 'node' ? root : node;
    const s: SpanRecord = {
      traceId: rolloutId,
      spanId: spanId(),
      parentSpanId: parent.spanId,
      name: `${kind} ${i}`,
      kind,
      startTime: startTime + i,
      endTime: startTime + i + 0.5,
      status: i % 17 === 0 ? 'error' : 'ok',
      attributes:
        kind === 'llm'
          ? {
              'gen_ai.request.model': 'small',
              'gen_ai.input.messages': JSON.stringify([{ role: 'user', content: `question ${i} `.repeat(40) + 'ünïcödé ✓' }]),
              'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', content: `answer ${i}` }]),
              'gen_ai.usage.input_tokens': 120 + i,
              'rollout_lab.logprobs': [-0.1, -0.25, -1.5],
            }
          : { 'rollout_lab.node.name': `n${i}`, 'rollout_lab.seq': i },
    };
    if (kind === 'node') node = s;
    spans.push(s);
  }
  return spans;
}
