import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LabConfigSchema } from '../../../src/core/config/schema';
import { GatewayError } from '../../../src/core/gateway/gatewayError';
import { gatewayRouting } from '../../../src/core/gateway/gatewayRouting';
import { ModelRouter } from '../../../src/core/llm/routing';

const URL = 'http://127.0.0.1:9/v1';

function routingFor(agents: Record<string, { model: string; temperature?: number }>, movedTo?: (agent: string) => string | undefined) {
  const config = LabConfigSchema.parse({
    models: { small: { baseUrl: URL, model: 'small-model' }, big: { baseUrl: URL, model: 'big-model', version: 'v2' } },
    agents,
    reward: { judge: { model: 'small' } },
  });
  return gatewayRouting(config, new ModelRouter(config, { env: {} }), undefined, movedTo);
}

describe('gatewayRouting', () => {
  it('a lab with one agent needs no name: any model that is not a lab.json name goes to that agent', () => {
    const r = routingFor({ Solo: { model: 'small', temperature: 0.2 } }).route(null, 'gpt-4o-mini');
    assert.equal(r.agent, 'Solo');
    assert.equal(r.resolved.model, 'small-model');
    assert.equal(r.resolved.temperature, 0.2);
  });

  it("an agent named with a logical model in `model` runs on that model with the agent's settings", () => {
    const r = routingFor({ A: { model: 'small', temperature: 0.2 }, B: { model: 'small' } }).route('A', 'big');
    assert.equal(r.agent, 'A');
    assert.equal(r.resolved.logical, 'big');
    assert.equal(r.resolved.temperature, 0.2);
  });

  it('two agents and no name: a GatewayError 400 that names the ways to name one', () => {
    assert.throws(
      () => routingFor({ A: { model: 'small' }, B: { model: 'small' } }).route(null, null),
      (err: unknown) => err instanceof GatewayError && err.status === 400 && err.code === 'agent_not_named' && /x-rollout-lab-agent/.test(err.message),
    );
  });

  it("a variant that moves an agent to another model routes the agent's calls there, however it is named", () => {
    const routing = routingFor({ A: { model: 'small' }, B: { model: 'small' } }, (agent) => (agent === 'A' ? 'big' : undefined));
    assert.equal(routing.route('A', null).resolved.logical, 'big');
    assert.equal(routing.route(null, 'A').resolved.logical, 'big');
    assert.equal(routing.route('A', null).resolved.version, 'v2');
    assert.equal(routing.route('B', null).resolved.logical, 'small');
  });
});
