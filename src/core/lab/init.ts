import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { UsageError } from '../errors';
import { discoverModuleAgents, type ModuleAgents } from '../graph/moduleAgents';
import { fieldProposalFor } from '../data/dataset';
import { DEFAULT_PROMPTS } from '../graph/researchLab/prompts';
import { RESEARCH_LAB_AGENTS } from '../graph/researchLab/outputs';
import { DEFAULT_GENE_ONTOLOGY_TABLE, DEFAULT_PROTEIN_TABLE } from '../graph/tools/defaultTables';
import { defaultLabConfig, moduleLabConfig, PUBMEDQA_SHARED_PATH, type LabDataset } from './labTemplates';
import { BUNDLED_SAMPLE_LAB_FILE, bundledSampleFile } from './bundledSample';
import { exampleLab, exampleSources } from './exampleLabs';
import { labConfigJsonSchemaText } from '../config/jsonSchema';
import { LAB_DIR_NAME, LAB_SCHEMA_FILE_NAME, labPaths } from '../config/labPaths';
import { defaultPromptPath } from '../config/loader';
import { LabConfigSchema } from '../config/schema';

export interface InitResult {
  /** Files written by this call, relative to the workspace ("/"-separated). */
  created: string[];
  /** Files that existed and were kept. */
  skipped: string[];
  /** With `graph`: the agents found in the module, and whether from its factory's ctx calls or its graph's nodes. */
  agents?: { names: string[]; source: ModuleAgents['source'] };
  /**
   * The dataset lab.json got: `given` (--dataset), `shared` (the full PubMedQA
   * set beside the workspace) or `sample` (the bundled 200-item sample, copied
   * into .rollout-lab/data/). None for a module lab without --dataset.
   */
  dataset?: LabDataset & {
    source: 'given' | 'shared' | 'sample';
    /** The columns of a given file whose rows need a mapping none could be guessed for (no column looks like the goal). */
    unmappedColumns?: string[];
  };
}

export interface InitOptions {
  /** Overwrite files that exist. */
  force?: boolean;
  /** A dataset file (relative to the workspace or the current folder). */
  dataset?: string;
  /** A LangGraph.js module (relative to the workspace or the current folder): the lab is set up for its agents instead of the research lab. */
  graph?: string;
  /** The module's export holding the graph or its factory; default "default". */
  graphExport?: string;
  /** An example lab (examples/NAME): its files are copied into the workspace and lab.json is set up for it. */
  example?: string;
}

/** A dataset key from a file name: ori_pqal.json is PubMedQA, others are named after the file. */
function datasetName(file: string): string {
  const base = path.basename(file).replace(/\.[^.]+$/, '');
  if (base === 'ori_pqal') return 'pubmedqa';
  const name = base.replace(/[^A-Za-z0-9_.-]/g, '_');
  return /^[A-Za-z_]/.test(name) ? name : `dataset_${name}`;
}

/**
 * A path to write into lab.json. A relative path is looked up from the
 * workspace first, then from the current folder, and stored relative to the
 * workspace; an absolute one is kept as given. `what` and `hint` word the error.
 */
function resolveInputPath(workspaceDir: string, file: string, what: string, hint: string): string {
  if (path.isAbsolute(file)) {
    if (!existsSync(file)) throw new UsageError(`${what} ${file} does not exist — ${hint}`);
    return file;
  }
  const candidates = [path.resolve(workspaceDir, file), path.resolve(file)];
  const found = candidates.find((c) => existsSync(c));
  if (!found) throw new UsageError(`${what} ${file} does not exist (looked in ${workspaceDir} and ${process.cwd()}) — ${hint}`);
  return path.relative(workspaceDir, found).split(path.sep).join('/');
}

/**
 * The dataset for lab.json: `--dataset`; else, for the research lab, the full
 * PubMedQA set when it sits beside the workspace (../shared), else the
 * bundled sample. A lab for the user's own graph gets no dataset it did not ask for.
 */
