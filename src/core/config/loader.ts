import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { getNodeValue } from 'jsonc-parser';
import { ConfigError } from '../errors';
import { ConfigValidationError, describeZodIssue, formatConfigPath, type ConfigIssue } from './configIssues';
import { labConfigJsonSchema } from './jsonSchema';
import { parseJsonDocument } from './jsonText';
import { labPaths } from './labPaths';
import { overlayActiveVersions, readRegistry, type ModelOverlay } from './modelRegistry';
import { LabConfigSchema, type LabConfig, type ModelConfig } from './schema';

export interface LoadedConfig {
  /** lab.json, with each logical model's active registered version laid over it (see modelRegistry). */
  config: LabConfig;
  /** lab.json's own models, before the registry's versions were laid over them. */
  baseModels: LabConfig['models'];
  /** Logical models that run a registered version instead of lab.json's settings. */
  overlaid: Record<string, ModelOverlay>;
  /**
   * Agents that run another version than their model's (one registered for
   * some of the model's agents only): each one's model settings, lab.json's
   * with that version laid over them.
   */
  agentModels: Record<string, ModelConfig>;
  /** Absolute path of lab.json. */
  file: string;
  /** Absolute path of the .rollout-lab folder; prompt and table paths are relative to it. */
  labDir: string;
  workspaceDir: string;
}

/**
 * Reads and validates `<workspace>/.rollout-lab/lab.json`, then lays the
 * model registry's active versions over its models so the next rollouts use
 * them (a corrupt registry is an error naming it, never silently ignored:
 * rollouts would run on the wrong model).
 */
export async function loadConfig(workspaceDir: string): Promise<LoadedConfig> {
  const paths = labPaths(workspaceDir);
  let text: string;
  try {
    text = await readFile(paths.file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new ConfigError(`no lab config at ${paths.file} — run \`rollout-lab init\` in the workspace`, paths.file);
    }
    throw new ConfigError(`cannot read ${paths.file}: ${(err as Error).message} — check its permissions`, paths.file);
  }
  const label = path.relative(paths.workspaceDir, paths.file).split(path.sep).join('/');
  const own = parseLabConfigText(text, paths.file, label);
  const { config, overlaid, agentModels } = overlayActiveVersions(own, readRegistry(paths.labDir));
  return { config, baseModels: own.models, overlaid, agentModels, file: paths.file, labDir: paths.labDir, workspaceDir: paths.workspaceDir };
}

/**
 * Validates lab config text (comments and trailing commas allowed). Throws a
 * ConfigError for a syntax error (with line and column) or a
 * ConfigValidationError listing every schema problem with its line.
 * Exposed on its own so an editor can check unsaved text.
 */
export function parseLabConfigText(text: string, file: string, label = path.basename(file)): LabConfig {
  const doc = parseJsonDocument(text.replace(/^\uFEFF/, ''));
  const syntax = doc.syntaxErrors[0];
  if (syntax) {
    const { line, column } = syntax.position;
    const more = doc.syntaxErrors.length > 1 ? ` (${doc.syntaxErrors.length - 1} more syntax error(s) after it)` : '';
    throw new ConfigError(`\`${label}\` line ${line}, column ${column}: ${syntax.message}${more}`, file);
  }
  if (!doc.root || doc.root.type !== 'object') {
    throw new ConfigError(`\`${label}\`: expected a JSON object with "models" and "agents" — run \`rollout-lab init\` for a starting point`, file);
  }
  const result = LabConfigSchema.safeParse(getNodeValue(doc.root), { reportInput: true });
  if (result.success) return result.data;
  const jsonSchema = labConfigJsonSchema();
  const issues: ConfigIssue[] = result.error.issues.flatMap((zodIssue) => {
    const { path: where, message } = describeZodIssue(zodIssue, jsonSchema);
    // One issue per unknown key, so each gets its own line in an editor.
    const keys = zodIssue.code === 'unrecognized_keys' ? zodIssue.keys : [undefined];
    return keys.map((key) => {
      const pos = doc.positionOf((key === undefined ? where : [...where, key]) as Array<string | number>);
      const oneKey =
        key === undefined || zodIssue.code !== 'unrecognized_keys' ? message : describeZodIssue({ ...zodIssue, keys: [key] }, jsonSchema).message;
      return { path: formatConfigPath(where), message: oneKey, line: pos?.line, column: pos?.column };
    });
  });
  throw new ConfigValidationError(label, file, issues);
}

/** Where an agent's prompt lives when the config names no file: relative to .rollout-lab/. */
export function defaultPromptPath(agent: string): string {
  return `prompts/${agent}.md`;
}

/**
 * The system prompt of an agent: its inline `promptText`, or the file named by
 * `prompt` (default prompts/<Agent>.md), relative to .rollout-lab/.
 * `file` is the absolute path read, or null for an inline prompt.
 */
export async function readAgentPrompt(loaded: LoadedConfig, agent: string): Promise<{ text: string; file: string | null }> {
  const cfg = loaded.config.agents[agent];
  if (!cfg) {
    const known = Object.keys(loaded.config.agents).join(', ') || '(none)';
    throw new ConfigError(`agent "${agent}" is not defined in ${loaded.file} — add it under "agents" (defined: ${known})`, loaded.file);
  }
  if (cfg.promptText !== undefined) return { text: cfg.promptText, file: null };
  const file = path.resolve(loaded.labDir, cfg.prompt ?? defaultPromptPath(agent));
  try {
    const text = await readFile(file, 'utf8');
    return { text: text.replace(/^\uFEFF/, ''), file };
  } catch (err) {
    const setting = cfg.prompt ? `fix agents.${agent}.prompt` : `set agents.${agent}.prompt or promptText`;
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new ConfigError(
        `prompt file ${file} for agent "${agent}" does not exist — run \`rollout-lab init\` to create the default prompts, or ${setting} in ${loaded.file}`,
        loaded.file,
      );
    }
    throw new ConfigError(`cannot read prompt file ${file} for agent "${agent}": ${(err as Error).message}`, loaded.file);
  }
}

/**
 * The prompt of an agent that may have none: the agents of a command lab are
 * programs with prompts of their own, so one that names no prompt (neither
 * `prompt` nor `promptText`) and has no prompts/<Agent>.md has none (null).
 * A prompt it does name is read as readAgentPrompt reads it, errors included.
 */
export async function readOptionalAgentPrompt(loaded: LoadedConfig, agent: string): Promise<{ text: string; file: string | null } | null> {
  const cfg = loaded.config.agents[agent];
  if (cfg && cfg.prompt === undefined && cfg.promptText === undefined && !existsSync(path.resolve(loaded.labDir, defaultPromptPath(agent)))) return null;
  return readAgentPrompt(loaded, agent);
}

/**
 * Version label of a prompt: the first 12 hex digits of its SHA-256. Line
 * endings are normalised first so a checkout on Windows (CRLF) and one on
 * Linux (LF) give the same version.
 */
export function promptHash(text: string): string {
  const normalised = text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  return createHash('sha256').update(normalised, 'utf8').digest('hex').slice(0, 12);
}
