/** The Python agents' venv folder (.venv-agents at the repository root). */
export declare const AGENT_VENV: string;
/** Its python, or ROLLOUT_LAB_AGENT_PYTHON when set. */
export declare function agentVenvPython(): string;
/** The trainer's venv python (.venv-trainer at the repository root), or ROLLOUT_LAB_PYTHON when set. */
export declare function trainerVenvPython(): string;
