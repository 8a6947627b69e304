// Runs python-trainer's tests (pytest) with the trainer's venv (.venv-trainer, scripts/setupTrainerVenv.sh: PyPI's
// torch, transformers, peft, TRL, pinned in python-trainer/requirements.txt; .ci/run makes it). Outside CI, a machine
// without it skips with the reason; in CI a missing venv fails. Nothing inside skips for a missing library. First it lints the package (ruff and
// pyright, scripts/lintPython.mjs); a finding fails the run after the tests have run too. Then the agent helper's
// tests (python-agent/tests) with the agents' venv (scripts/setupAgentVenv.sh; .ci/run makes it), which has
// pytest and the OpenTelemetry SDK the helper's second path needs; they test the source tree (PYTHONPATH).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentVenvPython, trainerVenvPython } from './venvs.mjs';

const lint = spawnSync(process.execPath, [fileURLToPath(new URL('../../scripts/lintPython.mjs', import.meta.url))], { stdio: 'inherit' });
const linted = lint.status === 0;
const env = { ...process.env, PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1' };

/** A missing interpreter or package: a failure in CI, a skip with the reason elsewhere. */
function missing(why) {
  if (process.env.CI) {
    console.error(`FAIL: ${why}`);
    return false;
  }
  console.log(`SKIP: ${why}`);
  return true;
}

function trainerTests() {
  const python = trainerVenvPython();
  const probe = spawnSync(python, ['-c', 'import torch, transformers, peft, trl, tokenizers, yaml, jsonschema, pytest'], { encoding: 'utf8' });
  if (probe.status !== 0) {
    return missing(`python-trainer tests need the trainer's venv ${python} (bash scripts/setupTrainerVenv.sh makes it): ${(probe.stderr || probe.error?.message || '').trim().split('\n').pop()}`);
  }
  return spawnSync(python, ['-m', 'pytest', '-q', '-rs', '-p', 'no:cacheprovider', 'python-trainer/tests'], { stdio: 'inherit', env }).status === 0;
}

function agentHelperTests() {
  const python = agentVenvPython();
  if (!existsSync(python)) return missing(`python-agent's tests need the agents' venv (${python}): run bash scripts/setupAgentVenv.sh`);
  const root = fileURLToPath(new URL('../..', import.meta.url));
  return spawnSync(python, ['-m', 'pytest', '-q', '-rs', '-p', 'no:cacheprovider', 'python-agent/tests'], { stdio: 'inherit', env: { ...env, PYTHONPATH: join(root, 'python-agent') } }).status === 0;
}

const trainerOk = trainerTests();
const agentOk = agentHelperTests();
process.exit(linted && trainerOk && agentOk ? 0 : 1);
