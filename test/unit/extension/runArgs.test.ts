import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRunArgs, validateCount } from '../../../src/extension/runArgs';
import { apiKeyChoices, mergeSecrets } from '../../../src/extension/view/apiKeyChoices';

describe('run command arguments', () => {
  it('means "ask" when there is none', () => {
    assert.equal(parseRunArgs(undefined), undefined);
    assert.equal(parseRunArgs(null), undefined);
  });

  it('accepts the documented shape', () => {
    assert.deepEqual(parseRunArgs({ limit: 3 }), { limit: 3 });
    assert.deepEqual(parseRunArgs({ dataset: 'pubmedqa', split: 'val', limit: 2, samples: 4, concurrency: 2 }), {
      dataset: 'pubmedqa',
      split: 'val',
      limit: 2,
      samples: 4,
      concurrency: 2,
    });
  });

  it('rejects anything else with a message naming the field', () => {
    assert.throws(() => parseRunArgs({ limit: -1 }), /limit/);
    assert.throws(() => parseRunArgs({ limit: 1.5 }), /limit/);
    assert.throws(() => parseRunArgs({ split: 'test' }), /split/);
    assert.throws(() => parseRunArgs({ limt: 3 }), /invalid arguments/);
    assert.throws(() => parseRunArgs('3'), /invalid arguments/);
  });

  it('validates counts typed in an input box', () => {
    assert.equal(validateCount('10', false), undefined);
    assert.equal(validateCount('', true), undefined);
    assert.ok(validateCount('', false));
    assert.ok(validateCount('0', true));
    assert.ok(validateCount('-3', true));
    assert.ok(validateCount('2.5', true));
  });
});

describe('API keys', () => {
  it('offers each apiKeyEnv once with the models that read it', () => {
    const choices = apiKeyChoices({ strong: { apiKeyEnv: 'OPENAI_API_KEY' }, fast: { apiKeyEnv: 'OPENAI_API_KEY' }, local: {}, other: { apiKeyEnv: 'GROQ_KEY' } });
    assert.deepEqual(choices, [
      { envVar: 'OPENAI_API_KEY', models: ['strong', 'fast'] },
      { envVar: 'GROQ_KEY', models: ['other'] },
    ]);
  });

  it('puts stored keys over the process environment without changing it', () => {
    const base = { PATH: '/bin', OPENAI_API_KEY: 'from-shell' };
    const env = mergeSecrets(base, { OPENAI_API_KEY: 'from-secrets', GROQ_KEY: undefined });
    assert.equal(env.OPENAI_API_KEY, 'from-secrets');
    assert.equal(env.PATH, '/bin');
    assert.equal('GROQ_KEY' in env, false);
    assert.equal(base.OPENAI_API_KEY, 'from-shell');
  });
});
