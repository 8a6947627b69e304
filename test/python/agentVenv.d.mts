/** The Python agents' venv folder (.venv-agents at the repository root). */
export declare const AGENT_VENV: string;
/** Its python, or ROLLOUT_LAB_AGENT_PYTHON when set. */
export declare function agentVenvPython(): string;
