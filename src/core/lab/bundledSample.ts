import { existsSync } from 'node:fs';
import path from 'node:path';
import { RuntimeFailure } from '../errors';

/** How many PubMedQA items the repository ships, so a fresh clone runs with nothing beside it. */
export const BUNDLED_SAMPLE_SIZE = 200;

/** Where the sample sits in the repository and in an installed package or extension. */
export const BUNDLED_SAMPLE_SOURCE = 'data/pubmedqa-sample/pubmedqa-sample.json';

/** Where `init` copies it in a workspace, relative to .rollout-lab/ (the lab keeps working when Rollout Lab is updated or moved). */
export const BUNDLED_SAMPLE_LAB_FILE = 'data/pubmedqa-sample.json';

/**
 * The sample of PubMedQA's ori_pqal.json: the items with the 200 lowest
 * PubMed ids, in ascending id order (the order a JSON object with integer
 * keys keeps anyway), each item as the source has it. With the first 80 %
 * as train, both splits hold yes, no and maybe items.
 */
export function pubmedQaSample(items: Record<string, unknown>): Record<string, unknown> {
  const ids = Object.keys(items).sort((a, b) => Number(a) - Number(b) || a.localeCompare(b));
  return Object.fromEntries(ids.slice(0, BUNDLED_SAMPLE_SIZE).map((id) => [id, items[id]]));
}

/**
 * The sample's file: beside the bundles in an installed extension or package
 * (dist/../data), or at the repository root when running from source.
 */
export function bundledSampleFile(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, BUNDLED_SAMPLE_SOURCE);
    if (existsSync(candidate)) return candidate;
    if (path.dirname(dir) === dir) break;
  }
  throw new RuntimeFailure(`the bundled PubMedQA sample (${BUNDLED_SAMPLE_SOURCE}) is missing from this installation (looked above ${__dirname}) — reinstall Rollout Lab, or pass --dataset FILE`);
}
