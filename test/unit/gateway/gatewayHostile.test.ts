import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { gatewaySetup, type GatewaySetup } from './gatewayHarness';

let setup: GatewaySetup | null = null;
afterEach(async () => {
  await setup?.close();
  setup = null;
});

describe('recording gateway: hostile paths and many calls at once', () => {
  it('malformed %-encoding in the rollout id or agent name is a 400 that says which part of the path is wrong', async () => {
    setup = await gatewaySetup({ server: 'openai', replies: [{ content: 'x' }] });
    for (const path of ['/rollouts/%E0%A4%A/v1/chat/completions', `/rollouts/${setup.rollout.id}/agents/%ZZ/v1/chat/completions`]) {
      const res: Response = await fetch(`${setup!.gateway.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }) });
      assert.equal(res.status, 400, path);
      const body = (await res.json()) as { error: { message: string; code: string } };
      assert.equal(body.error.code, 'invalid_path');
      assert.match(body.error.message, /not valid %-encoding/);
    }
    assert.equal(setup.stub.requests.length, 0, 'nothing forwarded');
  });

  it('50 concurrent calls on one rollout print no MaxListenersExceededWarning', async () => {
    setup = await gatewaySetup({ server: 'openai', delayMs: 200, replies: Array.from({ length: 50 }, (_, i) => ({ content: `answer ${i}` })) });
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      const client = setup.client({ agent: 'Geneticist' });
      const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: `q ${i}` }] })));
      assert.equal(answers.length, 50);
      // Warnings are emitted on the next tick.
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
    }
    assert.deepEqual(warnings.map((w) => `${w.name}: ${w.message}`), []);
    assert.equal(setup.llmSpans().length, 50);
  });
});
