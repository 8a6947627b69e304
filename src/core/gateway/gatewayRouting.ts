import type { LabConfig } from '../config/schema';
import type { ModelRouter, ResolvedModel } from '../llm/routing';
import type { AgentVersions } from '../trace/llmSpanAttributes';
import { AGENT_HEADER } from '../llm/client';
import { GatewayError } from './gatewayError';

export interface GatewayRoute {
  resolved: ResolvedModel;
  /** The calling agent, or null for a call to a logical model that names none. */
  agent: string | null;
}

/** How the gateway sends a call on: the lab's routing table, its registry versions and per-agent settings. */
export interface GatewayRouting {
  /** `agent`: named by the URL or the header; `requestedModel`: the request's `model`. Throws a GatewayError for a call it cannot place. */
  route(agent: string | null, requestedModel: string | null): GatewayRoute;
  /** Prompt versions and routed models, recorded on each call's span as in-process graphs do. */
  versions?: AgentVersions;
  /** What `GET /v1/models` lists: the names a request's `model` may use. */
  models?(): string[];
}

/**
 * The routing an in-process graph gets, for calls from outside: an agent (by
 * URL, header or `model`) goes through `router.forAgent`, so its own model
 * route, temperature and maxTokens apply; a `model` naming a logical model of
 * lab.json goes to that model. A lab with one agent needs no name.
 */
export function gatewayRouting(
  config: LabConfig,
  router: ModelRouter,
  versions?: AgentVersions,
  /** The logical model a variant (a configuration being compared) moves an agent to, if any. */
  movedTo: (agent: string) => string | undefined = () => undefined,
): GatewayRouting {
  const agents = Object.keys(config.agents);
  const models = Object.keys(config.models);
  const known = (name: string | null, table: Record<string, unknown>): name is string => name !== null && Object.hasOwn(table, name);
  return {
    ...(versions ? { versions } : {}),
    models: () => [...agents, ...models.filter((m) => !agents.includes(m))],
    route(agent, requestedModel) {
      if (agent !== null) {
        if (!known(agent, config.agents)) {
          throw new GatewayError(
            400,
            `agent "${agent}" is not defined under "agents" in lab.json; name one of: ${agents.join(', ') || '(none)'}`,
            'unknown_agent',
          );
        }
        // A logical model in `model` moves this agent to it (as a variant does), keeping the agent's own settings.
        const model = known(requestedModel, config.models) ? requestedModel : movedTo(agent);
        return { resolved: router.forAgent(agent, model), agent };
      }
      if (known(requestedModel, config.agents)) return { resolved: router.forAgent(requestedModel, movedTo(requestedModel)), agent: requestedModel };
      if (known(requestedModel, config.models)) return { resolved: router.resolve(requestedModel), agent: null };
      if (agents.length === 1) return { resolved: router.forAgent(agents[0]!, movedTo(agents[0]!)), agent: agents[0]! };
      throw new GatewayError(
        400,
        `the gateway cannot tell which agent is calling${requestedModel ? ` (model "${requestedModel}" is neither an agent nor a model of lab.json)` : ''}: use the agent's base URL (…/rollouts/ID/agents/NAME/v1), send the header ${AGENT_HEADER}: NAME, or set the request's model to the agent's name — one of: ${agents.join(', ') || '(none)'}`,
        'agent_not_named',
      );
    },
  };
}
