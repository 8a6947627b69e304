import assert from 'node:assert/strict';
import { join } from 'node:path';
import { afterEach, before, describe, it } from 'node:test';
import { tool, type StructuredToolInterface } from '@langchain/core/tools';
import { z } from 'zod';
import { loadDataset, type Task } from '../../../src/core/data/dataset';
import { runAgentTurn } from '../../../src/core/graph/researchLab/agentTurn';
import { buildResearchLabGraph } from '../../../src/core/graph/researchLab/graph';
import { HypothesisOutput, ROLE_MARKER_RE, type ResearchLabAgent } from '../../../src/core/graph/researchLab/outputs';
import { DEFAULT_PROMPTS } from '../../../src/core/graph/researchLab/prompts';
import { createLookupTable } from '../../../src/core/graph/tools/lookup';
import { DEFAULT_GENE_ONTOLOGY_TABLE, DEFAULT_PROTEIN_TABLE } from '../../../src/core/graph/tools/defaultTables';
import { researchLabTools } from '../../../src/core/graph/tools/researchLabTools';
import { datasetSearchProvider } from '../../../src/core/graph/tools/search';
import type { ResolvedModel } from '../../../src/core/llm/routing';
import { RoutedChatModel } from '../../../src/core/llm/routedChatModel';
import { newTraceId } from '../../../src/core/trace/ids';
import { LangChainTracer } from '../../../src/core/trace/langchainTracer';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';
import { RolloutTracer } from '../../../src/core/trace/tracer';
import { startOpenAIStub, type OpenAIStub, type StubReply, type StubRequest } from '../../fakes/openaiStub';
import { resolvedAt } from '../llm/tracedCall';

const PUBMEDQA = join(__dirname, '..', '..', '..', '..', 'shared', 'data', 'pubmedqa', 'ori_pqal.json');
const longSteps = Array.from({ length: 40 }, (_, i) => `Step ${i}: recruit and measure amyloid-beta in cohort ${i}`);

/** What a model means to answer, per agent: valid for its schema. */
const ANSWERS: Record<ResearchLabAgent, unknown> = {
  Geneticist: { hypothesis: 'APOE4 raises amyloid-beta.', supporting_papers: [] },
  Pharmacologist: { hypothesis: 'Statins lower amyloid-beta.', supporting_papers: [] },
  Neurologist: { hypothesis: 'Sleep loss raises amyloid-beta.', supporting_papers: [] },
  Supervisor: { selected_hypothesis_index: 0, justification: 'Most testable.' },
  HypothesisRefiner: { refined_hypothesis: 'In APOE4 carriers aged 60-75, amyloid-beta PET is 20 % higher.' },
  ProtocolDesigner: { title: 'APOE4 PET study', steps: ['Recruit 80 adults', 'Scan'], safety_concerns: 'radiation', budget_usd: 90000 },
  PeerReviewer: { decision: 'APPROVE', critique_severity: 'MINOR', feedback: 'Fine.' },
  SafetyOfficer: { decision: 'APPROVE', critique_severity: 'MINOR', feedback: 'Safe.' },
  PrincipalInvestigator: { final_protocol: 'APOE4 PET study', final_decision: 'GO', final_rationale: 'Sound.' },
};

function agentOf(req: StubRequest): ResearchLabAgent {
  return ROLE_MARKER_RE.exec(String(req.body.messages[0]?.content))![1] as ResearchLabAgent;
}

let stub: OpenAIStub | null = null;
afterEach(async () => {
  await stub?.close();
  stub = null;
});

