import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'mocha';
import * as vscode from 'vscode';
import { api, waitFor, workspaceDir } from './helpers';

interface ReceiverApi {
  otlpReceiver: { readonly url: string | null; apply(): Promise<void> };
  service: { store(folder: string): Promise<{ refresh(): Promise<boolean>; listRollouts(q: { runId: string }): { rollouts: Array<{ id: string; taskId: string; status: string }> } }> };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** One finished trace in OTLP/JSON, as an instrumented agent would send it. */
function otlpTrace(traceId: string, taskId: string): unknown {
  const now = BigInt(Date.now()) * 1_000_000n;
  const str = (key: string, value: string): unknown => ({ key, value: { stringValue: value } });
  return {
    resourceSpans: [
      {
        resource: { attributes: [str('service.name', 'outside-agent'), str('rollout_lab.task.id', taskId)] },
        scopeSpans: [
          {
            scope: { name: 'test' },
            spans: [
              { traceId, spanId: randomBytes(8).toString('hex'), name: 'invoke_agent Helper', kind: 1, startTimeUnixNano: String(now), endTimeUnixNano: String(now + 5_000_000n), attributes: [str('gen_ai.operation.name', 'invoke_agent'), str('gen_ai.agent.name', 'Helper')], status: { code: 1 } },
            ],
          },
        ],
      },
    ],
  };
}

describe('OTLP receiver setting', () => {
  it('starts a receiver with the lab on the configured port; traces sent to it become rollouts; 0 stops it', async () => {
    const ext = (await api()) as unknown as ReceiverApi;
    const config = vscode.workspace.getConfiguration('rolloutLab');
    const port = await freePort();
    await config.update('otlpReceiverPort', port, vscode.ConfigurationTarget.Workspace);
    try {
      // The receiver writes into the active lab's store: it starts once the lab is known.
      await ext.service.store(workspaceDir());
      await ext.otlpReceiver.apply();
      const url = await waitFor('the receiver to listen', () => ext.otlpReceiver.url);
      assert.equal(url, `http://127.0.0.1:${port}`);
      const traceId = randomBytes(16).toString('hex');
      const res = await fetch(`${url}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(otlpTrace(traceId, 'outside-1')) });
      assert.equal(res.status, 200, await res.text());
      const found = await waitFor('the trace as a rollout of the imported run', async () => {
        const store = await ext.service.store(workspaceDir());
        await store.refresh();
        return store.listRollouts({ runId: 'imported' }).rollouts.find((r) => r.id === traceId);
      });
      assert.equal(found.taskId, 'outside-1');
      const bad = await fetch(`${url}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"resourceSpans": [' });
      assert.equal(bad.status, 400, 'a malformed payload gets an OTLP error answer');
    } finally {
      await config.update('otlpReceiverPort', undefined, vscode.ConfigurationTarget.Workspace);
    }
    await ext.otlpReceiver.apply();
    assert.equal(ext.otlpReceiver.url, null);
    await assert.rejects(fetch(`http://127.0.0.1:${port}/v1/traces`, { method: 'POST', body: '{}' }), 'nothing listens after the setting goes back to 0');
  });
});
