import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ToolMessage } from '@langchain/core/messages';
import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { ChainValues } from '@langchain/core/utils/types';
import { tool, type StructuredToolInterface } from '@langchain/core/tools';
import { z } from 'zod';
import { buildResearchLabGraph, type ResearchLabDeps } from '../../../src/core/graph/researchLab/graph';
import { DEFAULT_PROMPTS } from '../../../src/core/graph/researchLab/prompts';
import { JUNIOR_AGENTS, RESEARCH_LAB_AGENTS, type ResearchLabAgent } from '../../../src/core/graph/researchLab/outputs';
import { researchLabOutcome } from '../../../src/core/graph/outcome';
import { ConfigError } from '../../../src/core/errors';
import { ScriptedChatModel, validAnswer, type ScriptedCall, type ScriptedReply } from './scriptedChatModel';

const TASK = { id: 't1', goal: 'Does X reduce Y?', context: 'X reduced Y in mice.' };

function searchTool(log: string[] = []): StructuredToolInterface {
  return tool(
    async ({ query }: { query: string }) => {
      log.push(query);
      return `results for ${query}`;
    },
    { name: 'lit_search', description: 'Search the literature.', schema: z.object({ query: z.string() }) },
  );
}

function deps(model: ScriptedChatModel, over: Partial<ResearchLabDeps> = {}): ResearchLabDeps {
  return {
    model: () => model,
    tools: { lit_search: searchTool() },
    agentTools: (agent) => (['PeerReviewer', 'SafetyOfficer', 'Supervisor', 'PrincipalInvestigator'].includes(agent) ? [] : ['lit_search']),
    prompt: (agent) => DEFAULT_PROMPTS[agent as ResearchLabAgent],
    maxTurns: 40,
    ...over,
  };
}

function review(severity: 'CRITICAL' | 'MAJOR' | 'MINOR'): string {
  return JSON.stringify({ decision: severity === 'MINOR' ? 'APPROVE' : 'REVISE', critique_severity: severity, feedback: `${severity} issue` });
}

/** Valid answers everywhere, except where `over` answers. */
function script(over: (c: ScriptedCall) => ScriptedReply | undefined = () => undefined): (c: ScriptedCall) => ScriptedReply {
  return (c) => over(c) ?? validAnswer(c.agent);
}

const seniorOrder = (m: ScriptedChatModel): string[] =>
  m.calls.map((c) => c.agent).filter((a) => !(JUNIOR_AGENTS as readonly string[]).includes(a));

