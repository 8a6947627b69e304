import assert from 'node:assert/strict';
import { describeLabGraph } from '../../src/core/lab/graphDescription';
import { Lab } from '../../src/core/lab/lab';
import { Attr, type SpanRecord } from '../../src/core/trace/span';
import { AGENT, type TicketResult } from './supportTicket';

/**
 * For a command agent whose framework records its own llm spans beside the
 * gateway's: each call became one span (matched by `by`), the counts a report
 * shows are those of two calls (not four), and each call keeps the
 * framework's nesting, inside the agent's step.
 */
export function assertOneSpanPerCall(result: TicketResult, by: string): void {
  const calls = result.spans.filter((s) => s.kind === 'llm');
  assert.equal(result.rollout.turns, 2);
  assert.equal(result.rollout.agents[0]!.inputTokens, calls.reduce((n, s) => n + Number(s.attributes[Attr.inputTokens]), 0), 'the tokens of two calls');
  assert.deepEqual(calls.map((s) => s.attributes[Attr.matchedBy]), [by, by]);
  assert.ok(calls.every((s) => s.attributes[Attr.unmatchedCall] === undefined));
  const byId = new Map(result.spans.map((s) => [s.spanId, s]));
  const insideAgent = (s: SpanRecord): boolean => {
    for (let p = byId.get(s.parentSpanId ?? ''); p; p = byId.get(p.parentSpanId ?? '')) if (p.kind === 'node' && p.attributes[Attr.nodeName] === AGENT) return true;
    return false;
  };
  assert.ok(calls.every(insideAgent), `the calls hang inside the ${AGENT} step`);
}

/** The graph view draws the lab's agent, not the framework's wrappers and turns: start → Support → end. */
export async function assertGraphOfAgents(ws: string): Promise<void> {
  const lab = await Lab.open({ workspace: ws });
  try {
    const g = await describeLabGraph(lab);
    assert.deepEqual(g.edges.map((e) => `${e.source}>${e.target}`).sort(), ['Support>__end__', '__start__>Support']);
  } finally {
    await lab.close();
  }
}
