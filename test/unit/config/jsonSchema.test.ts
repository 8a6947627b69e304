import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { defaultLabConfig } from '../../../src/core/lab/labTemplates';
import { labConfigJsonSchema, labConfigJsonSchemaText } from '../../../src/core/config/jsonSchema';

const MEDIA_SCHEMA = path.resolve(__dirname, '../../../media/lab.schema.json');

test('media/lab.schema.json is up to date with the zod schema', () => {
  assert.equal(
    readFileSync(MEDIA_SCHEMA, 'utf8'),
    labConfigJsonSchemaText(),
    'media/lab.schema.json is stale — run: node --import tsx scripts/gen-schema.ts',
  );
});

test('the JSON Schema carries titles and descriptions for completion', () => {
  const schema = labConfigJsonSchema() as any;
  assert.equal(schema.$schema, 'http://json-schema.org/draft-07/schema#');
  assert.equal(schema.title, 'Rollout Lab configuration');
  assert.deepEqual(schema.required, ['models', 'agents']);
  const agent = schema.properties.agents.additionalProperties;
  assert.match(agent.properties.model.description, /Key of a model/);
  assert.deepEqual(Object.keys(agent.properties), ['model', 'prompt', 'promptText', 'tools', 'temperature', 'maxTokens', 'trainable']);
  assert.match(schema.properties.models.additionalProperties.properties.baseUrl.description, /Ollama/);
  assert.deepEqual(schema.properties.datasets.additionalProperties.properties.format.enum, ['auto', 'jsonl', 'pubmedqa', 'hf-pubmedqa']);
  assert.equal(schema.properties.reward.properties.criteria.default.impact.weight, 0.3);
});

// ajv is not a dependency; zod's own JSON Schema reader checks the generated schema's meaning instead.
test('the JSON Schema accepts the default config and rejects bad ones', () => {
  const validator = z.fromJSONSchema(labConfigJsonSchema() as z.core.JSONSchema.JSONSchema);
  assert.equal(validator.safeParse({ $schema: './lab.schema.json', ...defaultLabConfig() }).success, true);
  const bad = (edit: (c: any) => void): boolean => {
    const c: any = structuredClone(defaultLabConfig());
    edit(c);
    return validator.safeParse(c).success;
  };
  assert.equal(bad((c) => (c.agents.Geneticist.bogus = 1)), false, 'unknown key');
  assert.equal(bad((c) => (c.models.junior.temperature = 3)), false, 'out of range');
  assert.equal(bad((c) => (c.datasets = { 'a b': { path: 'x' } })), false, 'bad name');
  assert.equal(bad((c) => delete c.models), false, 'missing models');
  assert.equal(bad((c) => (c.air[0].when = 'tool.maybe')), false, 'bad enum');
});