describe('research-lab agents against an OpenAI-compatible server', () => {
  let task: Task;
  before(async () => {
    task = (await loadDataset(PUBMEDQA, 'pubmedqa'))[0]!;
  });

  /** Runs the real research-lab graph with the lab's tracer; `resolved` adapts each agent's model. */
  async function runGraph(reply: (req: StubRequest) => StubReply, resolved: (agent: string, url: string) => ResolvedModel, withTools: string[] = []): Promise<SpanRecord[]> {
    stub = await startOpenAIStub({ server: 'llama.cpp', replies: reply });
    const url = stub.url;
    const graph = buildResearchLabGraph({
      model: (agent) => new RoutedChatModel({ resolved: resolved(agent, url), agent }),
      tools: researchLabTools({
        search: datasetSearchProvider([task]),
        proteins: createLookupTable(DEFAULT_PROTEIN_TABLE),
        geneOntology: createLookupTable(DEFAULT_GENE_ONTOLOGY_TABLE),
        topK: 3,
      }),
      agentTools: (agent) => (withTools.includes(agent) ? ['pubmed_search'] : []),
      prompt: (agent) => DEFAULT_PROMPTS[agent as ResearchLabAgent],
      maxTurns: 15,
    });
    const tracer = new RolloutTracer(newTraceId(), null);
    const root = tracer.start('rollout', 'rollout', null);
    await graph.invoke({ task: { id: task.id, goal: task.goal, context: task.context } }, { callbacks: [new LangChainTracer(tracer, root)] });
    tracer.end(root);
    return [...tracer.spans()];
  }

  it("asks for each agent's schema as response_format json_schema, and never on a call with tools bound", async () => {
    const spans = await runGraph(
      (req) => {
        const agent = agentOf(req);
        const toolRound = agent === 'Geneticist' && !req.body.messages.some((m: { role: string }) => m.role === 'tool');
        return toolRound ? { toolCalls: [{ name: 'pubmed_search', arguments: { query: 'APOE4 amyloid' } }] } : { json: ANSWERS[agent] };
      },
      (agent, url) => resolvedAt(url, { logical: agent }),
      ['Geneticist'],
    );
    for (const req of stub!.requests) {
      const agent = agentOf(req);
      if (req.body.tools) {
        assert.equal(req.body.response_format, undefined, `${agent}: no response_format next to tools`);
        continue;
      }
      const format = req.body.response_format;
      assert.equal(format?.type, 'json_schema', agent);
      assert.equal(format.json_schema.name, agent);
      assert.deepEqual(Object.keys(format.json_schema.schema.properties), Object.keys(ANSWERS[agent] as object), agent);
    }
    const nodes = spans.filter((s) => s.kind === 'node' && s.attributes['rollout_lab.output.ok'] !== undefined);
    assert.ok(nodes.length >= 9);
    for (const n of nodes) assert.equal(n.attributes['rollout_lab.output.ok'], true, `${n.name}: ${n.attributes[Attr.parseError]}`);
    const modes = spans.filter((s) => s.kind === 'llm').map((s) => [s.attributes[Attr.agentName], s.attributes[Attr.structuredOutput]]);
    // With tools bound the format is asked for but not sent, so the small model's answer is prose; its repair (no tools) is enforced.
    assert.deepEqual(
      modes.filter(([a]) => a === 'Geneticist').map(([, m]) => m),
      ['off', 'off', 'json_schema'],
    );
    assert.equal(nodes.filter((n) => n.name === 'Geneticist').at(-1)!.attributes['rollout_lab.output.repaired'], true);
    assert.ok(modes.filter(([a]) => a !== 'Geneticist').every(([, m]) => m === 'json_schema'));
  });

  it('an answer cut at max_tokens: the llm span says truncated, the repair asks for less, the node parse error starts "truncated at max_tokens"', async () => {
    const spans = await runGraph(
      (req) => {
        const agent = agentOf(req);
        return { json: agent === 'ProtocolDesigner' ? { title: 'APOE4 PET study', steps: longSteps, safety_concerns: '', budget_usd: 90000 } : ANSWERS[agent] };
      },
      (agent, url) =>
        agent === 'ProtocolDesigner'
          ? resolvedAt(url, { logical: agent, maxTokens: 40, maxTokensSetting: 'agents.ProtocolDesigner.maxTokens' })
          : resolvedAt(url, { logical: agent }),
    );
    const designerCalls = spans.filter((s) => s.kind === 'llm' && s.attributes[Attr.agentName] === 'ProtocolDesigner');
    assert.ok(designerCalls.length >= 2 && designerCalls.every((s) => s.attributes[Attr.truncated] === true && s.status === 'ok'));
    const repair = stub!.requests.find((r) => agentOf(r) === 'ProtocolDesigner' && r.body.messages.length > 2)!;
    assert.match(String(repair.body.messages.at(-1).content), /cut off at the limit of 40 tokens/);
    const node = spans.find((s) => s.kind === 'node' && s.name === 'ProtocolDesigner')!;
    const error = String(node.attributes[Attr.parseError]);
    assert.ok(error.startsWith('truncated at max_tokens (40)'), error);
    assert.match(error, /raise agents\.ProtocolDesigner\.maxTokens/);
    assert.ok(spans.filter((s) => s.kind === 'llm' && s.attributes[Attr.agentName] !== 'ProtocolDesigner').every((s) => s.attributes[Attr.truncated] === undefined));
  });
});

describe('one agent turn', () => {
  const turn = (resolved: ResolvedModel, tools: StructuredToolInterface[] = []) =>
    runAgentTurn(
      {
        agent: 'Geneticist',
        model: new RoutedChatModel({ resolved, agent: 'Geneticist' }),
        systemPrompt: DEFAULT_PROMPTS.Geneticist,
        thread: [],
        briefing: () => 'Research question: Does APOE4 raise amyloid-beta?\n\nContext:\nCarriers had more amyloid.',
        schema: HypothesisOutput,
        tools,
        turnLimitReached: false,
      },
      {},
    );

  it('a small model is usable once JSON is enforced: valid at the first try, where prompt-only JSON fails even after the repair', async () => {
    stub = await startOpenAIStub({ server: 'llama.cpp', replies: () => ({ json: ANSWERS.Geneticist }) });
    const enforced = await turn(resolvedAt(stub.url));
    assert.equal(enforced.kind === 'answer' && enforced.ok, true);
    assert.equal(stub.requests.length, 1);

    const promptOnly = await turn(resolvedAt(stub.url, { structuredOutput: 'off' }));
    assert.equal(stub.requests[1]!.body.response_format, undefined);
    assert.ok(promptOnly.kind === 'answer' && !promptOnly.ok && promptOnly.repaired);
    assert.equal(stub.requests.length, 3, 'the answer and one repair');
  });

  it('a tool call cut mid-arguments fails with an error that says so and names the limit', async () => {
    const search = tool(async () => '[]', { name: 'pubmed_search', description: 'Search.', schema: z.object({ query: z.string() }) });
    stub = await startOpenAIStub({
      replies: [{ toolCalls: [{ name: 'pubmed_search', arguments: { query: longSteps.join(' ') } }] }, { json: { supporting_papers: longSteps, hypothesis: 'h' } }],
    });
    const result = await turn(resolvedAt(stub.url, { maxTokens: 15 }), [search]);
    assert.ok(result.kind === 'answer' && !result.ok);
    assert.ok(result.error.startsWith('truncated at max_tokens (15)'), result.error);
    assert.match(result.error, /the arguments of its pubmed_search tool call were cut off/);
    assert.match(result.error, /raise models\.small\.maxTokens/);
  });
});
