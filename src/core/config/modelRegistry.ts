import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ConfigError, UsageError } from '../errors';
import type { LabConfig, ModelConfig } from './schema';

/**
 * The model version registry (.rollout-lab/registry.json): trained versions of
 * each logical model, which one is active, and the order they were activated
 * in. lab.json stays the user's file; the registry is written by tools, and
 * loadConfig lays the active version over lab.json's settings, so the next
 * rollouts use it and rolling back is one step.
 *
 * A version may serve only some of the model's agents (`agents`: the agents a
 * phase trained when the model is shared with others). Each agent runs the
 * newest version in the history that serves it; the model's other agents keep
 * the route they had, and rolling back pops one entry for whichever agents it
 * served.
 */

export const REGISTRY_FILE_NAME = 'registry.json';

const ProducedBySchema = z.strictObject({
  phase: z.string().min(1),
  at: z.number(),
  job: z.string().min(1).optional(),
});

const ModelVersionSchema = z.strictObject({
  version: z.string().min(1),
  baseUrl: z.url({ protocol: /^https?$/ }).optional(),
  model: z.string().min(1).optional(),
  adapter: z.string().min(1).optional(),
  /** The agents this version serves; left out: every agent of the model. */
  agents: z.array(z.string().min(1)).min(1).optional(),
  producedBy: ProducedBySchema.optional(),
  registeredAt: z.number(),
});

const ModelEntrySchema = z.strictObject({
  /** null: lab.json's own settings. */
  active: z.string().nullable(),
  /** Activations, oldest first; the last is the active one. Rollback pops it. */
  history: z.array(z.string()),
  versions: z.array(ModelVersionSchema),
});

const RegistrySchema = z.strictObject({
  version: z.literal(1),
  models: z.record(z.string(), ModelEntrySchema),
});

export type ModelVersion = z.output<typeof ModelVersionSchema>;
export type ModelRegistryEntry = z.output<typeof ModelEntrySchema>;
export type ModelRegistry = z.output<typeof RegistrySchema>;

export interface ModelVersionSpec {
  version: string;
  baseUrl?: string;
  model?: string;
  adapter?: string;
  /** Only these agents of the model run it; left out: all of them. */
  agents?: string[];
  producedBy?: { phase: string; at: number; job?: string };
}

/** What loadConfig laid over a model of lab.json. */
export interface ModelOverlay {
  version: string;
  baseUrl?: string;
  model?: string;
  adapter?: string;
  /** The job that produced the version (a training job: `rollout-lab jobs serve JOB` serves it again). */
  job?: string;
}

export interface RegisterOptions {
  /** A version registered before with other settings takes the new ones (a re-served adapter at a new endpoint) instead of being refused. */
  update?: boolean;
}

export function registryFile(labDir: string): string {
  return path.join(labDir, REGISTRY_FILE_NAME);
}

/** The registry, or an empty one when the file does not exist. A corrupt file is an error naming it; it is never overwritten. */
export function readRegistry(labDir: string): ModelRegistry {
  const file = registryFile(labDir);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, models: {} };
    throw new ConfigError(`cannot read the model registry ${file}: ${(err as Error).message} — check its permissions`, file);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`the model registry ${file} is not valid JSON (${(err as Error).message}) — fix it by hand or move it aside to start over with lab.json's models`, file);
  }
  const parsed = RegistrySchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.length ? issue.path.join('.') : '(top level)';
    throw new ConfigError(`the model registry ${file} is invalid at ${where}: ${issue.message} — fix it by hand or move it aside to start over with lab.json's models`, file);
  }
  for (const [name, entry] of Object.entries(parsed.data.models)) {
    const known = new Set(entry.versions.map((v) => v.version));
    const bad = [entry.active, ...entry.history].find((v) => v !== null && !known.has(v));
    if (bad) throw new ConfigError(`the model registry ${file} names version "${bad}" of model "${name}" that it does not list under versions — fix it by hand`, file);
  }
  return parsed.data;
}

