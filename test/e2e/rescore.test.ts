import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RescoreResult } from '../../src/core/analysis/rescore';
import { TraceStore } from '../../src/core/store/traceStore';
import { cli, json, tempWorkspace, PUBMEDQA, type RunDoc } from './cliHelpers';

type RescoreDoc = RescoreResult & { rescoreId: string | null; dryRun: boolean };
type TracesDoc = { rollouts: Array<{ id: string; status: string; finalReward: number | null }> };

let ws: string;
before(() => {
  ws = tempWorkspace();
});
after(() => rmSync(ws, { recursive: true, force: true }));

/** Every file of the store with its size and modification time: a dry run must leave all of it alone. */
function storeFiles(): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const st = statSync(path);
      if (st.isDirectory()) walk(path);
      else out[path] = `${st.size} ${st.mtimeMs}`;
    }
  };
  walk(join(ws, '.rollout-lab', 'store'));
  return out;
}

function rewardsShown(): Map<string, number | null> {
  const doc = json<TracesDoc>(cli(['traces', '--workspace', ws, '--json']));
  return new Map(doc.rollouts.filter((r) => r.status === 'succeeded').map((r) => [r.id, r.finalReward]));
}

test('rescore: --dry-run writes nothing; rescore puts the new rewards in force and keeps the old ones', async () => {
  assert.equal(cli(['init', '--workspace', ws, '--dataset', PUBMEDQA]).code, 0);
  const run = cli(['run', '--workspace', ws, '--limit', '3', '--samples', '2', '--json']);
  assert.equal(run.code, 0, run.stderr);
  assert.ok(json<RunDoc>(run).succeeded >= 4, 'enough rollouts to rank');
  const original = rewardsShown();

  // Only novelty counts now.
  const cfgFile = join(ws, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
  const weights: Record<string, { weight: number }> = {};
  for (const [name, c] of Object.entries(cfg.reward.criteria as Record<string, { weight: number }>)) {
    c.weight = name === 'novelty' ? 1 : 0;
    weights[name] = { weight: c.weight };
  }
  writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));

  const files = storeFiles();
  const dry = cli(['rescore', '--workspace', ws, '--dry-run', '--json']);
  assert.equal(dry.code, 0, dry.stderr);
  const dryDoc = json<RescoreDoc>(dry);
  assert.equal(dryDoc.rescoreId, null);
  assert.equal(dryDoc.dryRun, true);
  assert.equal(dryDoc.rows.length, original.size);
  assert.ok(dryDoc.rows.some((r) => r.kept === null && Math.abs(r.after! - r.before!) > 1e-9), 'the new weights change some reward');
  const text = cli(['rescore', '--workspace', ws, '--dry-run']);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /dry run: would re-score \d+ of \d+ rollouts with a reward; nothing was written/);
  assert.match(text.stdout, /^mean\s+\d\.\d{3}\s+\d\.\d{3}$/m);
  assert.match(text.stdout, /^median\s+\d\.\d{3}\s+\d\.\d{3}$/m);
  assert.match(text.stdout, /rank correlation/);
  assert.match(text.stdout, /largest changes/);
  assert.deepEqual(storeFiles(), files, 'a dry run leaves every store file as it was');
  assert.deepEqual(rewardsShown(), original);

  const real = cli(['rescore', '--workspace', ws, '--json']);
  assert.equal(real.code, 0, real.stderr);
  const doc = json<RescoreDoc>(real);
  assert.match(doc.rescoreId!, /^rs_[0-9a-f]{12}$/);
  assert.equal(doc.dryRun, false);
  assert.deepEqual(
    doc.rows.map((r) => [r.rolloutId, r.after]),
    dryDoc.rows.map((r) => [r.rolloutId, r.after]),
    'the dry run showed what the re-score did',
  );
  const shown = rewardsShown();
  for (const r of doc.rows) assert.equal(shown.get(r.rolloutId), r.after, `traces shows the new reward of ${r.rolloutId}`);
  assert.notDeepEqual(shown, original);

  // The history still holds the rewards the rollouts ran with, through compaction too.
  assert.equal(cli(['compact', '--workspace', ws]).code, 0);
  assert.deepEqual(rewardsShown(), shown);
  const store = await TraceStore.open(ws, { readOnly: true });
  try {
    const [latest] = store.listRescores();
    assert.equal(latest!.id, doc.rescoreId);
    assert.deepEqual(latest!.criteria, weights);
    for (const r of doc.rows.filter((x) => x.kept === null)) {
      assert.deepEqual(
        store.rewardHistory(r.rolloutId).map((h) => [h.rescoreId, h.reward]),
        [
          [null, original.get(r.rolloutId)],
          [doc.rescoreId, r.after],
        ],
      );
    }
  } finally {
    await store.close();
  }

  const bad = cli(['rescore', '--workspace', ws, '--split', 'all']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--split must be train or val/);
});
