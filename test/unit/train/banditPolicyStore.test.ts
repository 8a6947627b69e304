import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { loadConfig } from '../../../src/core/config/loader';
import type { LabConfig } from '../../../src/core/config/schema';
import { ConfigError, UsageError } from '../../../src/core/errors';
import type { BanditRecord } from '../../../src/core/train/export/adapters/banditAdapter';
import { banditDir, loadBanditPolicy, loadPolicy } from '../../../src/core/policy/policyFiles';
import { activateBanditPolicy, listBanditPolicies, topFeatures, trainBanditPolicyFrom } from '../../../src/core/train/bandit/policyStore';
import { loadSupervisorPolicy } from '../../../src/core/policy/supervisorPolicy';
import { syntheticRounds } from '../../../src/core/train/bandit/synthetic';
import { seededRandom } from '../../../src/core/data/seededRandom';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

/** Records as the adapter would give them: random choices among synthetic candidates, Bernoulli rewards. */
function records(n: number, seed: number): BanditRecord[] {
  const next = syntheticRounds(seed);
  const rng = seededRandom(seed + 1);
  return Array.from({ length: n }, (_, i) => {
    const round = next();
    const chosen = Math.floor(rng() * round.candidates.length);
    return { rolloutId: `r${i}`, taskId: `t${i}`, runId: 'run', candidates: round.candidates, chosen, reward: rng() < round.probabilities[chosen]! ? 1 : 0, reward_source: 'scored', penalty: null, policyVersion: null };
  });
}

async function workspace(): Promise<{ dir: string; labDir: string; config: LabConfig }> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-bandit-store-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  const loaded = await loadConfig(dir);
  return { dir, labDir: loaded.labDir, config: { ...loaded.config, bandit: { ...loaded.config.bandit, features: 64 } } };
}

test('train → versioned files, active pointer, list; activate and roll back; nothing is deleted', async () => {
  const { dir, labDir, config } = await workspace();
  try {
    assert.deepEqual(listBanditPolicies(labDir, config), { active: null, versions: [] });
    assert.equal(loadBanditPolicy(labDir, config), null);
    await assert.rejects(trainBanditPolicyFrom([], config, labDir), (e: unknown) => e instanceof UsageError && /run rollouts first/.test((e as Error).message));

    const recs = records(300, 4);
    const v1 = await trainBanditPolicyFrom(recs, config, labDir);
    assert.match(v1.version, /^bandit-0001-[0-9a-f]{8}$/);
    assert.equal(v1.algorithm, 'linucb');
    assert.equal(v1.records, 300);
    assert.ok(Math.abs(v1.meanReward! - recs.reduce((s, r) => s + r.reward, 0) / 300) < 1e-12);
    assert.equal(v1.file, join(labDir, 'training', 'bandit', `${v1.version}.json`));
    assert.ok(existsSync(v1.file));

    const v2 = await trainBanditPolicyFrom(recs.slice(0, 200), { ...config, bandit: { ...config.bandit, algorithm: 'logistic' } }, labDir);
    assert.match(v2.version, /^bandit-0002-[0-9a-f]{8}$/);
    assert.equal(v2.algorithm, 'logistic');
    let list = listBanditPolicies(labDir, config);
    assert.equal(list.active, v2.version, 'training activates the new version');
    assert.deepEqual(list.versions.map((v) => v.version), [v1.version, v2.version]);
    assert.deepEqual(list.versions[0], v1);

    // The saved policy scores exactly as the trained one did; its heaviest features have names.
    const loaded = loadPolicy(banditDir(labDir, config), v1.version);
    assert.equal(loaded.learner.updates, 300);
    const top = topFeatures(loaded, 5);
    assert.equal(top.length, 5);
    assert.ok(top.some((f) => /kinase|inhibitor|dosing/.test(f.feature)), `the best arm's words weigh most: ${JSON.stringify(top)}`);

    activateBanditPolicy(labDir, config, v1.version);
    assert.equal(listBanditPolicies(labDir, config).active, v1.version);
    activateBanditPolicy(labDir, config, null);
    assert.equal(listBanditPolicies(labDir, config).active, v2.version, 'null rolls back to the version active before');
    activateBanditPolicy(labDir, config, null);
    assert.equal(listBanditPolicies(labDir, config).active, v1.version);
    activateBanditPolicy(labDir, config, null);
    assert.equal(listBanditPolicies(labDir, config).active, null, 'with no earlier version, null turns the policy off');
    activateBanditPolicy(labDir, config, null);
    assert.equal(listBanditPolicies(labDir, config).active, null);
    assert.throws(() => activateBanditPolicy(labDir, config, 'bandit-0009-00000000'), /does not exist/);
    list = listBanditPolicies(labDir, config);
    assert.equal(list.versions.length, 2, 'no policy file was deleted');

    // Modes: off needs nothing; advise/decide without an active policy is a clear ConfigError.
    assert.equal(loadSupervisorPolicy(labDir, config), null);
    assert.throws(
      () => loadSupervisorPolicy(labDir, { ...config, bandit: { ...config.bandit, mode: 'decide' } }),
      (e: unknown) => e instanceof ConfigError && /train one with rollout-lab bandit train/.test((e as Error).message),
    );
    const pinned = loadSupervisorPolicy(labDir, { ...config, bandit: { ...config.bandit, mode: 'advise', policy: v1.version } });
    assert.equal(pinned?.version, v1.version, 'bandit.policy may name a version');
    assert.equal(pinned?.mode, 'advise');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a corrupt policy file or active.json is a ConfigError naming the file; the file is left as it was', async () => {
  const { dir, labDir, config } = await workspace();
  try {
    const v1 = await trainBanditPolicyFrom(records(50, 9), config, labDir);
    const bandit = banditDir(labDir, config);
    const decide = { ...config, bandit: { ...config.bandit, mode: 'decide' as const } };
    assert.ok(loadSupervisorPolicy(labDir, decide));

    const good = readFileSync(v1.file, 'utf8');
    // Listing reads only the header, so a damaged learner shows when the policy is loaded.
    for (const [bad, why, listed] of [
      [good.slice(0, 200), /not JSON/, true],
      [good.replace('"algorithm":"linucb","trainedAt"', '"algorithm":"bogus","trainedAt"'), /algorithm/, true],
      [good.replace(/"ainv":"[^"]{12}/, '"ainv":"'), /learner\.ainv has/, false],
    ] as const) {
      writeFileSync(v1.file, bad);
      assert.throws(
        () => loadSupervisorPolicy(labDir, decide),
        (e: unknown) => e instanceof ConfigError && (e as Error).message.includes(v1.file) && why.test((e as Error).message),
      );
      if (listed) assert.throws(() => listBanditPolicies(labDir, config), (e: unknown) => (e as Error).message.includes(v1.file));
      assert.equal(readFileSync(v1.file, 'utf8'), bad, 'the damaged file is kept for the user to inspect');
    }
    writeFileSync(v1.file, good);
    writeFileSync(join(bandit, 'active.json'), '{"active": 3}');
    assert.throws(() => loadSupervisorPolicy(labDir, decide), (e: unknown) => e instanceof ConfigError && (e as Error).message.includes(join(bandit, 'active.json')));
    assert.ok(!readdirSync(bandit).some((f) => f.includes('.tmp')), 'no temp files left behind by atomic writes');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
