/** Environment variable names that hold API keys, with the models that read each. */
export interface ApiKeyChoice {
  envVar: string;
  models: string[];
}

/** From the "models" of lab.json: one choice per distinct apiKeyEnv, in first-seen order. */
export function apiKeyChoices(models: Record<string, { apiKeyEnv?: string }>): ApiKeyChoice[] {
  const byVar = new Map<string, string[]>();
  for (const [name, m] of Object.entries(models)) {
    if (!m.apiKeyEnv) continue;
    const list = byVar.get(m.apiKeyEnv) ?? [];
    list.push(name);
    byVar.set(m.apiKeyEnv, list);
  }
  return [...byVar].map(([envVar, names]) => ({ envVar, models: names }));
}

export const ENV_VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The environment model routing sees: the process environment with the
 * stored keys over it. A key set in VS Code wins over a stale one exported in
 * the shell VS Code was started from.
 */
export function mergeSecrets(base: NodeJS.ProcessEnv, secrets: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const [k, v] of Object.entries(secrets)) if (v) env[k] = v;
  return env;
}
