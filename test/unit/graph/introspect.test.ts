import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { describeGraph } from '../../../src/core/graph/introspect';
import { buildResearchLabGraph } from '../../../src/core/graph/researchLab/graph';
import { DEFAULT_PROMPTS } from '../../../src/core/graph/researchLab/prompts';
import { RESEARCH_LAB_AGENTS, type ResearchLabAgent } from '../../../src/core/graph/researchLab/outputs';
import { ScriptedChatModel } from './scriptedChatModel';

const WITH_TOOLS = ['Geneticist', 'Pharmacologist', 'Neurologist', 'HypothesisRefiner', 'ProtocolDesigner'];

function graph(withTools: string[]) {
  const search = tool(async () => 'ok', { name: 'pubmed_search', description: 'search', schema: z.object({ query: z.string() }) });
  return buildResearchLabGraph({
    model: () => new ScriptedChatModel(() => ''),
    tools: { pubmed_search: search },
    agentTools: (a) => (withTools.includes(a) ? ['pubmed_search'] : []),
    prompt: (a) => DEFAULT_PROMPTS[a as ResearchLabAgent],
    maxTurns: 15,
  });
}

describe('describeGraph', () => {
  it('lists the nine agents, their tool nodes and the labelled conditional edges of the research lab', async () => {
    const d = await describeGraph(graph(WITH_TOOLS));
    const kinds = Object.fromEntries(d.nodes.map((n) => [n.id, n.kind]));
    for (const a of RESEARCH_LAB_AGENTS) assert.equal(kinds[a], 'agent', a);
    for (const a of WITH_TOOLS) assert.equal(kinds[`${a}_tools`], 'tools', a);
    assert.equal(kinds.__start__, 'start');
    assert.equal(kinds.__end__, 'end');
    assert.equal(d.nodes.length, 9 + 5 + 2);

    const edge = (e: { source: string; target: string; conditional: boolean; label?: string }): string =>
      `${e.source} ${e.conditional ? `-[${e.label ?? ''}]->` : '-->'} ${e.target}`;
    const edges = new Set(d.edges.map(edge));
    const expected = [
      '__start__ --> Geneticist',
      '__start__ --> Pharmacologist',
      '__start__ --> Neurologist',
      'Geneticist -[tool call]-> Geneticist_tools',
      'Geneticist_tools --> Geneticist',
      'Geneticist -[answer]-> Supervisor',
      'Neurologist -[answer]-> Supervisor',
      'Pharmacologist -[answer]-> Supervisor',
      'Supervisor -[answer]-> HypothesisRefiner',
      'HypothesisRefiner -[tool call]-> HypothesisRefiner_tools',
      'HypothesisRefiner -[answer]-> ProtocolDesigner',
      'ProtocolDesigner -[answer]-> PeerReviewer',
      'PeerReviewer -[answer]-> SafetyOfficer',
      // Every agent on the shared turn counter goes to the PI once it has used the last turn before the PI's.
      'Supervisor -[turn limit]-> PrincipalInvestigator',
      'HypothesisRefiner -[turn limit]-> PrincipalInvestigator',
      'ProtocolDesigner -[turn limit]-> PrincipalInvestigator',
      'PeerReviewer -[turn limit]-> PrincipalInvestigator',
      'SafetyOfficer -[CRITICAL]-> HypothesisRefiner',
      'SafetyOfficer -[MAJOR]-> ProtocolDesigner',
      'SafetyOfficer -[approve/turn limit]-> PrincipalInvestigator',
      'PrincipalInvestigator --> __end__',
    ];
    for (const e of expected) assert.ok(edges.has(e), `missing edge ${e}; have:\n${[...edges].join('\n')}`);
    assert.equal(d.edges.length, 3 + 5 * 3 + 1 + 1 + 3 + 1 + 4);
  });

  it('follows the config: an agent without tools gets no tool node', async () => {
    const d = await describeGraph(graph([]));
    assert.equal(d.nodes.filter((n) => n.kind === 'tools').length, 0);
    assert.ok(d.edges.some((e) => e.source === 'Geneticist' && e.target === 'Supervisor' && !e.conditional));
  });
});
