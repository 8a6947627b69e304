import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promptHash } from '../../../src/core/config/loader';
import { missingPlaceholders, promptPlaceholders, screenCandidates } from '../../../src/core/train/apo/placeholders';
import { criticMessages, editorMessages } from '../../../src/core/train/apo/apoMessages';
import { trimMiddle } from '../../../src/core/train/apo/lowRewardExamples';
import { promptOptimizerAnswer } from '../../../src/core/sim/promptOptimizerAnswer';
import { promptBlock, promptsInBlocks } from '../../../src/core/train/apo/apoWire';
import { toOpenAIMessages } from '../../../src/core/llm/messageConversion';
import type { SimChatRequest } from '../../../src/core/sim/simRequest';

test('promptPlaceholders finds {name} and {{name}} once each, and ignores JSON braces', () => {
  const p = 'Hi {user}, see {{ lab_name }} and {{lab_name}} again; answer {"key": 1} for {user}. {not a slot}';
  assert.deepEqual(promptPlaceholders(p), ['{user}', '{{lab_name}}']);
  assert.deepEqual(missingPlaceholders(p, 'Hi {user}.'), ['{{lab_name}}']);
  assert.deepEqual(missingPlaceholders(p, 'For {user} in {{lab_name}}'), []);
  assert.deepEqual(promptPlaceholders('Return {"a": [1]} only.'), []);
});

test('screenCandidates: trims, ends as the original does, records dropped placeholders, drops duplicates', () => {
  const original = 'Pick one for {topic}.\n';
  const seen = new Set([promptHash(original)]);
  const out = screenCandidates(original, ['  Pick one for {topic}.  ', 'Pick the best for {topic}.', 'Pick the best for {topic}.\n', 'Pick the best one.', '', 42], seen);
  assert.deepEqual(out, [
    { text: 'Pick the best for {topic}.\n', version: promptHash('Pick the best for {topic}.\n') },
    { text: 'Pick the best one.\n', version: promptHash('Pick the best one.\n'), error: 'drops the placeholder {topic} of the original' },
    { text: '', version: '', error: 'the editor returned an empty prompt' },
    { text: '', version: '', error: 'the editor returned an empty prompt' },
  ]);
  assert.equal(screenCandidates(original, ['Pick the best for {topic}.'], seen).length, 0, 'seen across calls');
});

test('trimMiddle keeps the start and the end', () => {
  assert.equal(trimMiddle('short', 10), 'short');
  const t = trimMiddle('a'.repeat(50) + 'b'.repeat(50), 20);
  assert.ok(t.startsWith('a'.repeat(12)) && t.endsWith('b'.repeat(8)) && t.includes('80 characters left out'));
});

function request(messages: ReturnType<typeof criticMessages>): SimChatRequest {
  return { model: 'm', messages: toOpenAIMessages(messages) as SimChatRequest['messages'] };
}

test('the simulator answers critic and editor calls and nothing else', () => {
  const prompt = 'You supervise the {{lab_name}} lab.\nReply with JSON.';
  assert.deepEqual(promptsInBlocks(`x\n${promptBlock(prompt)}\ny`), [prompt]);
  const critic = promptOptimizerAnswer(
    request(criticMessages('Supervisor', prompt, 0.4, [{ rolloutId: 'r', taskId: 't1', reward: 0.3, criteria: { novelty: 0.2, clarity: 0.6 }, rationale: 'Too vague.', custom: null, saw: 'user: q', answered: 'assistant: a' }])),
    { seed: 1 },
  );
  assert.match(critic!.content!, /worst on novelty \(mean 0\.20\) and clarity/);
  assert.match(critic!.content!, /Too vague\./);
  const editor = promptOptimizerAnswer(request(editorMessages('Supervisor', prompt, 'Be specific.', 3, ['{{lab_name}}'], { round: 1, rounds: 2 })), { seed: 1 });
  const { prompts } = JSON.parse(editor!.content!) as { prompts: string[] };
  assert.equal(prompts.length, 3);
  assert.equal(new Set(prompts).size, 3);
  for (const p of prompts) assert.ok(p.startsWith(prompt) && p.length > prompt.length);
  const careless = promptOptimizerAnswer(request(editorMessages('Supervisor', prompt, 'Be specific.', 2, ['{{lab_name}}'], { round: 1, rounds: 2 })), { seed: 1, dropPlaceholder: true });
  const [first, second] = (JSON.parse(careless!.content!) as { prompts: string[] }).prompts;
  assert.ok(!first!.includes('{{lab_name}}') && second!.includes('{{lab_name}}'));
  assert.equal(promptOptimizerAnswer({ model: 'm', messages: [{ role: 'system', content: '[agent: Supervisor]\nPick one.' }, { role: 'user', content: 'hi' }] }, { seed: 1 }), null);
});
