import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { Serialized } from '@langchain/core/load/serializable';
import { loadDataset, type Task } from '../../../src/core/data/dataset';
import { buildResearchLabGraph, type ResearchLabDeps } from '../../../src/core/graph/researchLab/graph';
import { DEFAULT_PROMPTS } from '../../../src/core/graph/researchLab/prompts';
import { JUNIOR_AGENTS, type ResearchLabAgent } from '../../../src/core/graph/researchLab/outputs';
import { researchLabOutcome } from '../../../src/core/graph/outcome';
import { researchLabTools } from '../../../src/core/graph/tools/researchLabTools';
import { datasetSearchProvider } from '../../../src/core/graph/tools/search';
import { createLookupTable } from '../../../src/core/graph/tools/lookup';
import { DEFAULT_GENE_ONTOLOGY_TABLE, DEFAULT_PROTEIN_TABLE } from '../../../src/core/graph/tools/defaultTables';
import { RoutedChatModel } from '../../../src/core/llm/routedChatModel';
import { startSimServer, type SimServer } from '../../../src/core/sim/simServer';

const PUBMEDQA = join(__dirname, '..', '..', '..', '..', 'shared', 'data', 'pubmedqa', 'ori_pqal.json');

/** Reference temperatures: juniors 0.7, supervisor and reviewers 0, seniors 0.1. */
const TEMPERATURE: Record<ResearchLabAgent, number> = {
  Geneticist: 0.7,
  Pharmacologist: 0.7,
  Neurologist: 0.7,
  Supervisor: 0,
  HypothesisRefiner: 0.1,
  ProtocolDesigner: 0.1,
  PeerReviewer: 0,
  SafetyOfficer: 0,
  PrincipalInvestigator: 0,
};
const WITH_TOOLS = new Set<string>([...JUNIOR_AGENTS, 'HypothesisRefiner', 'ProtocolDesigner']);

describe('research-lab graph against the simulated endpoint (real HTTP)', () => {
  let sim: SimServer;
  let tasks: Task[];

  before(async () => {
    sim = await startSimServer({ seed: 7 });
    tasks = await loadDataset(PUBMEDQA, 'pubmedqa');
  });
  after(async () => {
    await sim.close();
  });

  function deps(task: Task): ResearchLabDeps {
    const models = new Map<string, RoutedChatModel>();
    return {
      model: (agent) => {
        let m = models.get(agent);
        if (!m) {
          m = new RoutedChatModel({
            agent,
            temperature: TEMPERATURE[agent as ResearchLabAgent],
            resolved: {
              logical: WITH_TOOLS.has(agent) ? 'senior' : 'strong',
              baseUrl: sim.url,
              model: 'rollout-lab-sim',
              apiKey: 'not-needed',
              timeoutMs: 30_000,
              maxRetries: 1,
              logprobs: false,
              tokenIds: false,
              version: null,
              simulated: true,
            },
          });
          models.set(agent, m);
        }
        return m;
      },
      tools: researchLabTools({
        search: datasetSearchProvider(tasks),
        proteins: createLookupTable(DEFAULT_PROTEIN_TABLE),
        geneOntology: createLookupTable(DEFAULT_GENE_ONTOLOGY_TABLE),
        topK: 5,
        currentTaskId: task.id,
      }),
      agentTools: (agent) => (WITH_TOOLS.has(agent) ? ['pubmed_search', 'clinical_trials_search', 'protein_lookup', 'gene_ontology_lookup'] : []),
      prompt: (agent) => DEFAULT_PROMPTS[agent as ResearchLabAgent],
      maxTurns: 15,
    };
  }

  async function run(task: Task, callbacks: BaseCallbackHandler[] = []) {
    const graph = buildResearchLabGraph(deps(task));
    return graph.invoke({ task: { id: task.id, goal: task.goal, context: task.context } }, { callbacks });
  }

  it('completes on five PubMedQA tasks with a final decision and protocol', async () => {
    const toolRuns: string[] = [];
    const llmRuns: string[] = [];
    const handler = BaseCallbackHandler.fromMethods({
      handleToolStart(_t: Serialized, _i: string, _r: string, _p?: string, _tags?: string[], _m?: Record<string, unknown>, name?: string) {
        toolRuns.push(name ?? '?');
      },
      handleChatModelStart(_l: Serialized, _msgs: unknown, _r: string, _p?: string, _e?: Record<string, unknown>, _t?: string[], meta?: Record<string, unknown>) {
        llmRuns.push(String(meta?.langgraph_node));
      },
    });
    for (const task of tasks.slice(0, 5)) {
      const state = await run(task, [handler]);
      const outcome = researchLabOutcome(state);
      assert.ok(outcome.decision === 'GO' || outcome.decision === 'NO-GO', `task ${task.id}: decision ${outcome.decision}`);
      assert.ok(outcome.finalOutput && outcome.finalOutput.length > 20, `task ${task.id}: final protocol`);
      assert.equal(state.hypotheses.length, 3);
      assert.ok(state.protocol, `task ${task.id}: protocol`);
      assert.ok(outcome.turns >= 6 && outcome.turns <= 15 + 6, `task ${task.id}: ${outcome.turns} turns`);
      assert.deepEqual(outcome.failures, [], `task ${task.id}: ${JSON.stringify(outcome.failures)}`);
    }
    assert.ok(llmRuns.includes('PrincipalInvestigator'));
    assert.ok(toolRuns.length > 0, 'the simulated agents called tools');
  });

  it('goes through at least one revision loop across twenty tasks', async () => {
    let revised = 0;
    let decided = 0;
    for (const task of tasks.slice(5, 25)) {
      const state = await run(task);
      if (state.round > 1) revised++;
      if (state.finalDecision) decided++;
    }
    assert.ok(revised >= 1, `revision loops: ${revised}`);
    assert.equal(decided, 20);
  });
});
