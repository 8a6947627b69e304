import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { promptHash, readAgentPrompt, readOptionalAgentPrompt, type LoadedConfig } from '../config/loader';
import { ConfigError, UsageError } from '../errors';
import type { Variant } from '../config/variantSpec';
import type { TraceStore } from '../store/traceStore';

/** A variant checked against the config and the store: what each changed agent will run. */
export interface ResolvedVariant {
  /** agent → logical model, for the agents the variant moves to another model. */
  models: Map<string, string>;
  /** agent → prompt text and its version hash, for the agents whose prompt the variant replaces. */
  prompts: Map<string, { text: string; hash: string }>;
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

/**
 * The prompt an agent runs under a variant: the variant's, else lab.json's.
 * `optional` (a command lab's agents): null for an agent that has none.
 */
export async function variantPrompt(loaded: LoadedConfig, resolved: ResolvedVariant | null, agent: string, optional = false): Promise<{ text: string; hash: string } | null> {
  const own = resolved?.prompts.get(agent);
  if (own) return own;
  const read = optional ? await readOptionalAgentPrompt(loaded, agent) : await readAgentPrompt(loaded, agent);
  return read && { text: read.text, hash: promptHash(read.text) };
}