/**
 * Adds a version of a logical model and makes it active. Registering the same version again with the same settings only
 * activates it; with other settings it is refused, unless `update` (then the version takes the new settings).
 */
export function registerModelVersion(labDir: string, logicalModel: string, spec: ModelVersionSpec, opts: RegisterOptions = {}): ModelRegistryEntry {
  const checked = ModelVersionSchema.omit({ registeredAt: true }).safeParse(stripUndefined(spec));
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    throw new UsageError(`model version for "${logicalModel}": ${issue.path.join('.') || 'version'}: ${issue.message}`);
  }
  return updateRegistry(labDir, (reg) => {
    const entry = (reg.models[logicalModel] ??= { active: null, history: [], versions: [] });
    const existing = entry.versions.find((v) => v.version === spec.version);
    if (existing) {
      const changed = existing.baseUrl !== spec.baseUrl || existing.model !== spec.model || existing.adapter !== spec.adapter;
      if (changed && opts.update) {
        entry.versions[entry.versions.indexOf(existing)] = { ...checked.data, registeredAt: Date.now() };
      } else if (changed) {
        throw new UsageError(
          `version "${spec.version}" of model "${logicalModel}" is already registered with other settings — give the new one its own version label`,
        );
      }
      if (!sameAgents(existing.agents, checked.data.agents)) {
        throw new UsageError(
          `version "${spec.version}" of model "${logicalModel}" is already registered for ${agentsText(existing.agents)}, not ${agentsText(checked.data.agents)} — give the new one its own version label`,
        );
      }
    } else {
      entry.versions.push({ ...checked.data, registeredAt: Date.now() });
    }
    activate(entry, spec.version);
    return entry;
  });
}

/** Makes a registered version the active one (it goes on top of the history). */
export function activateModelVersion(labDir: string, logicalModel: string, version: string): ModelRegistryEntry {
  return updateRegistry(labDir, (reg) => {
    const entry = reg.models[logicalModel];
    if (!entry?.versions.some((v) => v.version === version)) {
      const known = entry?.versions.map((v) => v.version).join(', ') || '(none)';
      throw new UsageError(`model "${logicalModel}" has no registered version "${version}" (registered: ${known}) — register it first`);
    }
    activate(entry, version);
    return entry;
  });
}

/**
 * Goes back to the version that was active before the current one, or to
 * lab.json's own settings when there was none. The versions stay registered.
 */
export function rollbackModelVersion(labDir: string, logicalModel: string): ModelRegistryEntry {
  return updateRegistry(labDir, (reg) => {
    const entry = reg.models[logicalModel];
    if (!entry || entry.active === null) {
      throw new UsageError(`model "${logicalModel}" already runs on lab.json's own settings — there is no registered version to roll back from`);
    }
    entry.history.pop();
    entry.active = entry.history.at(-1) ?? null;
    return entry;
  });
}

/**
 * Rolls back, in one write, for as long as the active version is one `leave` picks (every version, without it): the
 * versions before it stay, the ones left behind stay registered. The entry after, or null when nothing was rolled back.
 */
export function rollbackModelWhile(labDir: string, logicalModel: string, leave: (v: ModelVersion) => boolean = () => true): ModelRegistryEntry | null {
  const entry = readRegistry(labDir).models[logicalModel];
  const picked = (e: ModelRegistryEntry): boolean => {
    const v = e.versions.find((x) => x.version === e.active);
    return v !== undefined && leave(v);
  };
  if (!entry || !picked(entry)) return null;
  return updateRegistry(labDir, (reg) => {
    const e = reg.models[logicalModel]!;
    while (picked(e)) {
      e.history.pop();
      e.active = e.history.at(-1) ?? null;
    }
    return e;
  });
}

/**
 * The version an agent of the model runs: the newest in the history that
 * serves it (one without `agents` serves every agent). With no agent, the
 * newest that serves them all: the model's own route (the judge, a graph that
 * asks for the model by name, agents no scoped version names). null: lab.json's settings.
 */
