import type { LabConfig } from '../config/schema';
import { ConfigError } from '../errors';

/** A logical model bound to a concrete endpoint for the length of one rollout. */
export interface ResolvedModel {
  logical: string;
  baseUrl: string;
  model: string;
  apiKey: string;
  temperature?: number;
  maxTokens?: number;
  timeoutMs: number;
  maxRetries: number;
  logprobs: boolean;
  tokenIds: boolean;
  version: string | null;
  simulated: boolean;
}

export interface RouterOptions {
  /** URL of the running simulated endpoint (http://127.0.0.1:PORT/v1); needed when a model has no baseUrl. */
  simulatedBaseUrl?: string;
  /** `--base-url`: sends every model to this endpoint. */
  overrideBaseUrl?: string;
  /** `--model`: asks every endpoint for this model id. */
  overrideModel?: string;
  env?: NodeJS.ProcessEnv;
}

/** Set in the environment, it acts like `--base-url` when that is not given. */
export const BASE_URL_ENV = 'ROLLOUT_LAB_BASE_URL';

/** Sent to servers that need no key; the openai client refuses an empty one. */
export const NO_API_KEY = 'not-needed';

/**
 * The model routing table. Agents name a logical model; the router decides at
 * rollout start which endpoint and model id that means, so a trained model can
 * be swapped in by editing config alone.
 */
export class ModelRouter {
  private readonly env: NodeJS.ProcessEnv;
  private readonly overrideBaseUrl: string | undefined;

  constructor(
    private readonly config: LabConfig,
    private readonly opts: RouterOptions = {},
  ) {
    this.env = opts.env ?? process.env;
    this.overrideBaseUrl = nonEmpty(opts.overrideBaseUrl) ?? nonEmpty(this.env[BASE_URL_ENV]);
  }

  resolve(logical: string): ResolvedModel {
    const m = this.config.models[logical];
    if (!m) {
      throw new ConfigError(
        `model "${logical}" is not defined under "models"; define it or use one of: ${Object.keys(this.config.models).join(', ') || '(none)'}`,
      );
    }
    const simulated = this.isSimulated(logical);
    let baseUrl: string;
    if (simulated) {
      if (!this.opts.simulatedBaseUrl) {
        throw new ConfigError(
          `model "${logical}" has no baseUrl and the simulated endpoint is not running; set models.${logical}.baseUrl, pass --base-url, or start the simulator`,
        );
      }
      baseUrl = this.opts.simulatedBaseUrl;
    } else {
      baseUrl = (this.overrideBaseUrl ?? m.baseUrl)!;
    }
    return {
      logical,
      baseUrl: stripTrailingSlash(baseUrl),
      model: nonEmpty(this.opts.overrideModel) ?? m.model,
      // The simulator needs no key, so a model that names one still runs offline before the key is set.
      apiKey: simulated ? NO_API_KEY : this.apiKeyFor(logical, m.apiKeyEnv),
      temperature: m.temperature,
      maxTokens: m.maxTokens,
      timeoutMs: m.timeoutMs,
      maxRetries: m.maxRetries,
      logprobs: m.logprobs,
      tokenIds: m.tokenIds,
      version: m.version ?? null,
      simulated,
    };
  }

  forAgent(agent: string): ResolvedModel {
    const a = this.config.agents[agent];
    if (!a) {
      throw new ConfigError(
        `agent "${agent}" is not defined under "agents"; add it or use one of: ${Object.keys(this.config.agents).join(', ') || '(none)'}`,
      );
    }
    const resolved = this.resolve(a.model);
    return a.temperature === undefined ? resolved : { ...resolved, temperature: a.temperature };
  }

  simulatedModels(): string[] {
    return Object.keys(this.config.models).filter((name) => this.isSimulated(name));
  }

  needsSimulator(): boolean {
    return this.simulatedModels().length > 0;
  }

  private isSimulated(logical: string): boolean {
    // A configured endpoint always wins: real traffic must never be answered by the simulator.
    return !this.overrideBaseUrl && !this.config.models[logical]?.baseUrl;
  }

  private apiKeyFor(logical: string, apiKeyEnv: string | undefined): string {
    if (!apiKeyEnv) return NO_API_KEY;
    const key = nonEmpty(this.env[apiKeyEnv]);
    if (!key) {
      throw new ConfigError(
        `model "${logical}" reads its API key from $${apiKeyEnv}, which is not set; run \`export ${apiKeyEnv}=...\` (or store it in VS Code secrets) and try again`,
      );
    }
    return key;
  }
}

function nonEmpty(s: string | undefined): string | undefined {
  return s && s.trim() ? s.trim() : undefined;
}

function stripTrailingSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
