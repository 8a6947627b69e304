import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { promptHash, readAgentPrompt, type LoadedConfig } from '../config/loader';
import { ConfigError, UsageError } from '../errors';
import type { TraceStore } from '../store/traceStore';

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

/** A variant checked against the config and the store: what each changed agent will run. */
export interface ResolvedVariant {
  /** agent → logical model, for the agents the variant moves to another model. */
  models: Map<string, string>;
  /** agent → prompt text and its version hash, for the agents whose prompt the variant replaces. */
  prompts: Map<string, { text: string; hash: string }>;
}

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

/**
 * Checks a variant against the config (agents, models) and the store (prompt
 * versions) and reads the prompts it names. Unknown names fail with an error
 * that lists what exists.
 */
export async function resolveVariant(loaded: LoadedConfig, store: TraceStore, variant: Variant): Promise<ResolvedVariant> {
  const { config, file } = loaded;
  const agents = Object.keys(config.agents);
  const knownAgent = (agent: string, what: string): void => {
    if (!config.agents[agent]) {
      throw new ConfigError(`variant "${variant.label}": ${what} names agent "${agent}", which is not under "agents" in ${file} (agents: ${agents.join(', ') || 'none'})`, file);
    }
  };
  const models = new Map<string, string>();
  for (const [agent, model] of Object.entries(variant.models ?? {})) {
    knownAgent(agent, 'a model change');
    if (!config.models[model]) {
      throw new ConfigError(
        `variant "${variant.label}": model "${model}" for ${agent} is not under "models" in ${file} (models: ${Object.keys(config.models).join(', ') || 'none'}); add an entry with its baseUrl and version`,
        file,
      );
    }
    models.set(agent, model);
  }
  const prompts = new Map<string, { text: string; hash: string }>();
  for (const [agent, source] of Object.entries(variant.prompts ?? {})) {
    knownAgent(agent, 'a prompt change');
    let text: string;
    if ('text' in source) text = source.text;
    else if ('file' in source) text = await readPromptFile(loaded, agent, source.file);
    else text = findPromptVersion(store, agent, source.version).text;
    prompts.set(agent, { text, hash: promptHash(text) });
  }
  return { models, prompts };
}

/** A stored prompt version of an agent by hash or unique prefix. */
export function findPromptVersion(store: TraceStore, agent: string, prefix: string): { hash: string; text: string } {
  const p = prefix.trim().toLowerCase();
  const versions = store.listPromptVersions(agent);
  const known = versions.map((v) => v.hash.slice(0, 8)).join(', ') || 'none stored yet';
  if (!/^[0-9a-f]{1,64}$/.test(p)) throw new UsageError(`prompt version "${prefix}" for ${agent} is not a hex hash prefix (stored versions: ${known}); use @FILE for a prompt file`);
  const hits = versions.filter((v) => v.hash.startsWith(p));
  if (hits.length === 0) throw new UsageError(`no stored prompt version of ${agent} starts with "${prefix}" (stored versions: ${known})`);
  if (hits.length > 1) throw new UsageError(`prompt version "${prefix}" of ${agent} is ambiguous: ${hits.map((v) => v.hash).join(', ')} — give more digits`);
  return { hash: hits[0]!.hash, text: hits[0]!.text };
}

async function readPromptFile(loaded: LoadedConfig, agent: string, file: string): Promise<string> {
  const path = resolve(loaded.workspaceDir, file);
  try {
    return (await readFile(path, 'utf8')).replace(/^\uFEFF/, '');
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : `cannot be read (${(err as Error).message})`;
    throw new UsageError(`prompt file ${path} for ${agent} ${why}; paths are relative to the workspace ${loaded.workspaceDir}`);
  }
}

/** The prompt an agent runs under a variant: the variant's, else lab.json's. */
export async function variantPrompt(loaded: LoadedConfig, resolved: ResolvedVariant | null, agent: string): Promise<{ text: string; hash: string }> {
  const own = resolved?.prompts.get(agent);
  if (own) return own;
  const { text } = await readAgentPrompt(loaded, agent);
  return { text, hash: promptHash(text) };
}
