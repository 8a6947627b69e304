import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO, type CliResult } from './cliHelpers';

/**
 * An installation with nothing beside it: the CLI bundle, its wasm and the
 * bundled sample copied under `root/install`, node_modules linked (the
 * packages, not data), and a working folder `root/work`. The demo looks for
 * the full set at `../shared` from the working folder and from the bundle's
 * folder's parent: both are `root/shared`, which does not exist.
 */
function bareInstall(t: { after: (fn: () => void) => void }): { root: string; cli: string; work: string } {
  const root = mkdtempSync(join(tmpdir(), 'rl-first-run-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const install = join(root, 'install');
  mkdirSync(join(install, 'dist'), { recursive: true });
  for (const f of ['cli.js', 'sql-wasm.wasm']) copyFileSync(join(REPO, 'dist', f), join(install, 'dist', f));
  cpSync(join(REPO, 'data'), join(install, 'data'), { recursive: true });
  symlinkSync(join(REPO, 'node_modules'), join(install, 'node_modules'), 'dir');
  const work = join(root, 'work');
  mkdirSync(work);
  return { root, cli: join(install, 'dist', 'cli.js'), work };
}

function demo(cli: string, cwd: string, args: string[] = []): CliResult {
  const r = spawnSync(process.execPath, [cli, 'demo', ...args], { cwd, encoding: 'utf8', env: { ...process.env, ROLLOUT_LAB_BASE_URL: '' }, maxBuffer: 64 * 1024 * 1024 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

test('the demo runs with nothing beside the installation: the bundled sample, 10 training and 10 validation rollouts, the table', (t) => {
  const { root, cli, work } = bareInstall(t);
  assert.equal(existsSync(join(root, 'shared')), false);
  const r = demo(cli, work);
  assert.equal(r.code, 0, `demo exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  assert.match(r.stderr, /using the bundled 200-item PubMedQA sample \(data\/pubmedqa-sample\/pubmedqa-sample\.json, copied to \.rollout-lab\/data\/pubmedqa-sample\.json\); pass --dataset FILE or put \.\.\/shared\/data\/pubmedqa beside the clone for the full set/);
  assert.match(r.stderr, /run: 10 tasks × 1 sample from .*pubmedqa-sample\.json \(train split\)/);
  assert.match(r.stderr, /eval: 10 tasks × 1 sample from .*pubmedqa-sample\.json \(val split\)/);
  assert.equal(r.stdout.match(/: 10 succeeded, 0 failed, of 10 planned/g)?.length, 2, r.stdout);
  assert.match(r.stdout, /Execution Success Rate\s+100\.0 %\s+10\/10 rollouts/);
  assert.match(r.stdout, /Average Final Reward\s+0\.\d+\s+over 10 rollouts/);
  assert.match(r.stdout, /Decision Alignment\s+\d/);
  // The workspace holds its own copy, as the shipped file has it.
  const copy = join(work, 'demo-workspace', '.rollout-lab', 'data', 'pubmedqa-sample.json');
  assert.equal(readFileSync(copy, 'utf8'), readFileSync(join(REPO, 'data', 'pubmedqa-sample', 'pubmedqa-sample.json'), 'utf8'));
});

test('with ../shared/data/pubmedqa beside the working folder the demo uses the full set and says so', (t) => {
  const { root, cli, work } = bareInstall(t);
  // A stand-in for the full set: 30 items of the sample under the name and place of the full one.
  const sample = JSON.parse(readFileSync(join(REPO, 'data', 'pubmedqa-sample', 'pubmedqa-sample.json'), 'utf8')) as Record<string, unknown>;
  const shared = join(root, 'shared', 'data', 'pubmedqa');
  mkdirSync(shared, { recursive: true });
  writeFileSync(join(shared, 'ori_pqal.json'), JSON.stringify(Object.fromEntries(Object.entries(sample).slice(0, 30))));
  const r = demo(cli, work, ['--limit', '2']);
  assert.equal(r.code, 0, `demo exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  assert.ok(r.stderr.includes(`using the full PubMedQA set beside the clone: ${join(shared, 'ori_pqal.json')}\n`), r.stderr);
  assert.doesNotMatch(r.stderr, /bundled/);
  assert.match(r.stderr, /run: 2 tasks × 1 sample from .*shared\/data\/pubmedqa\/ori_pqal\.json \(train split\)/);
  assert.equal(existsSync(join(work, 'demo-workspace', '.rollout-lab', 'data', 'pubmedqa-sample.json')), false, 'no sample copied when the full set is used');
});

test('a demo folder left without a dataset by an older version is named, with the fix', (t) => {
  const { cli, work } = bareInstall(t);
  const lab = join(work, 'demo-workspace', '.rollout-lab');
  mkdirSync(lab, { recursive: true });
  const init = spawnSync(process.execPath, [cli, 'init', '--workspace', join(work, 'demo-workspace')], { encoding: 'utf8' });
  assert.equal(init.status, 0, init.stderr);
  const config = JSON.parse(readFileSync(join(lab, 'lab.json'), 'utf8')) as { datasets: Record<string, unknown> };
  config.datasets = {};
  writeFileSync(join(lab, 'lab.json'), JSON.stringify(config, null, 2));
  const r = demo(cli, work);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /demo-workspace has no dataset \(set up by an older version with nothing beside the clone\) — remove that folder and run the demo again: it sets it up on the bundled PubMedQA sample/);
});
