import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';

const REPO = resolve(__dirname, '../..');

test('npm run bench on a machine without Chromium: the webview figures are skipped with the reason, the others still run, exit status 0', () => {
  // The webview bench (every figure it reports) and a cheap one beside it.
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(REPO, 'bench', 'run.ts'), '--json', 'webview', 'bandit'], {
    cwd: REPO,
    encoding: 'utf8',
    env: { ...process.env, CHROMIUM_PATH: join(REPO, 'no-such-chromium') },
    timeout: 300_000,
  });
  assert.equal(r.status, 0, r.stderr.slice(-2000));
  const rows = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { name: string; value: number | null; skipped?: string });
  const webview = rows.filter((x) => x.name.startsWith('webview.'));
  assert.ok(webview.length >= 2, `the webview figures are listed: ${r.stdout}`);
  for (const row of webview) {
    assert.equal(row.value, null);
    assert.match(row.skipped ?? '', /no Chromium at .*no-such-chromium.*CHROMIUM_PATH/);
  }
  const others = rows.filter((x) => x.name.startsWith('bandit.'));
  assert.ok(others.length > 0 && others.every((x) => typeof x.value === 'number' && !x.skipped), 'the other benches still measure');
});
