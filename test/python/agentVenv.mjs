// Where the Python agents' venv is (scripts/setupAgentVenv.sh makes it): the helper's tests and the conformance
// matrix's Python agents run with its python. ROLLOUT_LAB_AGENT_PYTHON names another interpreter that has the same packages.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const AGENT_VENV = join(fileURLToPath(new URL('../..', import.meta.url)), '.venv-agents');

export function agentVenvPython() {
  return process.env.ROLLOUT_LAB_AGENT_PYTHON ?? join(AGENT_VENV, process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python');
}
