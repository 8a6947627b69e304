import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { initWorkspace } from '../../../src/core/lab/init';
import { Lab } from '../../../src/core/lab/lab';
import { runBatch } from '../../../src/core/lab/batch';
import { receiverFixture } from './helpers';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

async function workspaceExportingTo(endpoint: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-otlp-live-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  const file = join(dir, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  cfg.otlp = { export: { endpoint, protocol: 'http/json' } };
  writeFileSync(file, JSON.stringify(cfg, null, 2));
  return dir;
}

test('otlp.export in lab.json sends each rollout to the collector as it ends, with its tree and reward', async () => {
  const fx = await receiverFixture();
  const dir = await workspaceExportingTo(fx.receiver.url);
  const lab = await Lab.open({ workspace: dir, env: {} });
  try {
    const r = await runBatch(lab, { command: 'eval', limit: 2, samples: 1, concurrency: 2 });
    assert.equal(r.warnings.filter((w) => w.kind === 'otlp_export_failed').length, 0);
    const sent = lab.store.listRollouts({ runId: r.runId }).rollouts;
    assert.equal(sent.length, 2);
    for (const original of sent) {
      const received = fx.store.getRollout(original.id);
      assert.ok(received, `rollout ${original.id} reached the collector`);
      assert.deepEqual([received.runId, received.taskId, received.status, received.finalReward], [original.runId, original.taskId, original.status, original.finalReward]);
      assert.equal(fx.store.getSpans(original.id).length, lab.store.getSpans(original.id).length);
    }
  } finally {
    await lab.close();
    await fx.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a collector that cannot be reached costs one warning, never the run', async () => {
  const dir = await workspaceExportingTo('http://127.0.0.1:1');
  const lab = await Lab.open({ workspace: dir, env: {} });
  try {
    const warnings: string[] = [];
    const r = await runBatch(lab, { command: 'eval', limit: 2, samples: 1, concurrency: 2 }, { onWarning: (w) => warnings.push(w.kind) });
    assert.equal(r.metrics.rollouts, 2);
    assert.equal(r.allFailedError, null);
    const w = r.warnings.filter((x) => x.kind === 'otlp_export_failed');
    assert.equal(w.length, 1);
    assert.equal(w[0]!.rollouts, 2);
    assert.match(w[0]!.message, /cannot reach the OTLP collector at http:\/\/127.0.0.1:1\/v1\/traces.*rollout-lab traces export/);
    assert.deepEqual(warnings, ['otlp_export_failed']);
  } finally {
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