export function routedVersion(entry: ModelRegistryEntry, agent?: string): ModelVersion | null {
  for (let i = entry.history.length - 1; i >= 0; i--) {
    const v = entry.versions.find((x) => x.version === entry.history[i]);
    if (v && (!v.agents || (agent !== undefined && v.agents.includes(agent)))) return v;
  }
  return null;
}

/** Each agent of lab.json that uses the model, with the version it runs (null: lab.json's settings). */
export function agentRoutes(config: LabConfig, logicalModel: string, entry: ModelRegistryEntry | undefined): Array<{ agent: string; version: string | null }> {
  return Object.entries(config.agents)
    .filter(([, a]) => a.model === logicalModel)
    .map(([agent]) => ({ agent, version: entry ? (routedVersion(entry, agent)?.version ?? null) : null }));
}

/**
 * Lays each logical model's routed version over lab.json's settings:
 * `version` always, endpoint and model id when the version names them.
 * An agent whose route differs from its model's (a version registered for
 * some of the model's agents) gets its own settings in `agentModels`.
 * Models the registry knows but lab.json does not are left out.
 */
export function overlayActiveVersions(
  config: LabConfig,
  registry: ModelRegistry,
): { config: LabConfig; overlaid: Record<string, ModelOverlay>; agentModels: Record<string, ModelConfig> } {
  const overlaid: Record<string, ModelOverlay> = {};
  const agentModels: Record<string, ModelConfig> = {};
  const models = { ...config.models };
  const over = (base: ModelConfig, v: ModelVersion): ModelConfig => ({ ...base, version: v.version, ...(v.baseUrl ? { baseUrl: v.baseUrl } : {}), ...(v.model ? { model: v.model } : {}) });
  for (const [name, entry] of Object.entries(registry.models)) {
    const base = config.models[name];
    if (!base) continue;
    const v = routedVersion(entry);
    if (v) {
      models[name] = over(base, v);
      overlaid[name] = stripUndefined({ version: v.version, baseUrl: v.baseUrl, model: v.model, adapter: v.adapter, job: v.producedBy?.job });
    }
    for (const { agent } of agentRoutes(config, name, entry)) {
      const own = routedVersion(entry, agent);
      if (own && own !== v) agentModels[agent] = over(base, own);
    }
  }
  return { config: { ...config, models }, overlaid, agentModels };
}

/** The agents of a model grouped by the version they run: "Geneticist, Neurologist → sft-2; Supervisor → lab.json". */
export function routesText(routes: ReadonlyArray<{ agent: string; version: string | null }>, none = '-'): string {
  if (!routes.length) return none;
  const byVersion = new Map<string, string[]>();
  for (const r of routes) {
    const key = r.version ?? 'lab.json';
    byVersion.set(key, [...(byVersion.get(key) ?? []), r.agent]);
  }
  return [...byVersion.entries()].map(([version, agents]) => `${agents.join(', ')} → ${version}`).join('; ');
}

function sameAgents(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  return [...(a ?? [])].sort().join('\0') === [...(b ?? [])].sort().join('\0');
}

function agentsText(agents: readonly string[] | undefined): string {
  return agents ? `agents ${agents.join(', ')}` : 'all its agents';
}

function activate(entry: ModelRegistryEntry, version: string): void {
  if (entry.active === version) return;
  entry.history.push(version);
  entry.active = version;
}

/** Read, change, validate, write atomically: a crash leaves the old file or the new one, never half of one. */
function updateRegistry<T>(labDir: string, change: (reg: ModelRegistry) => T): T {
  const reg = readRegistry(labDir);
  const result = change(reg);
  const text = JSON.stringify(RegistrySchema.parse(reg), null, 2) + '\n';
  writeTextAtomic(registryFile(labDir), text);
  return structuredClone(result);
}

function writeTextAtomic(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    const fd = openSync(tmp, 'w');
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
