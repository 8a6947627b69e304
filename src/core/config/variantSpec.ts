import { z } from 'zod';
import { UsageError } from '../errors';

/** Where a variant takes an agent's prompt from: a version the store keeps (hash or unique prefix), a file, or text. */
export type PromptSource = { version: string } | { file: string } | { text: string };

/**
 * A configuration to compare, applied on top of lab.json: chosen agents call
 * another logical model (a key of "models", e.g. a trained model with its
 * own baseUrl and version) or run another prompt. Everything else (judge,
 * criteria, tools, graph) stays as configured, so differences come from the
 * variant alone.
 */
export interface Variant {
  label: string;
  /** agent → logical model name. */
  models?: Record<string, string>;
  prompts?: Record<string, PromptSource>;
}

const PromptSourceSchema = z.union([
  z.object({ version: z.string() }),
  z.object({ file: z.string() }),
  z.object({ text: z.string() }),
]);
/** A variant as stored (in a comparison run's params, say), for reading it back. */
export const VariantSchema = z.object({
  label: z.string(),
  models: z.record(z.string(), z.string()).optional(),
  prompts: z.record(z.string(), PromptSourceSchema).optional(),
});

const ITEM = /^(model|prompt):([^=]+)=(.+)$/;

/**
 * Parses a variant spec as the CLI and the command arguments take it:
 * `base` (lab.json as it is), or comma-separated items
 * `model:AGENT=MODEL`, `prompt:AGENT=HASH_PREFIX`, `prompt:AGENT=@path/to/file.md`
 * and an optional `label:TEXT` (no commas). Without a label the spec is its own label.
 */
export function parseVariantSpec(spec: string): Variant {
  const trimmed = spec.trim();
  if (!trimmed) throw new UsageError('empty variant spec: use "base" or items such as model:HypothesisRefiner=trained,prompt:Supervisor=3fa2c1');
  if (trimmed === 'base') return { label: 'base' };
  const models: Record<string, string> = {};
  const prompts: Record<string, PromptSource> = {};
  let label: string | undefined;
  const described: string[] = [];
  for (const raw of trimmed.split(',')) {
    const item = raw.trim();
    if (!item) continue;
    if (item.startsWith('label:')) {
      label = item.slice('label:'.length).trim();
      if (!label) throw new UsageError(`variant spec "${spec}": "label:" needs a text after it`);
      continue;
    }
    if (item === 'base') throw new UsageError(`variant spec "${spec}": "base" stands alone; leave it out when the spec changes something`);
    const m = ITEM.exec(item);
    if (!m) {
      throw new UsageError(
        `variant spec "${spec}": cannot read "${item}" — use model:AGENT=MODEL, prompt:AGENT=HASH_PREFIX, prompt:AGENT=@FILE or label:TEXT, separated by commas`,
      );
    }
    const [, kind, agentRaw, valueRaw] = m as unknown as [string, 'model' | 'prompt', string, string];
    const agent = agentRaw.trim();
    const value = valueRaw.trim();
    if (!agent || !value) throw new UsageError(`variant spec "${spec}": "${item}" needs an agent before "=" and a value after it`);
    const table: Record<string, unknown> = kind === 'model' ? models : prompts;
    if (agent in table) throw new UsageError(`variant spec "${spec}": the ${kind} of ${agent} is given twice`);
    if (kind === 'model') models[agent] = value;
    else if (value.startsWith('@')) {
      const file = value.slice(1).trim();
      if (!file) throw new UsageError(`variant spec "${spec}": "${item}" needs a file path after "@"`);
      prompts[agent] = { file };
    } else prompts[agent] = { version: value };
    described.push(`${kind}:${agent}=${value}`);
  }
  if (described.length === 0) {
    if (label) return { label };
    throw new UsageError(`variant spec "${spec}" changes nothing: use "base" or items such as model:HypothesisRefiner=trained`);
  }
  const v: Variant = { label: label ?? described.join(',') };
  if (Object.keys(models).length) v.models = models;
  if (Object.keys(prompts).length) v.prompts = prompts;
  return v;
}

/** The spec string of a variant (what parseVariantSpec reads back); a prompt given as text has no spec form and shows as `text`. */
export function variantSpec(v: Variant): string {
  const items: string[] = [];
  for (const [agent, model] of Object.entries(v.models ?? {})) items.push(`model:${agent}=${model}`);
  for (const [agent, p] of Object.entries(v.prompts ?? {})) {
    items.push(`prompt:${agent}=${'version' in p ? p.version : 'file' in p ? `@${p.file}` : '(text)'}`);
  }
  if (items.length === 0) return v.label === 'base' ? 'base' : `label:${v.label}`;
  const plain = items.join(',');
  return v.label === plain ? plain : `${plain},label:${v.label}`;
}

/** Whether a variant changes nothing (lab.json as it is). */
export function isBaseVariant(v: Variant): boolean {
  return Object.keys(v.models ?? {}).length === 0 && Object.keys(v.prompts ?? {}).length === 0;
}
