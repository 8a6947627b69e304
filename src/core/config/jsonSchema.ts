import { z } from 'zod';
import { LabConfigSchema } from './schema';

/**
 * JSON Schema of `.rollout-lab/lab.json`, generated from the zod schema so the
 * two cannot drift. Draft-07 because every editor and validator reads it;
 * `io: 'input'` because the file holds what a user writes, defaults omitted.
 */
export function labConfigJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(LabConfigSchema, { io: 'input', target: 'draft-07' }) as Record<string, unknown>;
  const { $schema, ...rest } = generated;
  return {
    $schema,
    title: 'Rollout Lab configuration',
    ...rest,
  };
}

/** The exact text of `media/lab.schema.json` (and of the copy `rollout-lab init` writes). */
export function labConfigJsonSchemaText(): string {
  return `${JSON.stringify(labConfigJsonSchema(), null, 2)}\n`;
}
