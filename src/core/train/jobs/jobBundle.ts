import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { RuntimeFailure, UsageError } from '../../errors';
import { JobSpecSchema, type JobSpec, type JobSpecInput } from './jobSpec';

/**
 * The job bundle: the folder a launcher copies to the target. It holds the
 * spec, the data, the trainer's source and (for a job that starts from a
 * trained version) the adapter, so the target needs only Python and the
 * trainer's libraries.
 */

export const SPEC_FILE = 'job.yaml';
const TRAINER_DIR = 'python-trainer';

/**
 * Where python-trainer's source is: beside the bundles in an installed
 * extension or package (dist/../python-trainer), or at the repository root
 * when running from source.
 */
export function trainerSourceDir(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, TRAINER_DIR);
    if (existsSync(path.join(candidate, 'rollout_trainer', '__main__.py'))) return candidate;
    if (path.dirname(dir) === dir) break;
  }
  throw new RuntimeFailure(`python-trainer is missing from this installation (looked above ${__dirname}) — reinstall Rollout Lab`);
}

/** The reference hyper-parameters of each job kind (python-trainer/rollout_trainer/defaults.json, which the trainer also reads). */
export function referenceHyperparameters(kind: JobSpec['phase']['kind']): Record<string, number | string | boolean | string[]> {
  const all = JSON.parse(readFileSync(path.join(trainerSourceDir(), 'rollout_trainer', 'defaults.json'), 'utf8')) as Record<string, Record<string, number | string | boolean | string[]>>;
  return kind === 'serve' ? { ...all.grpo, ...all.serve } : { ...all[kind] };
}

/** The names each kind accepts: a typo in lab.json or on the command line fails here, before anything is launched. */
export function checkHyperparameters(kind: JobSpec['phase']['kind'], given: Record<string, unknown>): void {
  const known = referenceHyperparameters(kind);
  const unknown = Object.keys(given).filter((k) => !(k in known));
  if (unknown.length) {
    throw new UsageError(`unknown ${kind} hyper-parameter${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${k}"`).join(', ')} — known: ${Object.keys(known).join(', ')}`);
  }
  for (const [k, v] of Object.entries(given)) {
    const ref = known[k];
    const ok = Array.isArray(ref) ? Array.isArray(v) || typeof v === 'string' : typeof v === typeof ref;
    if (!ok) throw new UsageError(`hyper-parameter "${k}" must be ${Array.isArray(ref) ? 'a list of names' : `a ${typeof ref}`} like ${JSON.stringify(ref)}, got ${JSON.stringify(v)}`);
  }
}

export interface BundleInput {
  spec: JobSpecInput;
  /** Files to copy into the bundle: bundle-relative path → source path on this machine (files or folders). */
  files: Record<string, string>;
}

/** Writes the bundle into bundleDir and returns the validated spec. */
export function writeBundle(bundleDir: string, input: BundleInput): JobSpec {
  const spec = JobSpecSchema.parse(input.spec);
  mkdirSync(bundleDir, { recursive: true });
  for (const [rel, src] of Object.entries(input.files)) {
    const dest = path.join(bundleDir, rel);
    mkdirSync(path.dirname(dest), { recursive: true });
    cpSync(src, dest, { recursive: true });
  }
  const trainer = trainerSourceDir();
  cpSync(trainer, path.join(bundleDir, TRAINER_DIR), {
    recursive: true,
    filter: (src) => {
      const rel = path.relative(trainer, src).split(path.sep);
      return !rel.some((part) => part === '__pycache__' || part === '.pytest_cache' || part === 'tests' || part.endsWith('.egg-info'));
    },
  });
  writeFileSync(path.join(bundleDir, SPEC_FILE), specYaml(spec));
  return spec;
}

export function specYaml(spec: JobSpec): string {
  return `# Rollout Lab training job — run in this folder: ${spec.command.join(' ')}\n${stringify(spec, { lineWidth: 0 })}`;
}