async function resolveDataset(workspaceDir: string, dataset: string | undefined, researchLab: boolean): Promise<InitResult['dataset']> {
  if (dataset !== undefined) {
    const file = resolveInputPath(workspaceDir, dataset, 'dataset file', 'pass the path of a JSONL file, ori_pqal.json or a pubmed_qa export');
    // Rows of the user's own shape get a mapping guessed from their columns (the CLI prints it), so the first run loads them.
    const proposal = await fieldProposalFor(path.resolve(workspaceDir, file));
    const given = { name: datasetName(file), path: file, source: 'given' as const };
    if (!proposal) return given;
    return proposal.fields ? { ...given, fields: proposal.fields } : { ...given, unmappedColumns: proposal.columns };
  }
  if (!researchLab) return undefined;
  if (existsSync(path.resolve(workspaceDir, PUBMEDQA_SHARED_PATH))) return { name: 'pubmedqa', path: PUBMEDQA_SHARED_PATH, source: 'shared' };
  // The sample is a starting point the user replaces: runner.dataset does not pin it.
  return { name: datasetName(BUNDLED_SAMPLE_LAB_FILE), path: `${LAB_DIR_NAME}/${BUNDLED_SAMPLE_LAB_FILE}`, source: 'sample', runnerDefault: false };
}

/** What lab.json asks an agent's prompt file to hold until the user writes it. */
function placeholderPrompt(agent: string): string {
  return `You are the ${agent} agent. Replace this text with ${agent}'s instructions: its task, what it is given, and the exact form of its answer. The graph reads it with ctx.prompt("${agent}").\n`;
}

function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

type LabFile = { rel: string; text: string; generated?: boolean };

/** lab.json, the nine research-lab prompts and the lookup tables of the research-lab tools. */
function researchLabFiles(dataset: LabDataset | undefined): LabFile[] {
  const config = { $schema: `./${LAB_SCHEMA_FILE_NAME}`, ...defaultLabConfig(dataset) };
  // The defaults must always pass the schema; failing here is a bug, not a user error.
  LabConfigSchema.parse(config);
  return [
    { rel: 'lab.json', text: json(config) },
    ...RESEARCH_LAB_AGENTS.map((agent) => ({ rel: defaultPromptPath(agent), text: `${DEFAULT_PROMPTS[agent].trimEnd()}\n` })),
    { rel: 'data/proteins.json', text: json(DEFAULT_PROTEIN_TABLE) },
    { rel: 'data/gene_ontology.json', text: json(DEFAULT_GENE_ONTOLOGY_TABLE) },
  ];
}

/** lab.json for the module's own agents, and a prompt file per agent: the module's fallback prompt when it exports one, else a placeholder. */
function moduleLabFiles(module: string, graphExport: string | undefined, found: ModuleAgents, dataset: LabDataset | undefined): LabFile[] {
  const config = { $schema: `./${LAB_SCHEMA_FILE_NAME}`, ...moduleLabConfig({ module, export: graphExport, agents: found.agents }, dataset) };
  const checked = LabConfigSchema.safeParse(config);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    throw new UsageError(`the graph module's agents cannot go in lab.json as they are (${issue.path.join('.')}: ${issue.message}); name them with letters, digits, "_", "-" or "."`);
  }
  return [
    { rel: 'lab.json', text: json(config) },
    ...found.agents.map((agent) => {
      const own = found.prompts[agent]?.trim();
      return { rel: defaultPromptPath(agent), text: own ? `${own}\n` : placeholderPrompt(agent) };
    }),
  ];
}

/**
 * Creates a workspace's .rollout-lab folder: lab.json (with "$schema" pointing
 * at a local copy of the schema, for completion in any editor), the nine
 * research-lab prompts, the protein and gene-ontology tables and a .gitignore
 * for the trace store. With `graph`, the lab is set up for that LangGraph.js
 * module instead: its agents (read from the module, which is loaded but not
 * run) with a prompt file each, and nothing of the research lab. Existing
 * files are kept unless `force`; the schema copy is generated, so it is
 * rewritten whenever it is out of date.
 */
