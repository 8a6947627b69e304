// Runs python-trainer's tests (pytest) with Debian's python3, which has torch (python3-torch), PyYAML,
// jsonschema and pytest from apt (.ci/run installs them). Outside CI, a machine without them skips with
// the reason; in CI a missing package fails. The transformers/peft tests skip themselves where those
// libraries are not installed (they are not, here) and say so. First it lints the package (ruff and
// pyright, scripts/lintPython.mjs); a finding fails the run after the tests have run too. Then the agent helper's
// tests (python-agent/tests) with the agents' venv (scripts/setupAgentVenv.sh; .ci/run makes it), which has
// pytest and the OpenTelemetry SDK the helper's second path needs; they test the source tree (PYTHONPATH).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentVenvPython } from './agentVenv.mjs';

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
  const python = process.env.ROLLOUT_LAB_PYTHON ?? (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');
  const probe = spawnSync(python, ['-c', 'import torch, yaml, jsonschema, pytest'], { encoding: 'utf8' });
  if (probe.status !== 0) {
    return missing(`python-trainer tests need ${python} with torch, yaml, jsonschema and pytest (apt-get install python3-torch python3-yaml python3-jsonschema python3-pytest): ${(probe.stderr || probe.error?.message || '').trim().split('\n').pop()}`);
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
