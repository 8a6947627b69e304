import { existsSync } from 'node:fs';
import path from 'node:path';
import type { TargetConfig } from '../../../config/trainingSchema';
import { UsageError } from '../../../errors';
import { lastLines, run } from './exec';

/**
 * Which python a local job runs: training.targets.<name>.python when it is set,
 * otherwise the trainer's venv beside this installation, else the first of a few usual ones that imports torch (the python first
 * on PATH often is a version manager's, without torch, while the system one
 * has it). The probe runs once per process and PATH. A dry run needs no torch:
 * it takes the python it would run and says what that python lacks.
 */

export const PYTHON_CANDIDATES = [...trainerVenvPython(), 'python3', '/usr/bin/python3', '/usr/local/bin/python3', 'python'];

/**
 * The trainer's venv beside this installation (.venv-trainer, which scripts/setupTrainerVenv.sh makes with
 * python-trainer's pinned stack: torch, transformers, peft, TRL), found from here (src/core/…) or from the
 * bundle (dist); empty when there is none.
 */
export function trainerVenvPython(from: string = __dirname): string[] {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const python = path.join(dir, '.venv-trainer', 'bin', 'python');
    if (existsSync(python)) return [python];
    if (existsSync(path.join(dir, 'package.json')) || path.dirname(dir) === dir) return [];
  }
}

// Three lines: the interpreter's path, its version, then torch's version or "!" and why torch does not import.
const PROBE = [
  'import sys',
  'print(sys.executable)',
  "print('.'.join(str(n) for n in sys.version_info[:3]))",
  'try:',
  '    import torch',
  '    print(torch.__version__)',
  'except Exception as e:',
  "    print('!' + type(e).__name__ + ': ' + str(e).splitlines()[0] if str(e) else '!' + type(e).__name__)",
].join('\n');

export interface LocalPython {
  /** What the job's argv starts with. */
  python: string;
  /** "python: /usr/bin/python3 (torch 1.13.0); set … to choose another" */
  note: string;
}

/** What this machine has for a local target, torch or not (the target picker and a dry run show it). */
export interface LocalPythonCheck {
  /** The python a job would run: the configured one, else the first candidate with torch, else the first that runs at all; null when none runs. */
  python: string | null;
  /** Its own path (sys.executable) and version ("3.11.7"), when it ran. */
  exe: string | null;
  version: string | null;
  /** torch's version in it; null: it has no torch (or no python ran). */
  torch: string | null;
  /** From training.targets.<name>.python rather than the usual candidates. */
  configured: boolean;
  /** Each python tried without success, and why ("python3: ModuleNotFoundError: No module named 'torch'"). */
  tried: string[];
  /** One line for people: which python (or none) and what it means here. */
  summary: string;
}

interface Probe {
  /** The interpreter's own path and version, when it ran. */
  exe?: string;
  version?: string;
  torch?: string;
  /** Why it does not do: not found, failed, or why torch does not import. */
  detail: string;
}

const probes = new Map<string, Promise<Probe>>();

function probe(python: string, env: NodeJS.ProcessEnv): Promise<Probe> {
  const key = `${env.PATH ?? ''}\0${python}`;
  let found = probes.get(key);
  if (!found) {
    found = run([python, '-c', PROBE], { env, allowFail: true }).then(
      (r): Probe => {
        const [exe, version, torch] = r.stdout.trim().split('\n').map((l) => l.trim());
        if (r.code !== 0 || !exe || !version || !torch) return { detail: lastLines(r.stderr, 1) || `exited with status ${r.code}` };
        if (torch.startsWith('!')) return { exe, version, detail: torch.slice(1) };
        return { exe, version, torch, detail: exe };
      },
      (err: Error): Probe => ({ detail: /not installed or not on PATH/.test(err.message) ? 'not found' : err.message }),
    );
    probes.set(key, found);
  }
  return found;
}

/** Forgets what earlier probes found (tests that change PATH or the pythons on it). */
export function forgetPythonProbes(): void {
  probes.clear();
}

/** How to get python-trainer's stack (torch, transformers, peft, TRL) for a python. */
const INSTALL = (python: string): string => `${python} -m pip install -r python-trainer/requirements.txt`;
const VENV = 'bash scripts/setupTrainerVenv.sh in a clone of Rollout Lab makes .venv-trainer, which the local target uses first';
const INSTALL_TORCH = (python: string): string => `install python-trainer's stack (${INSTALL(python)}; or ${VENV})`;
const ONLY_DRY_RUN = 'only Dry Run works here';

