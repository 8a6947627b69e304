import type { LabConfig, ModelConfig, RepairPolicy, StructuredOutputMode } from '../config/schema';
import { ConfigError } from '../errors';

/** A logical model bound to a concrete endpoint for the length of one rollout. */
export interface ResolvedModel {
  logical: string;
  baseUrl: string;
  model: string;
  apiKey: string;
  temperature?: number;
  /** max_tokens sent with every call (DEFAULT_MAX_TOKENS when left out). */
  maxTokens?: number;
  /** The lab.json key that set maxTokens, named in errors that tell how to raise it. */
  maxTokensSetting?: string;
  timeoutMs: number;
  maxRetries: number;
  logprobs: boolean;
  /** top_logprobs sent with logprobs (DEFAULT_TOP_LOGPROBS when left out). */
  topLogprobs?: number;
  tokenIds: boolean;
  /** How answers with a schema are enforced ("json_schema" when left out). */
  structuredOutput?: StructuredOutputMode;
  /** How a malformed structured answer is repaired ("local" when left out). */
  repair?: RepairPolicy;
  version: string | null;
  simulated: boolean;
  /** The endpoint is a registry version's (a served trained model): what fixes it when nothing answers there. */
  served?: { version: string; job?: string };
}

export interface RouterOptions {
  /** URL of the running simulated endpoint (http://127.0.0.1:PORT/v1); needed when a model has no baseUrl. */
  simulatedBaseUrl?: string;
  /** `--base-url`: sends every model to this endpoint. */
  overrideBaseUrl?: string;
  /** `--model`: asks every endpoint for this model id. */
  overrideModel?: string;
  env?: NodeJS.ProcessEnv;
  /** Agents routed to a version of their model that the model's other agents do not run (LoadedConfig.agentModels). */
  agentModels?: Record<string, ModelConfig>;
  /** The registry versions laid over lab.json's models (LoadedConfig.overlaid). */
  served?: Record<string, { version: string; baseUrl?: string; job?: string }>;
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
  private simulatedBaseUrl: string | undefined;

  constructor(
    private readonly config: LabConfig,
    private readonly opts: RouterOptions = {},
  ) {
    this.env = opts.env ?? process.env;
    this.overrideBaseUrl = nonEmpty(opts.overrideBaseUrl) ?? nonEmpty(this.env[BASE_URL_ENV]);
    this.simulatedBaseUrl = opts.simulatedBaseUrl;
  }

  /**
   * Sends the models without an endpoint to the simulator started for them:
   * whether one is needed is the router's own answer (`needsSimulator`), so
   * its URL comes after the router is built.
   */
  attachSimulator(url: string): void {
    this.simulatedBaseUrl = url;
  }

  resolve(logical: string): ResolvedModel {
    return this.resolveWith(logical, this.config.models[logical]);
  }

  private resolveWith(logical: string, m: ModelConfig | undefined, agentRoute = false): ResolvedModel {
    if (!m) {
      throw new ConfigError(
        `model "${logical}" is not defined under "models"; define it or use one of: ${Object.keys(this.config.models).join(', ') || '(none)'} — if "${logical}" is an agent (ctx.model("${logical}") in a graph module), add it under "agents" with its model: agents.${logical}.model`,
      );
    }
    const simulated = this.isSimulatedModel(m);
    let baseUrl: string;
    if (simulated) {
      if (!this.simulatedBaseUrl) {
        throw new ConfigError(
          `model "${logical}" has no baseUrl and the simulated endpoint is not running; set models.${logical}.baseUrl, pass --base-url, or start the simulator`,
        );
      }
      baseUrl = this.simulatedBaseUrl;
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
      maxTokensSetting: `models.${logical}.maxTokens`,
      timeoutMs: m.timeoutMs,
      maxRetries: m.maxRetries,
      logprobs: m.logprobs,
      topLogprobs: m.topLogprobs,
      tokenIds: m.tokenIds,
      structuredOutput: m.structuredOutput,
      repair: m.repair,
      version: m.version ?? null,
      simulated,
      ...this.servedVersion(logical, m, agentRoute),
    };
  }

  /** The judge's model, with the judge's own max_tokens (its answer is short). */
  forJudge(): ResolvedModel {
    const judge = this.config.reward.judge;
    return { ...this.resolve(judge.model), maxTokens: judge.maxTokens, maxTokensSetting: 'reward.judge.maxTokens' };
  }

  /** The agent's model (or `model`, a variant's swap) with the agent's own temperature and maxTokens over the model's. */
  forAgent(agent: string, model?: string): ResolvedModel {
    const a = this.config.agents[agent];
    if (!a) {
      throw new ConfigError(
        `agent "${agent}" is not defined under "agents"; add it or use one of: ${Object.keys(this.config.agents).join(', ') || '(none)'}`,
      );
    }
    // The agent's own route applies to its own model, not to another one a variant moves it to.
    const routed = model === undefined || model === a.model ? this.opts.agentModels?.[agent] : undefined;
    const resolved = routed ? this.resolveWith(a.model, routed, true) : this.resolve(model ?? a.model);
    return {
      ...resolved,
      ...(a.temperature === undefined ? {} : { temperature: a.temperature }),
      ...(a.maxTokens === undefined ? {} : { maxTokens: a.maxTokens, maxTokensSetting: `agents.${agent}.maxTokens` }),
    };
  }

  /** Logical models that some call would send to the simulator (an agent's own route counts for its model). */
  simulatedModels(): string[] {
    const routed = Object.entries(this.opts.agentModels ?? {})
      .filter(([agent, m]) => this.config.agents[agent] && this.isSimulatedModel(m))
      .map(([agent]) => this.config.agents[agent]!.model);
    return Object.keys(this.config.models).filter((name) => this.isSimulatedModel(this.config.models[name]!) || routed.includes(name));
  }

  needsSimulator(): boolean {
    return this.simulatedModels().length > 0;
  }

  private servedVersion(logical: string, m: ModelConfig, agentRoute: boolean): Pick<ResolvedModel, 'served'> {
    if (!m.baseUrl || this.overrideBaseUrl) return {};
    const v = this.opts.served?.[logical];
    if (v?.baseUrl && !agentRoute) return { served: { version: v.version, ...(v.job ? { job: v.job } : {}) } };
    // An agent's own route is always a registry version.
    return agentRoute && m.version ? { served: { version: m.version } } : {};
  }

  private isSimulatedModel(m: ModelConfig): boolean {
    // A configured endpoint always wins: real traffic must never be answered by the simulator.
    return !this.overrideBaseUrl && !m.baseUrl;
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
