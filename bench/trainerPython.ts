import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { trainerVenvPython } from '../src/core/train/jobs/launchers/localPython';

/** The repository's root, where scripts/setupTrainerVenv.sh makes .venv-trainer/. */
const ROOT = path.resolve(__dirname, '..');
const DRIVER = path.join(__dirname, 'python', 'train_vs_trl.py');
const RESULT = '@bench-result ';

/** The trainer venv's python (torch, transformers, peft, trl; ROLLOUT_LAB_PYTHON names another, as for the tests), or an error that says how to make it. */
export function trainerPython(): string {
  const python = process.env.ROLLOUT_LAB_PYTHON ?? trainerVenvPython()[0];
  if (!python) throw new Error(`no trainer venv at ${path.join(ROOT, '.venv-trainer')}: run bash scripts/setupTrainerVenv.sh (it installs python-trainer/requirements.txt, TRL included)`);
  return python;
}

/**
 * Runs bench/python/train_vs_trl.py MODE with the trainer venv and returns the figures it
 * prints (`@bench-result {...}`): `lab` and `trl` measured in the same run, and what they
 * were measured on.
 */
export async function trainVsTrl(mode: 'sft' | 'grpo', args: string[] = []): Promise<{ lab: number; trl: number; device: string; [key: string]: unknown }> {
  const python = trainerPython();
  let stdout: string;
  try {
    ({ stdout } = await promisify(execFile)(python, [DRIVER, mode, ...args], {
      cwd: ROOT,
      maxBuffer: 64 * 1024 * 1024,
      timeout: 30 * 60_000,
      env: { ...process.env, PYTHONUNBUFFERED: '1', HF_HUB_OFFLINE: '1', HF_DATASETS_OFFLINE: '1' },
    }));
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${path.relative(ROOT, DRIVER)} ${mode} failed: ${e.message}\n${(e.stderr ?? '').slice(-3000)}`);
  }
  const line = stdout.split('\n').reverse().find((l) => l.startsWith(RESULT));
  if (!line) throw new Error(`${path.relative(ROOT, DRIVER)} ${mode} printed no ${RESULT.trim()} line:\n${stdout.slice(-2000)}`);
  return JSON.parse(line.slice(RESULT.length)) as { lab: number; trl: number; device: string };
}
