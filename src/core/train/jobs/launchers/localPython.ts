import type { TargetConfig } from '../../../config/trainingSchema';
import { UsageError } from '../../../errors';
import { lastLines, run } from './exec';

/**
 * Which python a local job runs: training.targets.<name>.python when it is set,
 * otherwise the first of a few usual ones that imports torch (the python first
 * on PATH often is a version manager's, without torch, while the system one
 * has it). The probe runs once per process and PATH.
 */

export const PYTHON_CANDIDATES = ['python3', '/usr/bin/python3', '/usr/local/bin/python3', 'python'];

const PROBE = 'import sys, torch; print(sys.executable); print(torch.__version__)';

export interface LocalPython {
  /** What the job's argv starts with. */
  python: string;
  /** "python: /usr/bin/python3 (torch 1.13.0); set … to choose another" */
  note: string;
}

interface Probe {
  ok: boolean;
  /** The interpreter's own path and torch version, or why it did not do. */
  detail: string;
  torch?: string;
}

const probes = new Map<string, Promise<Probe>>();

function probe(python: string, env: NodeJS.ProcessEnv): Promise<Probe> {
  const key = `${env.PATH ?? ''}\0${python}`;
  let found = probes.get(key);
  if (!found) {
    found = run([python, '-c', PROBE], { env, allowFail: true }).then(
      (r): Probe => {
        const [exe, version] = r.stdout.trim().split('\n');
        if (r.code === 0 && exe && version) return { ok: true, detail: exe.trim(), torch: version.trim() };
        return { ok: false, detail: lastLines(r.stderr, 1) || `exited with status ${r.code}` };
      },
      (err: Error): Probe => ({ ok: false, detail: /not installed or not on PATH/.test(err.message) ? 'not found' : err.message }),
    );
    probes.set(key, found);
  }
  return found;
}

/** Forgets what earlier probes found (tests that change PATH or the pythons on it). */
export function forgetPythonProbes(): void {
  probes.clear();
}

/** The python for a local target named `targetName`; a UsageError that says what was tried and how to fix it when none has torch. */
export async function findLocalPython(
  targetName: string,
  configured: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  candidates: readonly string[] = PYTHON_CANDIDATES,
): Promise<LocalPython> {
  const key = `training.targets.${targetName}.python`;
  const where = `.rollout-lab/lab.json`;
  if (configured) {
    const p = await probe(configured, env);
    if (!p.ok) throw new UsageError(`${key} is ${configured}, which cannot import torch (${p.detail}) — install torch for it (${configured} -m pip install torch), or point ${key} in ${where} at a python that has torch`);
    return { python: configured, note: `python: ${p.detail} (torch ${p.torch}), from ${key} in ${where}` };
  }
  const tried: string[] = [];
  for (const candidate of candidates) {
    const p = await probe(candidate, env);
    if (p.ok) return { python: candidate, note: `python: ${p.detail} (torch ${p.torch}); set ${key} in ${where} to choose another` };
    tried.push(`${candidate}: ${p.detail}`);
  }
  throw new UsageError(`no python with torch found for the local target — tried ${tried.join('; ')}. Install torch (python3 -m pip install torch), or set ${key} in ${where} to a python that has it`);
}

/** The target with its python chosen (local targets only; the others name theirs). */
export async function withLocalPython(target: { name: string; target: TargetConfig }, log: (line: string) => void): Promise<{ name: string; target: TargetConfig }> {
  if (target.target.kind !== 'local') return target;
  const found = await findLocalPython(target.name, target.target.python);
  log(found.note);
  return { ...target, target: { ...target.target, python: found.python } };
}
