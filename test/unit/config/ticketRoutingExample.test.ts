import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { examplesDir } from '../../../src/core/lab/exampleLabs';
import { loadConfig } from '../../../src/core/config/loader';
import { generateTickets, queueOf, QUEUE_NAMES, ticketsJsonl } from '../../../examples/ticket-routing/tickets';
import answer from '../../../examples/ticket-routing/sim/teacher';
import routedRight from '../../../examples/ticket-routing/reward';

const DIR = join(examplesDir(), 'ticket-routing');

test('the ticket data file is what the seeded generator writes, and every queue follows from the ticket text', () => {
  assert.equal(readFileSync(join(DIR, 'data/tickets.jsonl'), 'utf8'), ticketsJsonl());
  const rows = generateTickets();
  assert.equal(rows.length, 300);
  for (const r of rows) assert.equal(queueOf(r.ticket), r.queue, r.ticket);
  assert.deepEqual(new Set(rows.map((r) => r.queue)), new Set(QUEUE_NAMES));
});

test('the reward is 1 for the right queue only, so a uniform guesser scores about 0.25', () => {
  const rows = generateTickets();
  let sum = 0;
  rows.forEach((r, i) => (sum += routedRight({ task: { id: r.id, expected: r.queue }, outcome: { finalOutput: QUEUE_NAMES[i % 4]! } }).reward));
  assert.ok(Math.abs(sum / rows.length - 0.25) < 0.08, `${sum / rows.length}`);
  assert.equal(routedRight({ task: { id: 't', expected: 'bill' }, outcome: { finalOutput: null } }).reward, 0);
  assert.throws(() => routedRight({ task: { id: 't9' }, outcome: { finalOutput: 'bill' } }), /map "expected" to "queue"/);
});

test('the simulated teacher routes most tickets right and some wrong, the same way every time', () => {
  const rows = generateTickets();
  const said = rows.map((r) => answer({ agent: 'Router', messages: [{ role: 'system', content: 'x' }, { role: 'user', content: r.ticket }] }));
  const right = said.filter((q, i) => q === rows[i]!.queue).length / rows.length;
  assert.ok(right > 0.75 && right < 0.95, `teacher accuracy ${right}`);
  assert.ok(said.every((q) => QUEUE_NAMES.includes(q!)));
  assert.equal(answer({ agent: 'Responder', messages: [{ role: 'user', content: 'Ticket 1: refund\nQueue: bill' }] }), 'Thanks, the bill team has your ticket.');
});

test('init --example ticket-routing writes a lab that loads; an unknown example is an error that lists them', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rl-example-'));
  try {
    const r = await initWorkspace(ws, { example: 'ticket-routing' });
    for (const f of ['graph.ts', 'reward.ts', 'sim/teacher.ts', 'data/tickets.jsonl', '.rollout-lab/lab.json', '.rollout-lab/prompts/Router.md']) assert.ok(r.created.includes(f), f);
    const loaded = await loadConfig(ws);
    const { config } = loaded;
    assert.equal(config.training.trainer.backend, 'transformers');
    assert.equal(config.training.trainer.modelConfig?.model_type, 'qwen2', 'a model built from a config: nothing to download');
    assert.equal(config.training.targets.local, undefined, 'the local target finds a python with torch itself');
    assert.deepEqual(config.training.phases.map((p) => `${p.name}:${p.kind}`), ['gather:gather', 'sft:sft', 'grpo:grpo']);
    assert.equal(config.agents.Router?.model, 'student');
    assert.notEqual(config.agents.Responder?.model, 'student');
    assert.ok(config.models.student?.logprobs && config.models.student.tokenIds);
    assert.equal(readFileSync(join(ws, '.rollout-lab/prompts/Router.md'), 'utf8'), 'Route: bill, ship, tech or user.\n');
    const again = await initWorkspace(ws, { example: 'ticket-routing' });
    assert.equal(again.created.length, 0);
    assert.ok(existsSync(join(ws, 'README.md')));
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
  await assert.rejects(initWorkspace(join(tmpdir(), 'never-made'), { example: 'chess' }), /no example "chess" — the examples are: ticket-routing/);
});