export async function initWorkspace(dir: string, opts: InitOptions = {}): Promise<InitResult> {
  if (opts.example !== undefined) return initExample(dir, opts.example, opts);
  const paths = labPaths(dir);
  const dataset = await resolveDataset(paths.workspaceDir, opts.dataset, opts.graph === undefined);
  let found: ModuleAgents | undefined;
  let labFiles: LabFile[];
  if (opts.graph !== undefined) {
    const module = resolveInputPath(paths.workspaceDir, opts.graph, 'graph module', 'pass the path of a TS or JS file that exports a LangGraph.js graph or a factory (ctx) => graph');
    found = await discoverModuleAgents(path.resolve(paths.workspaceDir, module), opts.graphExport ?? 'default');
    if (found.agents.length === 0) {
      throw new UsageError(`graph module ${module} names no agent: its factory calls neither ctx.model() nor ctx.prompt() and its graph has no agent node — add the agents to lab.json by hand`);
    }
    labFiles = moduleLabFiles(module, opts.graphExport, found, dataset);
  } else {
    labFiles = researchLabFiles(dataset);
  }
  // A lab.json that is kept keeps its datasets: the sample is copied (again) only when that lab.json uses it.
  const kept = !opts.force && existsSync(paths.file) ? await readFile(paths.file, 'utf8').catch(() => '') : undefined;
  const sample = kept === undefined ? dataset?.source === 'sample' : kept.includes(`${LAB_DIR_NAME}/${BUNDLED_SAMPLE_LAB_FILE}`);
  // The sample is copied, not referenced: the lab keeps its data when Rollout Lab is updated, moved or removed.
  if (sample) labFiles.push({ rel: BUNDLED_SAMPLE_LAB_FILE, text: await readFile(bundledSampleFile(), 'utf8') });
  const result = await writeLabFiles(paths, labFiles, opts, found);
  return dataset && kept === undefined ? { ...result, dataset } : result;
}

/** lab.json, its schema, the other lab files and the .gitignore, each kept when it exists unless `force`. */
async function writeLabFiles(paths: ReturnType<typeof labPaths>, labFiles: LabFile[], opts: InitOptions, found?: ModuleAgents, workspaceFiles: LabFile[] = []): Promise<InitResult> {
  const [labJson, ...rest] = labFiles;
  const files: LabFile[] = [
    labJson!,
    { rel: LAB_SCHEMA_FILE_NAME, text: labConfigJsonSchemaText(), generated: true },
    ...rest,
    { rel: '.gitignore', text: '# Trace store: large and machine-specific.\nstore/\n' },
  ];

  const result: InitResult = { created: [], skipped: [] };
  if (found) result.agents = { names: found.agents, source: found.source };
  const placed = [...files.map((f) => ({ ...f, abs: path.join(paths.labDir, f.rel) })), ...workspaceFiles.map((f) => ({ ...f, abs: path.join(paths.workspaceDir, f.rel) }))];
  for (const f of placed) {
    const abs = f.abs;
    const shown = path.relative(paths.workspaceDir, abs).split(path.sep).join('/');
    await mkdir(path.dirname(abs), { recursive: true });
    if (!opts.force && !f.generated) {
      try {
        await writeFile(abs, f.text, { flag: 'wx' });
        result.created.push(shown);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        result.skipped.push(shown);
      }
      continue;
    }
    const current = await readFile(abs, 'utf8').catch(() => undefined);
    if (current === f.text) {
      result.skipped.push(shown);
    } else {
      await writeFile(abs, f.text);
      result.created.push(shown);
    }
  }
  return result;
}

/**
 * An example lab: the example's files (graph, reward, data, simulator
 * answers) in the workspace, and .rollout-lab/ with lab.json and the prompts.
 */
async function initExample(dir: string, name: string, opts: InitOptions): Promise<InitResult> {
  const paths = labPaths(dir);
  const example = exampleLab(name);
  const config = { $schema: `./${LAB_SCHEMA_FILE_NAME}`, ...example.config };
  // The example's config must always pass the schema; failing here is a bug, not a user error.
  LabConfigSchema.parse(config);
  const copies = await Promise.all(exampleSources(example).map(async (f) => ({ rel: f.rel, text: await readFile(f.abs, 'utf8') })));
  // The prompts are the graph module's own (its `prompts` export), as `init --graph` writes them; a command agent's example gives its own.
  const graph = exampleSources(example).find((f) => f.rel === example.config.graph?.module);
  const texts = graph ? (await discoverModuleAgents(graph.abs, 'default')).prompts : (example.prompts ?? {});
  const prompts = Object.keys(example.config.agents).map((agent) => ({ rel: defaultPromptPath(agent), text: `${texts[agent]!.trim()}\n` }));
  return writeLabFiles(paths, [{ rel: 'lab.json', text: json(config) }, ...prompts], opts, undefined, copies);
}