describe('research-lab graph routing', () => {
  it('routes CRITICAL to the refiner, MAJOR to the designer, MINOR to the PI', async () => {
    // PeerReviewer: CRITICAL in round 1, MAJOR in round 2, MINOR after.
    const model = new ScriptedChatModel(
      script((c) => (c.agent === 'PeerReviewer' ? review((['CRITICAL', 'MAJOR'] as const)[c.n] ?? 'MINOR') : undefined)),
    );
    const state = await buildResearchLabGraph(deps(model)).invoke({ task: TASK });
    assert.deepEqual(seniorOrder(model), [
      'Supervisor',
      'HypothesisRefiner', 'ProtocolDesigner', 'PeerReviewer', 'SafetyOfficer', // round 1: CRITICAL
      'HypothesisRefiner', 'ProtocolDesigner', 'PeerReviewer', 'SafetyOfficer', // round 2: MAJOR
      'ProtocolDesigner', 'PeerReviewer', 'SafetyOfficer', // round 3: MINOR
      'PrincipalInvestigator',
    ]);
    assert.equal(state.round, 3);
    assert.deepEqual(state.reviewHistory.map((r) => `${r.round}:${r.agent}:${r.critique_severity}`), [
      '1:PeerReviewer:CRITICAL', '1:SafetyOfficer:MINOR',
      '2:PeerReviewer:MAJOR', '2:SafetyOfficer:MINOR',
      '3:PeerReviewer:MINOR', '3:SafetyOfficer:MINOR',
    ]);
    assert.equal(state.finalDecision, 'GO');
    // The parallel junior round does not count: supervisor, two rounds of four, one of three, the PI.
    assert.equal(state.turns, 1 + 4 + 4 + 3 + 1);
    // Revisions see every earlier review as a "Previous review" line.
    const refinerRevision = model.calls.filter((c) => c.agent === 'HypothesisRefiner')[1]!;
    assert.equal(refinerRevision.user.match(/^Previous review/gm)?.length, 2);
    const lastDesign = model.calls.filter((c) => c.agent === 'ProtocolDesigner')[2]!;
    assert.equal(lastDesign.user.match(/^Previous review/gm)?.length, 4);
    assert.doesNotMatch(model.calls.find((c) => c.agent === 'HypothesisRefiner')!.user, /Previous review/);
  });

  it('a CRITICAL safety review sends the work back to the refiner as well', async () => {
    const model = new ScriptedChatModel(script((c) => (c.agent === 'SafetyOfficer' && c.n === 0 ? review('CRITICAL') : undefined)));
    await buildResearchLabGraph(deps(model)).invoke({ task: TASK });
    assert.deepEqual(seniorOrder(model).slice(5, 7), ['HypothesisRefiner', 'ProtocolDesigner']);
  });

  it('stops revising at MAX_TURNS and lets the PI decide within the limit', async () => {
    const model = new ScriptedChatModel(script((c) => (c.agent === 'PeerReviewer' ? review('CRITICAL') : undefined)));
    const state = await buildResearchLabGraph(deps(model, { maxTurns: 15 })).invoke({ task: TASK });
    const order = seniorOrder(model);
    assert.equal(order.filter((a) => a === 'PrincipalInvestigator').length, 1);
    // Supervisor 1, rounds of four to 13, the refiner takes turn 14, the last before the PI's: it goes to the PI, not the designer.
    assert.deepEqual(order.slice(-3), ['SafetyOfficer', 'HypothesisRefiner', 'PrincipalInvestigator']);
    assert.equal(order.filter((a) => a === 'PeerReviewer').length, 3);
    assert.equal(state.turns, 15);
    assert.equal(state.finalDecision, 'GO');
  });

  it('never lets a rollout take more turns than the limit, at any step, when reviews stay CRITICAL and every agent keeps calling tools', async () => {
    for (const maxTurns of [2, 3, 4, 5, 6, 7, 10, 15]) {
      // Every agent asks for a search whenever it is offered tools; every review is CRITICAL.
      const model = new ScriptedChatModel(
        script((c) => {
          if (c.tools.length) return { tool_calls: [{ id: `${c.agent}-${c.n}`, name: 'lit_search', args: { query: c.agent } }] };
          return c.agent === 'PeerReviewer' || c.agent === 'SafetyOfficer' ? review('CRITICAL') : undefined;
        }),
      );
      const state = await buildResearchLabGraph(deps(model, { maxTurns, agentTools: () => ['lit_search'] })).invoke({ task: TASK });
      const order = seniorOrder(model);
      assert.ok(state.turns <= maxTurns, `maxTurns ${maxTurns}: ${state.turns} turns (${order.join(' ')})`);
      // Tool steps count: with tools always wanted, the agents use every turn there is.
      assert.equal(state.turns, maxTurns, `maxTurns ${maxTurns}: ${order.join(' ')}`);
      assert.equal(order.length, state.turns, 'one model call per counted step: no step escapes the counter');
      assert.equal(order.at(-1), 'PrincipalInvestigator');
      assert.equal(order.filter((a) => a === 'PrincipalInvestigator').length, 1);
      // The PI's single call is the limit's last turn, so it could not ask for tools.
      assert.deepEqual(model.calls.at(-1)!.tools, []);
      assert.equal(state.finalDecision, 'GO', `maxTurns ${maxTurns}`);
    }
  });

  it('asks for a limit that leaves the Supervisor and the PI a turn each', () => {
    const model = new ScriptedChatModel(script());
    assert.throws(() => buildResearchLabGraph(deps(model, { maxTurns: 1 })), (e: unknown) => e instanceof ConfigError && /maxTurns.*at least 2/.test(e.message));
  });

  it('ends a tool loop at the turn limit and asks for the answer without tools', async () => {
    const searches: string[] = [];
    // Juniors ask for tools for as long as they are offered any.
    const model = new ScriptedChatModel(
      script((c) =>
        c.tools.length ? { tool_calls: [{ id: `call-${c.agent}-${c.n}`, name: 'lit_search', args: { query: `${c.agent} ${c.n}` } }] } : undefined,
      ),
    );
    const state = await buildResearchLabGraph(deps(model, { maxTurns: 6, tools: { lit_search: searchTool(searches) } })).invoke({ task: TASK });
    assert.equal(state.hypotheses.length, 3);
    const last = model.calls.filter((c) => c.agent === 'Geneticist').at(-1)!;
    assert.deepEqual(last.tools, []);
    assert.match(last.user, /turn limit/i);
    assert.ok(state.finalDecision, 'the graph still reaches a decision');
    assert.ok(searches.length > 0);
  });

  it('returns each tool result to the agent that asked, in its own thread', async () => {
    const searches: string[] = [];
    const model = new ScriptedChatModel(
      script((c) =>
        c.agent === 'Pharmacologist' && c.n === 0
          ? { tool_calls: [{ id: 'call-pharm-1', name: 'lit_search', args: { query: 'GLP-1 trials' } }] }
          : undefined,
      ),
    );
    const state = await buildResearchLabGraph(deps(model, { tools: { lit_search: searchTool(searches) } })).invoke({ task: TASK });
    assert.deepEqual(searches, ['GLP-1 trials']);
    const toolMsgs = (agent: string): ToolMessage[] => (state.threads[agent] ?? []).filter((m): m is ToolMessage => ToolMessage.isInstance(m));
    assert.equal(toolMsgs('Pharmacologist').length, 1);
    assert.equal(toolMsgs('Pharmacologist')[0]!.tool_call_id, 'call-pharm-1');
    assert.equal(toolMsgs('Pharmacologist')[0]!.text, 'results for GLP-1 trials');
    assert.equal(toolMsgs('Geneticist').length + toolMsgs('Neurologist').length, 0);
    // The Pharmacologist's second call carries its tool call and the result, and no other agent's.
    const second = model.calls.filter((c) => c.agent === 'Pharmacologist')[1]!;
    assert.deepEqual(second.messages.map((m) => m.getType()), ['system', 'human', 'ai', 'tool']);
    assert.equal(state.sender, 'PrincipalInvestigator');
  });

  it('runs the three juniors in parallel and waits for all of them before the Supervisor', async () => {
    // Tool rounds before answering: Geneticist 2, Pharmacologist 0, Neurologist 1.
    const rounds: Record<string, number> = { Geneticist: 2, Pharmacologist: 0, Neurologist: 1 };
    const model = new ScriptedChatModel(
      script((c) =>
        c.agent in rounds && c.n < rounds[c.agent]!
          ? { tool_calls: [{ id: `${c.agent}-${c.n}`, name: 'lit_search', args: { query: c.agent } }] }
          : undefined,
      ),
    );
    const state = await buildResearchLabGraph(deps(model)).invoke({ task: TASK });
    const firstThree = model.calls.slice(0, 3).map((c) => c.agent).sort();
    assert.deepEqual(firstThree, [...JUNIOR_AGENTS].sort(), 'the juniors start together');
    const sup = model.calls.filter((c) => c.agent === 'Supervisor');
    assert.equal(sup.length, 1);
    const supIndex = model.calls.indexOf(sup[0]!);
    assert.equal(model.calls.slice(supIndex).filter((c) => (JUNIOR_AGENTS as readonly string[]).includes(c.agent)).length, 0);
    assert.deepEqual(sup[0]!.user.match(/^\[\d\] \w+/gm), ['[0] Geneticist', '[1] Pharmacologist', '[2] Neurologist']);
    assert.equal(state.selectedIndex, 1);
    assert.match(model.calls.find((c) => c.agent === 'HypothesisRefiner')!.user, /Pharmacologist hypothesis/);
  });

  it('repairs malformed JSON with one extra round trip', async () => {
    const model = new ScriptedChatModel(
      script((c) => (c.agent === 'HypothesisRefiner' && c.n === 0 ? 'I think the hypothesis is good.' : undefined)),
    );
    const updates: Array<Record<string, unknown>> = [];
    const graph = buildResearchLabGraph(deps(model));
    for await (const u of await graph.stream({ task: TASK }, { streamMode: 'updates' })) updates.push(u as Record<string, unknown>);
    const refinerCalls = model.calls.filter((c) => c.agent === 'HypothesisRefiner');
    assert.equal(refinerCalls.length, 2);
    assert.match(refinerCalls[1]!.user, /"refined_hypothesis"/);
    assert.deepEqual(refinerCalls[1]!.tools, [], 'the repair call binds no tools');
    const report = updates.map((u) => (u.HypothesisRefiner as { lastOutput?: Record<string, unknown> } | undefined)?.lastOutput).find(Boolean)!;
    assert.equal(report.ok, true);
    assert.equal(report.repaired, true);
    assert.deepEqual(report.value, { refined_hypothesis: 'refined statement' });
    const final = researchLabOutcome(await graph.invoke({ task: TASK }));
    assert.deepEqual(final.failures, []);
  });

  it('records a failure and completes when an answer stays malformed', async () => {
    const model = new ScriptedChatModel(script((c) => (c.agent === 'ProtocolDesigner' ? '{"title": "no steps"}' : undefined)));
    const state = await buildResearchLabGraph(deps(model)).invoke({ task: TASK });
    assert.equal(model.calls.filter((c) => c.agent === 'ProtocolDesigner').length, 2);
    assert.equal(state.protocol, null);
    assert.equal(state.failures.length, 1);
    assert.equal(state.failures[0]!.agent, 'ProtocolDesigner');
    assert.match(state.failures[0]!.error, /steps/);
    assert.equal(state.failures[0]!.raw, '{"title": "no steps"}');
    assert.match(model.calls.find((c) => c.agent === 'PeerReviewer')!.user, /no valid protocol/);
    const outcome = researchLabOutcome(state);
    assert.equal(outcome.decision, 'GO');
    assert.deepEqual(outcome.failures.map((f) => f.agent), ['ProtocolDesigner']);
  });

  it('logs an unparseable review, counts it as MINOR and carries on', async () => {
    const model = new ScriptedChatModel(script((c) => (c.agent === 'SafetyOfficer' ? 'Looks risky!!' : undefined)));
    const state = await buildResearchLabGraph(deps(model)).invoke({ task: TASK });
    assert.equal(state.finalDecision, 'GO');
    assert.deepEqual(seniorOrder(model).slice(-2), ['SafetyOfficer', 'PrincipalInvestigator']);
    assert.equal(state.reviews.SafetyOfficer!.critique_severity, 'MINOR');
    assert.deepEqual(state.failures.map((f) => f.agent), ['SafetyOfficer']);
    assert.equal(state.reviewHistory.filter((r) => r.agent === 'SafetyOfficer').length, 0);
  });

  it('lets a transport error in the repair call end the run instead of hiding it as a parse failure', async () => {
    const model = new ScriptedChatModel((c) => {
      if (c.agent === 'HypothesisRefiner' && c.n === 1) throw new Error('connection refused');
      return c.agent === 'HypothesisRefiner' ? 'not json' : validAnswer(c.agent);
    });
    await assert.rejects(buildResearchLabGraph(deps(model)).invoke({ task: TASK }), /connection refused/);
  });

  it('falls back to hypothesis 0 when the Supervisor picks no valid index', async () => {
    const model = new ScriptedChatModel(script((c) => (c.agent === 'Supervisor' ? '{"selected_hypothesis_index": 7}' : undefined)));
    const state = await buildResearchLabGraph(deps(model)).invoke({ task: TASK });
    assert.equal(state.selectedIndex, 0);
    assert.match(model.calls.filter((c) => c.agent === 'Supervisor')[1]!.user, /0\.\.2/);
    assert.match(state.failures[0]!.error, /selected_hypothesis_index/);
  });

  it('leaves the decision empty when the PI answer cannot be read', async () => {
    const model = new ScriptedChatModel(script((c) => (c.agent === 'PrincipalInvestigator' ? '' : undefined)));
    const outcome = researchLabOutcome(await buildResearchLabGraph(deps(model)).invoke({ task: TASK }));
    assert.equal(outcome.decision, null);
    assert.equal(outcome.finalOutput, null);
    assert.deepEqual(outcome.failures.map((f) => f.agent), ['PrincipalInvestigator']);
  });

  it('reports each answer to callbacks on the node output (trace contract)', async () => {
    const ends: Array<{ lastOutput?: { agent: string; ok: boolean } }> = [];
    const handler = BaseCallbackHandler.fromMethods({
      handleChainEnd(outputs: ChainValues) {
        if (outputs && typeof outputs === 'object' && 'lastOutput' in outputs && outputs.lastOutput) ends.push(outputs as never);
      },
    });
    const model = new ScriptedChatModel(script());
    await buildResearchLabGraph(deps(model)).invoke({ task: TASK }, { callbacks: [handler] });
    const agents = new Set(ends.map((e) => e.lastOutput!.agent));
    assert.deepEqual([...agents].sort(), [...RESEARCH_LAB_AGENTS].sort());
  });

  it('uses the tool names the config gives, and rejects unknown ones', async () => {
    const renamed = tool(async () => 'renamed ok', { name: 'my_search', description: 'search', schema: z.object({ q: z.string() }) });
    const model = new ScriptedChatModel(
      script((c) => (c.agent === 'Neurologist' && c.n === 0 ? { tool_calls: [{ id: 'n1', name: 'my_search', args: { q: 'x' } }] } : undefined)),
    );
    const d = deps(model, { tools: { my_search: renamed }, agentTools: (a) => (a === 'Neurologist' ? ['my_search'] : []) });
    const state = await buildResearchLabGraph(d).invoke({ task: TASK });
    assert.equal(model.calls.find((c) => c.agent === 'Neurologist')!.tools[0], 'my_search');
    assert.equal(model.calls.find((c) => c.agent === 'Geneticist')!.tools.length, 0);
    // Juniors without tools reach the deferred Supervisor by plain edges; it still runs once, after all three.
    assert.equal(model.calls.filter((c) => c.agent === 'Supervisor').length, 1);
    assert.equal(state.hypotheses.length, 3);
    assert.ok(state.threads.Neurologist!.some((m) => ToolMessage.isInstance(m) && m.text === 'renamed ok'));
    assert.throws(() => buildResearchLabGraph({ ...d, agentTools: () => ['pubmed_search'] }), (e: unknown) => e instanceof ConfigError && /pubmed_search.*my_search/.test(e.message));
    assert.throws(() => buildResearchLabGraph({ ...d, agents: ['Geneticist'] }), ConfigError);
  });

  it('gives a tool loop to any agent the config gives tools, the SafetyOfficer included', async () => {
    const model = new ScriptedChatModel(
      script((c) => {
        if (c.agent !== 'SafetyOfficer') return undefined;
        if (c.n === 0) return { tool_calls: [{ id: 's1', name: 'lit_search', args: { query: 'adverse events' } }] };
        return c.n === 1 ? review('MAJOR') : undefined;
      }),
    );
    const state = await buildResearchLabGraph(deps(model, { agentTools: (a) => (a === 'SafetyOfficer' ? ['lit_search'] : []) })).invoke({ task: TASK });
    assert.deepEqual(seniorOrder(model), [
      'Supervisor', 'HypothesisRefiner', 'ProtocolDesigner', 'PeerReviewer', 'SafetyOfficer', 'SafetyOfficer',
      'ProtocolDesigner', 'PeerReviewer', 'SafetyOfficer', 'PrincipalInvestigator',
    ]);
    assert.equal(state.threads.SafetyOfficer!.filter((m) => ToolMessage.isInstance(m)).length, 1);
  });

  it('answers a tool call to a tool the agent may not use with an error it can read', async () => {
    const model = new ScriptedChatModel(
      script((c) => (c.agent === 'Geneticist' && c.n === 0 ? { tool_calls: [{ id: 'g1', name: 'delete_everything', args: {} }] } : undefined)),
    );
    const state = await buildResearchLabGraph(deps(model)).invoke({ task: TASK });
    const reply = state.threads.Geneticist!.find((m): m is ToolMessage => ToolMessage.isInstance(m))!;
    assert.equal(reply.status, 'error');
    assert.match(reply.text, /delete_everything/);
    assert.equal(state.hypotheses.length, 3);
  });
});
