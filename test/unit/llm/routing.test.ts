import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LabConfigSchema, type LabConfigInput } from '../../../src/core/config/schema';
import { ConfigError } from '../../../src/core/errors';
import { ModelRouter } from '../../../src/core/llm/routing';

const SIM = 'http://127.0.0.1:4010/v1';

function config(models: LabConfigInput['models'], agents: LabConfigInput['agents'] = {}): ReturnType<typeof LabConfigSchema.parse> {
  return LabConfigSchema.parse({ models, agents, reward: { judge: { model: Object.keys(models)[0]! } } });
}

const lab = config(
  {
    small: { model: 'qwen2.5:1.5b-instruct', temperature: 0.7 },
    senior: { baseUrl: 'http://127.0.0.1:8000/v1/', model: 'llama-8b', version: 'v3', logprobs: true, maxRetries: 2 },
    strong: { baseUrl: 'https://api.example.com/v1', model: 'gpt-x', apiKeyEnv: 'EXAMPLE_KEY' },
  },
  {
    Geneticist: { model: 'small' },
    Supervisor: { model: 'small', temperature: 0 },
    HypothesisRefiner: { model: 'senior', temperature: 0.1 },
  },
);

describe('ModelRouter', () => {
  it('sends a model without baseUrl to the simulator and one with baseUrl to its endpoint', () => {
    const r = new ModelRouter(lab, { simulatedBaseUrl: SIM, env: { EXAMPLE_KEY: 'k' } });
    const small = r.resolve('small');
    assert.equal(small.simulated, true);
    assert.equal(small.baseUrl, SIM);
    assert.equal(small.model, 'qwen2.5:1.5b-instruct');
    assert.equal(small.apiKey, 'not-needed');
    const senior = r.resolve('senior');
    assert.deepEqual(senior, {
      logical: 'senior',
      baseUrl: 'http://127.0.0.1:8000/v1',
      model: 'llama-8b',
      apiKey: 'not-needed',
      temperature: undefined,
      maxTokens: 2048,
      maxTokensSetting: 'models.senior.maxTokens',
      timeoutMs: 120_000,
      maxRetries: 2,
      logprobs: true,
      topLogprobs: 1,
      tokenIds: false,
      structuredOutput: 'json_schema',
      repair: 'local',
      version: 'v3',
      simulated: false,
    });
    assert.deepEqual(r.simulatedModels(), ['small']);
    assert.equal(r.needsSimulator(), true);
  });

  it('never routes a model with a baseUrl to the simulator', () => {
    const only = config({ m: { baseUrl: 'http://127.0.0.1:9/v1', model: 'x' } });
    const r = new ModelRouter(only, { simulatedBaseUrl: SIM, env: {} });
    assert.equal(r.resolve('m').simulated, false);
    assert.equal(r.resolve('m').baseUrl, 'http://127.0.0.1:9/v1');
    assert.equal(r.needsSimulator(), false);
    assert.deepEqual(r.simulatedModels(), []);
  });

  it('applies --base-url and --model overrides to every model', () => {
    const r = new ModelRouter(lab, { overrideBaseUrl: 'http://127.0.0.1:11434/v1', overrideModel: 'phi', env: { EXAMPLE_KEY: 'k' } });
    for (const name of ['small', 'senior', 'strong']) {
      const m = r.resolve(name);
      assert.equal(m.baseUrl, 'http://127.0.0.1:11434/v1');
      assert.equal(m.model, 'phi');
      assert.equal(m.simulated, false);
    }
    assert.equal(r.needsSimulator(), false);
  });

  it('treats ROLLOUT_LAB_BASE_URL like --base-url unless an override is given', () => {
    const env = { ROLLOUT_LAB_BASE_URL: 'http://127.0.0.1:7000/v1', EXAMPLE_KEY: 'k' };
    assert.equal(new ModelRouter(lab, { env }).resolve('small').baseUrl, 'http://127.0.0.1:7000/v1');
    assert.equal(new ModelRouter(lab, { env, overrideBaseUrl: 'http://127.0.0.1:7001/v1' }).resolve('small').baseUrl, 'http://127.0.0.1:7001/v1');
  });

  it("applies an agent's temperature over its model's", () => {
    const r = new ModelRouter(lab, { simulatedBaseUrl: SIM, env: {} });
    assert.equal(r.forAgent('Geneticist').temperature, 0.7);
    assert.equal(r.forAgent('Supervisor').temperature, 0);
    assert.equal(r.forAgent('HypothesisRefiner').temperature, 0.1);
    assert.equal(r.forAgent('HypothesisRefiner').logical, 'senior');
  });

  it('bounds every call: the model default, an agent override and the judge its own, each naming the key that sets it', () => {
    const cfg = LabConfigSchema.parse({
      models: { small: { model: 'q' }, big: { model: 'b', maxTokens: 4096 } },
      agents: { Geneticist: { model: 'small' }, ProtocolDesigner: { model: 'big', maxTokens: 6000 }, Supervisor: { model: 'big' } },
      reward: { judge: { model: 'big' } },
    });
    const r = new ModelRouter(cfg, { simulatedBaseUrl: SIM, env: {} });
    assert.deepEqual(pick(r.forAgent('Geneticist')), [2048, 'models.small.maxTokens']);
    assert.deepEqual(pick(r.forAgent('Supervisor')), [4096, 'models.big.maxTokens']);
    assert.deepEqual(pick(r.forAgent('ProtocolDesigner')), [6000, 'agents.ProtocolDesigner.maxTokens']);
    assert.deepEqual(pick(r.forAgent('ProtocolDesigner', 'small')), [6000, 'agents.ProtocolDesigner.maxTokens'], 'a variant that moves the agent keeps its override');
    assert.deepEqual(pick(r.forJudge()), [512, 'reward.judge.maxTokens']);
    const judged = LabConfigSchema.parse({ ...cfg, reward: { judge: { model: 'big', maxTokens: 300 } } });
    assert.deepEqual(pick(new ModelRouter(judged, { simulatedBaseUrl: SIM, env: {} }).forJudge()), [300, 'reward.judge.maxTokens']);
  });

  it('reads the API key from the named variable and says which one to export when unset', () => {
    assert.equal(new ModelRouter(lab, { env: { EXAMPLE_KEY: 'sk-1' } }).resolve('strong').apiKey, 'sk-1');
    assert.throws(
      () => new ModelRouter(lab, { env: {} }).resolve('strong'),
      (err: unknown) => err instanceof ConfigError && /export EXAMPLE_KEY=/.test(err.message),
    );
  });

  it('explains unknown names and a missing simulator', () => {
    const r = new ModelRouter(lab, { env: {} });
    assert.throws(() => r.resolve('nope'), (err: unknown) => err instanceof ConfigError && /"nope".*small, senior, strong/.test(err.message));
    assert.throws(() => r.forAgent('Ghost'), (err: unknown) => err instanceof ConfigError && /agent "Ghost"/.test(err.message));
    assert.throws(() => r.resolve('small'), (err: unknown) => err instanceof ConfigError && /no baseUrl.*simulat/.test(err.message));
  });
});

function pick(m: { maxTokens?: number; maxTokensSetting?: string }): [number | undefined, string | undefined] {
  return [m.maxTokens, m.maxTokensSetting];
}
