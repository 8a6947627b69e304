// Where the repository's Python venvs are: the agents' (scripts/setupAgentVenv.sh: the conformance matrix's Python
// frameworks and python-agent) and the trainer's (scripts/setupTrainerVenv.sh: python-trainer's pinned torch,
// transformers, peft and TRL). ROLLOUT_LAB_AGENT_PYTHON and ROLLOUT_LAB_PYTHON name other interpreters with the same packages.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const bin = (venv) => join(ROOT, venv, process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python');

export const AGENT_VENV = join(ROOT, '.venv-agents');

export function agentVenvPython() {
  return process.env.ROLLOUT_LAB_AGENT_PYTHON ?? bin('.venv-agents');
}

export function trainerVenvPython() {
  return process.env.ROLLOUT_LAB_PYTHON ?? bin('.venv-trainer');
}
