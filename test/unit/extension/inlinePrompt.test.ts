import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyEdits } from 'jsonc-parser';
import { parseLabConfigText, promptHash } from '../../../src/core/config/loader';
import { findInlinePrompts, setInlinePromptEdits } from '../../../src/extension/promptHistory/inlinePrompt';

const LAB = `{
  // models
  "models": { "strong": { "model": "x" } },
  "agents": {
    "Geneticist": { "model": "strong", "prompt": "prompts/Geneticist.md" },
    "Supervisor": {
      "model": "strong",
      "promptText": "Decide GO or NO-GO.\\nBe \\"brief\\" \\u00e9.",
      "tools": [],
    },
    "Odd": { "model": "strong", "promptText": 42 },
    "PI": { "model": "strong", "promptText": "Plan." }
  }
}
`;

describe('inlinePrompt', () => {
  it('finds each string promptText under agents, with its parsed value and offsets, in file order', () => {
    const found = findInlinePrompts(LAB);
    assert.deepEqual(found.map((p) => p.agent), ['Supervisor', 'PI']);
    const sup = found[0]!;
    assert.equal(sup.text, 'Decide GO or NO-GO.\nBe "brief" é.');
    assert.equal(LAB.slice(sup.keyOffset, sup.keyOffset + '"promptText"'.length), '"promptText"');
    assert.equal(JSON.parse(LAB.slice(sup.valueOffset, sup.valueOffset + sup.valueLength)), sup.text);
  });

  it('hashes the same text the runner reads from the config', () => {
    const config = parseLabConfigText(LAB.replace('"promptText": 42', '"promptText": "x"'), 'lab.json');
    for (const p of findInlinePrompts(LAB)) assert.equal(promptHash(p.text), promptHash(config.agents[p.agent]!.promptText!));
  });

  it('finds nothing in text that is not a lab config, and what it can in a half-typed one', () => {
    assert.deepEqual(findInlinePrompts(''), []);
    assert.deepEqual(findInlinePrompts('[1, 2]'), []);
    assert.deepEqual(findInlinePrompts('{ "agents": [] }'), []);
    assert.deepEqual(findInlinePrompts('{ "agents": { "A": { "promptText": "hi" }, "B": { "promptTe').map((p) => p.agent), ['A']);
  });

  it('edits one agent\'s promptText in place, keeping comments and the other agents', () => {
    const restored = 'Line one.\nLine "two".';
    const next = applyEdits(LAB, setInlinePromptEdits(LAB, 'Supervisor', restored));
    assert.match(next, /\/\/ models/);
    const found = findInlinePrompts(next);
    assert.equal(found.find((p) => p.agent === 'Supervisor')!.text, restored);
    assert.equal(found.find((p) => p.agent === 'PI')!.text, 'Plan.');
    const old = findInlinePrompts(LAB)[0]!;
    assert.equal(next, LAB.slice(0, old.valueOffset) + JSON.stringify(restored) + LAB.slice(old.valueOffset + old.valueLength));
  });

  it('refuses to add a promptText to an agent that has a prompt file', () => {
    assert.throws(() => setInlinePromptEdits(LAB, 'Geneticist', 'x'), /agent "Geneticist" has no inline "promptText"/);
  });
});
