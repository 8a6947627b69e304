import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { UsageError } from '../errors';
import { DEFAULT_PROMPTS } from '../graph/researchLab/prompts';
import { RESEARCH_LAB_AGENTS } from '../graph/researchLab/outputs';
import { DEFAULT_GENE_ONTOLOGY_TABLE, DEFAULT_PROTEIN_TABLE } from '../graph/tools/defaultTables';
import { defaultLabConfig, PUBMEDQA_SHARED_PATH } from './defaults';
import { labConfigJsonSchemaText } from './jsonSchema';
import { LAB_SCHEMA_FILE_NAME, labPaths } from './labPaths';
import { defaultPromptPath } from './loader';
import { LabConfigSchema } from './schema';

export interface InitResult {
  /** Files written by this call, relative to the workspace ("/"-separated). */
  created: string[];
  /** Files that existed and were kept. */
  skipped: string[];
}

/** A dataset key from a file name: ori_pqal.json is PubMedQA, others are named after the file. */
function datasetName(file: string): string {
  const base = path.basename(file).replace(/\.[^.]+$/, '');
  if (base === 'ori_pqal') return 'pubmedqa';
  const name = base.replace(/[^A-Za-z0-9_.-]/g, '_');
  return /^[A-Za-z_]/.test(name) ? name : `dataset_${name}`;
}

/**
 * The dataset path to write into lab.json. A relative `--dataset` is looked up
 * from the workspace first, then from the current folder, and stored relative
 * to the workspace; an absolute one is kept as given.
 */
function resolveDatasetPath(workspaceDir: string, dataset: string | undefined): string | undefined {
  if (dataset === undefined) return existsSync(path.resolve(workspaceDir, PUBMEDQA_SHARED_PATH)) ? PUBMEDQA_SHARED_PATH : undefined;
  if (path.isAbsolute(dataset)) {
    if (!existsSync(dataset)) throw new UsageError(`dataset file ${dataset} does not exist — pass a JSONL file, PubMedQA ori_pqal.json or a pubmed_qa export`);
    return dataset;
  }
  const candidates = [path.resolve(workspaceDir, dataset), path.resolve(dataset)];
  const found = candidates.find((c) => existsSync(c));
  if (!found) {
    throw new UsageError(`dataset file ${dataset} does not exist (looked in ${workspaceDir} and ${process.cwd()}) — pass the path of a JSONL file, ori_pqal.json or a pubmed_qa export`);
  }
  return path.relative(workspaceDir, found).split(path.sep).join('/');
}

function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/**
 * Creates a workspace's .rollout-lab folder: lab.json (with "$schema" pointing
 * at a local copy of the schema, for completion in any editor), the nine
 * research-lab prompts, the protein and gene-ontology tables and a .gitignore
 * for the trace store. Existing files are kept unless `force`; the schema copy
 * is generated, so it is rewritten whenever it is out of date.
 */
export async function initWorkspace(dir: string, opts: { force?: boolean; dataset?: string } = {}): Promise<InitResult> {
  const paths = labPaths(dir);
  const datasetPath = resolveDatasetPath(paths.workspaceDir, opts.dataset);
  const config = {
    $schema: `./${LAB_SCHEMA_FILE_NAME}`,
    ...defaultLabConfig(datasetPath ? { datasetPath, datasetName: datasetName(datasetPath) } : {}),
  };
  // The defaults must always pass the schema; failing here is a bug, not a user error.
  LabConfigSchema.parse(config);

  const files: Array<{ rel: string; text: string; generated?: boolean }> = [
    { rel: 'lab.json', text: json(config) },
    { rel: LAB_SCHEMA_FILE_NAME, text: labConfigJsonSchemaText(), generated: true },
    ...RESEARCH_LAB_AGENTS.map((agent) => ({ rel: defaultPromptPath(agent), text: `${DEFAULT_PROMPTS[agent].trimEnd()}\n` })),
    { rel: 'data/proteins.json', text: json(DEFAULT_PROTEIN_TABLE) },
    { rel: 'data/gene_ontology.json', text: json(DEFAULT_GENE_ONTOLOGY_TABLE) },
    { rel: '.gitignore', text: '# Trace store: large and machine-specific.\nstore/\n' },
  ];

  const result: InitResult = { created: [], skipped: [] };
  for (const f of files) {
    const abs = path.join(paths.labDir, f.rel);
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