/** Which python a local target named `targetName` would run, and whether it has torch; never throws for a missing python or torch. */
export async function checkLocalPython(
  targetName: string,
  configured: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  candidates: readonly string[] = PYTHON_CANDIDATES,
): Promise<LocalPythonCheck> {
  const key = `training.targets.${targetName}.python`;
  const ran = (python: string, p: Probe): Pick<LocalPythonCheck, 'python' | 'exe' | 'version' | 'torch'> => ({ python, exe: p.exe ?? null, version: p.version ?? null, torch: p.torch ?? null });
  if (configured) {
    const p = await probe(configured, env);
    const tried = p.torch ? [] : [`${configured}: ${p.detail}`];
    if (p.torch) return { ...ran(configured, p), configured: true, tried, summary: `${configured} ${p.version} with torch ${p.torch} (${key})` };
    if (p.version) return { ...ran(configured, p), configured: true, tried, summary: `${configured} ${p.version} (${key}) without torch: ${ONLY_DRY_RUN}; ${INSTALL_TORCH(configured)} or pick a remote target` };
    return { python: null, exe: null, version: null, torch: null, configured: true, tried, summary: `${key} is ${configured}, which does not run (${p.detail}): ${ONLY_DRY_RUN}; point it at a python with torch or pick a remote target` };
  }
  const tried: string[] = [];
  let first: Pick<LocalPythonCheck, 'python' | 'exe' | 'version' | 'torch'> | undefined;
  for (const candidate of candidates) {
    const p = await probe(candidate, env);
    if (p.torch) return { ...ran(candidate, p), configured: false, tried, summary: `${candidate} ${p.version} with torch ${p.torch}` };
    if (p.version && !first) first = ran(candidate, p);
    tried.push(`${candidate}: ${p.detail}`);
  }
  if (first) return { ...first, configured: false, tried, summary: `${first.python} ${first.version} without torch: ${ONLY_DRY_RUN}; ${INSTALL_TORCH(first.python!)} or pick a remote target` };
  return { python: null, exe: null, version: null, torch: null, configured: false, tried, summary: `no python found (tried ${candidates.join(', ')}): ${ONLY_DRY_RUN}; install Python 3 with torch or pick a remote target` };
}

/** The python for a local target named `targetName`; a UsageError that says what was tried and how to fix it when none has torch. */
export async function findLocalPython(
  targetName: string,
  configured: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  candidates: readonly string[] = PYTHON_CANDIDATES,
): Promise<LocalPython> {
  return localPythonOf(await checkLocalPython(targetName, configured, env, candidates), targetName, configured);
}

/** The python a launch runs, or the UsageError that says what was tried and how to fix it. */
function localPythonOf(c: LocalPythonCheck, targetName: string, configured: string | undefined): LocalPython {
  const key = `training.targets.${targetName}.python`;
  const where = `.rollout-lab/lab.json`;
  if (configured) {
    if (!c.torch) {
      const why = c.tried[0]?.slice(configured.length + 2) ?? 'no torch';
      throw new UsageError(`${key} is ${configured}, which cannot import torch (${why}) — install python-trainer's stack for it (${INSTALL(configured)}), or point ${key} in ${where} at a python that has torch`);
    }
    return { python: configured, note: `python: ${c.exe} (torch ${c.torch}), from ${key} in ${where}` };
  }
  if (!c.python || !c.torch) {
    throw new UsageError(`no python with torch found for the local target — tried ${c.tried.join('; ')}. Install python-trainer's stack (${VENV}; or ${INSTALL('python3')}), or set ${key} in ${where} to a python that has it`);
  }
  return { python: c.python, note: `python: ${c.exe} (torch ${c.torch}); set ${key} in ${where} to choose another` };
}

/**
 * The target with its python chosen (local targets only; the others name theirs). A launch needs torch
 * there (a UsageError otherwise); a dry run (`requireTorch: false`) takes the python it would run and logs
 * what it lacks.
 */
export async function withLocalPython(
  target: { name: string; target: TargetConfig },
  log: (line: string) => void,
  opts: { requireTorch?: boolean } = {},
): Promise<{ name: string; target: TargetConfig; python?: LocalPythonCheck }> {
  if (target.target.kind !== 'local') return target;
  const check = await checkLocalPython(target.name, target.target.python);
  if (opts.requireTorch === false && !check.torch) {
    log(`python: ${check.summary}`);
    return { ...target, target: { ...target.target, ...(check.python ? { python: check.python } : {}) }, python: check };
  }
  const found = localPythonOf(check, target.name, target.target.python);
  log(found.note);
  return { ...target, target: { ...target.target, python: found.python }, python: check };
}
