import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { loadConfig, promptHash, readAgentPrompt, type LoadedConfig } from '../../../src/core/config/loader';
import { ConfigError } from '../../../src/core/errors';
import { DEFAULT_PROMPTS } from '../../../src/core/graph/researchLab/prompts';

async function initialised(t: { after: (fn: () => void) => void }): Promise<LoadedConfig> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rl-prompt-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  await initWorkspace(dir);
  return loadConfig(dir);
}

test('an agent prompt is read from its file, relative to .rollout-lab', async (t) => {
  const loaded = await initialised(t);
  const { text, file } = await readAgentPrompt(loaded, 'Geneticist');
  assert.equal(file, path.join(loaded.labDir, 'prompts', 'Geneticist.md'));
  assert.equal(text.trim(), DEFAULT_PROMPTS.Geneticist.trim());
});

test('inline promptText wins and has no file; a custom path is honoured', async (t) => {
  const loaded = await initialised(t);
  loaded.config.agents.Supervisor = { ...loaded.config.agents.Supervisor, prompt: undefined, promptText: 'Pick one.' };
  assert.deepEqual(await readAgentPrompt(loaded, 'Supervisor'), { text: 'Pick one.', file: null });
  writeFileSync(path.join(loaded.labDir, 'mine.md'), '\uFEFFCustom prompt');
  loaded.config.agents.Neurologist = { ...loaded.config.agents.Neurologist, prompt: 'mine.md' };
  assert.equal((await readAgentPrompt(loaded, 'Neurologist')).text, 'Custom prompt');
});

test('without "prompt" the default prompts/<Agent>.md is used', async (t) => {
  const loaded = await initialised(t);
  loaded.config.agents.PeerReviewer = { ...loaded.config.agents.PeerReviewer, prompt: undefined };
  const { file } = await readAgentPrompt(loaded, 'PeerReviewer');
  assert.equal(file, path.join(loaded.labDir, 'prompts', 'PeerReviewer.md'));
});

test('a missing prompt file names the path and the fixes', async (t) => {
  const loaded = await initialised(t);
  const file = path.join(loaded.labDir, 'prompts', 'SafetyOfficer.md');
  unlinkSync(file);
  await assert.rejects(readAgentPrompt(loaded, 'SafetyOfficer'), (err: unknown) => {
    assert.ok(err instanceof ConfigError);
    assert.ok(err.message.includes(file), err.message);
    assert.match(err.message, /run `rollout-lab init` to create the default prompts, or fix agents\.SafetyOfficer\.prompt/);
    return true;
  });
});

test('an undefined agent is named with the defined ones', async (t) => {
  const loaded = await initialised(t);
  await assert.rejects(readAgentPrompt(loaded, 'Janitor'), /agent "Janitor" is not defined .* \(defined: Geneticist, Pharmacologist/);
});

test('promptHash: 12 hex digits, the same for CRLF and LF, different for different text', async (t) => {
  const loaded = await initialised(t);
  const { text } = await readAgentPrompt(loaded, 'Geneticist');
  const h = promptHash(text);
  assert.match(h, /^[0-9a-f]{12}$/);
  assert.equal(promptHash(text.replace(/\n/g, '\r\n')), h);
  assert.notEqual(promptHash(`${text} `), h);
  assert.equal(promptHash('abc'), 'ba7816bf8f01', 'the sha256 of "abc"');
  assert.equal(readFileSync(path.join(loaded.labDir, 'prompts', 'Geneticist.md'), 'utf8'), text);
});
