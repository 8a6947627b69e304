import { JUNIOR_AGENTS, RESEARCH_LAB_AGENTS, SENIOR_AGENTS, type ResearchLabAgent } from '../graph/researchLab/outputs';
import { defaultPromptPath } from '../config/loader';
import { DEFAULT_CRITERIA, RESEARCH_LAB_TOOLS, type DatasetFieldsInput, type LabConfigInput } from '../config/schema';

/** Where the PubMedQA labeled set sits relative to a workspace that has the shared data beside it. */
export const PUBMEDQA_SHARED_PATH = '../shared/data/pubmedqa/ori_pqal.json';

/** A dataset entry of a new lab.json: its key, its path (relative to the workspace), and a field mapping for rows of the user's own shape. */
export interface LabDataset {
  name: string;
  path: string;
  fields?: DatasetFieldsInput;
  /**
   * false: runner.dataset is left out (the only dataset is the default anyway),
   * so replacing "datasets" by hand leaves no runner.dataset naming one gone.
   */
  runnerDefault?: boolean;
}

/**
 * Which logical model each research-lab agent uses, after the reference study.
 * The Supervisor has its own (the junior's settings): training the juniors
 * registers a new "junior" and must not change the Supervisor's model.
 */
const AGENT_MODEL: Record<ResearchLabAgent, 'junior' | 'supervisor' | 'senior' | 'strong'> = {
  Geneticist: 'junior',
  Pharmacologist: 'junior',
  Neurologist: 'junior',
  Supervisor: 'supervisor',
  HypothesisRefiner: 'senior',
  ProtocolDesigner: 'senior',
  PeerReviewer: 'strong',
  SafetyOfficer: 'strong',
  PrincipalInvestigator: 'strong',
};

const TOOL_USERS: ReadonlySet<string> = new Set([...JUNIOR_AGENTS, ...SENIOR_AGENTS]);

/** The judge's one criterion in a lab around a user's own graph: the research lab's criteria fit protocols, not any task. */
const MODULE_LAB_CRITERIA = {
  quality: {
    weight: 1,
    description: 'The final output does what the task asks: correct, complete and in the form asked for.',
  },
} as const;

const AIR_DEFAULTS: NonNullable<LabConfigInput['air']> = [
  { name: 'tool_ok', when: 'tool.ok', reward: 0.05 },
  { name: 'tool_error', when: 'tool.error', reward: -0.05 },
  { name: 'invalid_output', when: 'output.invalid', reward: -0.1 },
];

/**
 * What every lab has after its graph, in lab.json's order: the dataset (when one is given, and then the runner's
 * default), the lab's own tools and reward, the AIR rules, the runner.
 */
function withCommonParts(dataset: LabDataset | undefined, own: Pick<LabConfigInput, 'tools' | 'reward'>): Pick<LabConfigInput, 'datasets' | 'tools' | 'reward' | 'air' | 'runner'> {
  return {
    datasets: dataset ? { [dataset.name]: { path: dataset.path, format: 'auto', trainFraction: 0.8, ...(dataset.fields ? { fields: dataset.fields } : {}) } } : {},
    ...own,
    air: structuredClone(AIR_DEFAULTS),
    runner: { concurrency: 4, samples: 1, seed: 42, maxTurns: 15, ...(dataset && dataset.runnerDefault !== false ? { dataset: dataset.name } : {}) },
  };
}

/**
 * A lab around a user's own LangGraph.js module: only its agents (each with a
 * prompt file), one model for them and one for the judge, neither with a
 * baseUrl (so it runs on the simulated endpoint until one is set), and no
 * research-lab tools or criteria.
 */
export function moduleLabConfig(opts: { module: string; export?: string; agents: readonly string[] }, dataset?: LabDataset): LabConfigInput {
  const agents: LabConfigInput['agents'] = {};
  for (const agent of opts.agents) agents[agent] = { model: 'main', prompt: defaultPromptPath(agent) };
  return {
    version: 1,
    models: {
      main: { model: 'qwen2.5:7b-instruct', temperature: 0.7 },
      judge: { model: 'qwen2.5:14b-instruct', temperature: 0 },
    },
    agents,
    graph: { kind: 'module', module: opts.module, export: opts.export ?? 'default' },
    ...withCommonParts(dataset, {
      reward: { judge: { model: 'judge' }, criteria: structuredClone(MODULE_LAB_CRITERIA), judgeFailurePenalty: 0.1, noOutputReward: 0 },
    }),
  };
}

/**
 * The research-lab reference setup. Models have no baseUrl, so a fresh
 * workspace runs against the built-in simulated endpoint; pointing a model at
 * Ollama, vLLM or OpenAI is one "baseUrl" line. `dataset` adds a dataset
 * entry and makes it the runner's default.
 */
export function defaultLabConfig(dataset?: LabDataset): LabConfigInput {
  const agents: LabConfigInput['agents'] = {};
  for (const agent of RESEARCH_LAB_AGENTS) {
    agents[agent] = {
      model: AGENT_MODEL[agent],
      prompt: defaultPromptPath(agent),
      tools: TOOL_USERS.has(agent) ? [...RESEARCH_LAB_TOOLS] : [],
      // The Supervisor picks among hypotheses: a deterministic choice is easier to learn from (bandit phase).
      ...(agent === 'Supervisor' ? { temperature: 0 } : {}),
    };
  }
  return {
    version: 1,
    models: {
      // The trained models record each call's token logprobs and ids: GRPO needs the behaviour policy's.
      junior: { model: 'qwen2.5:1.5b-instruct', temperature: 0.7, logprobs: true, tokenIds: true },
      supervisor: { model: 'qwen2.5:1.5b-instruct', temperature: 0.7 },
      senior: { model: 'llama3.1:8b-instruct', temperature: 0.1, logprobs: true, tokenIds: true },
      strong: { model: 'qwen2.5:14b-instruct', temperature: 0 },
    },
    agents,
    graph: { kind: 'research-lab' },
    ...withCommonParts(dataset, {
      tools: { searchTopK: 5, proteinTable: 'data/proteins.json', geneOntologyTable: 'data/gene_ontology.json', excludeCurrentTask: true },
      reward: { judge: { model: 'strong' }, criteria: structuredClone(DEFAULT_CRITERIA), judgeFailurePenalty: 0.1, noOutputReward: 0 },
    }),
  };
}
