import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { applyEdits, modify } from 'jsonc-parser';
import { defaultPromptPath, parseLabConfigText, promptHash, type LoadedConfig } from '../../config/loader';
import { ConfigError, UsageError } from '../../errors';
import type { Lab } from '../../lab/lab';
import { writeFileAtomic } from '../../store/atomicFile';

/** Where an agent's prompt is written: its prompt file, or lab.json when the prompt is inline (`promptText`). */
export function promptTarget(loaded: LoadedConfig, agent: string): { file: string; inline: boolean } {
  const cfg = loaded.config.agents[agent];
  if (!cfg) throw new ConfigError(`agent "${agent}" is not under "agents" in ${loaded.file} (agents: ${Object.keys(loaded.config.agents).join(', ') || 'none'})`, loaded.file);
  if (cfg.promptText !== undefined) return { file: loaded.file, inline: true };
  return { file: path.resolve(loaded.labDir, cfg.prompt ?? defaultPromptPath(agent)), inline: false };
}

/**
 * Makes `text` the agent's prompt: replaces its prompt file, or its inline
 * `promptText` in lab.json (a jsonc edit, so comments and layout survive).
 * Either write is atomic. The open lab sees the new prompt at once, and the
 * next rollout records it as a new prompt version, the one returned.
 */
export async function applyPrompt(lab: Lab, agent: string, text: string): Promise<{ file: string; version: string }> {
  const loaded = lab.loaded;
  const target = promptTarget(loaded, agent);
  const cfg = loaded.config.agents[agent]!;
  if (!text.trim()) throw new UsageError(`refusing to give ${agent} an empty prompt`);
  if (target.inline) {
    const before = readFileSync(loaded.file, 'utf8');
    const bom = before.startsWith('\uFEFF') ? '\uFEFF' : '';
    const body = before.slice(bom.length);
    const indent = /^([ \t]+)\S/m.exec(body)?.[1] ?? '  ';
    const edits = modify(body, ['agents', agent, 'promptText'], text, {
      formattingOptions: { insertSpaces: !indent.startsWith('\t'), tabSize: indent.startsWith('\t') ? 1 : indent.length, eol: body.includes('\r\n') ? '\r\n' : '\n' },
    });
    const after = bom + applyEdits(body, edits);
    // The whole file must still be a valid config before it replaces the old one.
    const config = parseLabConfigText(after, loaded.file);
    writeFileAtomic(loaded.file, Buffer.from(after, 'utf8'));
    cfg.promptText = config.agents[agent]!.promptText;
    return { file: loaded.file, version: promptHash(cfg.promptText!) };
  }
  const { file } = target;
  let out = text;
  if (existsSync(file)) {
    const before = readFileSync(file, 'utf8');
    // Keep the file's own conventions: a byte-order mark and Windows line ends, if it had them.
    if (before.includes('\r\n')) out = out.replace(/\r?\n/g, '\r\n');
    if (before.startsWith('\uFEFF') && !out.startsWith('\uFEFF')) out = `\uFEFF${out}`;
  } else {
    mkdirSync(path.dirname(file), { recursive: true });
  }
  writeFileAtomic(file, Buffer.from(out, 'utf8'));
  return { file, version: promptHash(out) };
}
