import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli, json, tempWorkspace, PUBMEDQA } from './cliHelpers';

interface ReportDoc {
  phase: string;
  ok: boolean;
  checks: Array<{ id: string; severity: string; title: string; count: number; rollouts: string[]; fix: string }>;
  counts: Record<string, number>;
}

// The workspace's rollouts come from the simulated endpoint: the checks of them pass --include-simulated.
let ws: string;
let rolloutIds: Set<string>;

before(() => {
  ws = tempWorkspace();
  assert.equal(cli(['init', '--workspace', ws, '--dataset', PUBMEDQA]).code, 0);
  // init's seniors ask for logprobs; these checks are about rollouts gathered without them.
  const file = join(ws, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(file, 'utf8'));
  cfg.models.senior.logprobs = false;
  writeFileSync(file, JSON.stringify(cfg, null, 2));
  const run = cli(['run', '--workspace', ws, '--limit', '3', '--samples', '2', '--json']);
  assert.equal(run.code, 0, run.stderr);
  rolloutIds = new Set(json<{ rollouts: Array<{ id: string }> }>(cli(['traces', '--workspace', ws, '--json'])).rollouts.map((r) => r.id));
  assert.equal(rolloutIds.size, 6);
});

after(() => rmSync(ws, { recursive: true, force: true }));

test('preflight exits 0 when no check is an error and prints a readable report', () => {
  const r = cli(['preflight', '--workspace', ws, '--phase', 'sft', '--min-reward', '0', '--include-simulated']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^pre-flight for sft: 0 errors, \d+ warnings? — ready to run/);
  assert.match(r.stdout, /✓ no failed or cancelled rollouts among 6/);
  assert.match(r.stdout, /6 of 6 rollouts reach the minimum reward 0/);
  assert.match(r.stdout, /counts: rollouts 6, /);
});

test('preflight exits 1 when a check fails, says so, and lists rollouts and the fix', () => {
  const r = cli(['preflight', '--workspace', ws, '--phase', 'grpo', '--include-simulated']);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /the phase would fail: fix the errors first/);
  assert.match(r.stdout, /✗ 3 of 3 groups have fewer rollouts than the group size 8/);
  assert.match(r.stdout, /✗ .*no token logprobs/);
  assert.match(r.stdout, /fix: Set models\.senior\.logprobs: true/);
  const ids = [...r.stdout.matchAll(/rollouts: ([0-9a-f, ]+)/g)].flatMap((m) => m[1]!.trim().split(', '));
  assert.ok(ids.length > 0);
  for (const id of ids) assert.ok(rolloutIds.has(id), `${id} is a stored rollout`);
});

test('--json prints the report; a smaller group size in lab.json completes the groups', () => {
  const r = cli(['preflight', '--workspace', ws, '--phase', 'grpo', '--json', '--include-simulated']);
  assert.equal(r.code, 1);
  const doc = json<ReportDoc>(r);
  assert.equal(doc.phase, 'grpo');
  assert.equal(doc.ok, false);
  const small = doc.checks.find((c) => c.id === 'small-groups')!;
  assert.equal(small.severity, 'error');
  assert.equal(small.count, 3);
  assert.deepEqual(new Set(small.rollouts), rolloutIds);
  assert.equal(doc.counts.groups, 3);

  const file = join(ws, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(file, 'utf8'));
  cfg.training = { ...(cfg.training ?? {}), groupSize: 2 };
  writeFileSync(file, JSON.stringify(cfg, null, 2));
  const again = json<ReportDoc>(cli(['preflight', '--workspace', ws, '--phase', 'grpo', '--json', '--agents', 'HypothesisRefiner', '--include-simulated']));
  assert.equal(again.checks.find((c) => c.id === 'small-groups')!.severity, 'info');
  assert.equal(again.counts.completeGroups, 3);
  assert.equal(again.checks.find((c) => c.id === 'missing-logprobs')!.severity, 'error', 'still no logprobs');
});

test('preflight leaves simulated rollouts out by default: with nothing else to train on it is an error, never "ready to run"', () => {
  const r = cli(['preflight', '--workspace', ws, '--phase', 'sft', '--min-reward', '0']);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /^pre-flight for sft: \d+ errors?, \d+ warnings? — the phase would fail: fix the errors first/);
  assert.doesNotMatch(r.stdout, /ready to run/);
  assert.match(r.stdout, /✗ all 6 rollouts \(train split\) are simulated, so nothing is left to train on: 6 simulated rollouts left out \(pass --include-simulated to use them\)/);
  assert.match(r.stdout, /counts: rollouts 0, simulated 6, /);
});

test('bad usage exits 2 with a one-line message', () => {
  for (const [args, re] of [
    [['--phase', 'ppo'], /--phase must be one of sft, grpo, bandit, apo, got "ppo"/],
    [[], /--phase is required/],
    [['--phase', 'sft', '--min-reward', '2'], /--min-reward must be a number from 0 to 1/],
    [['--phase', 'sft', '--split', 'every'], /--split must be train, val or all/],
    [['--phase', 'sft', '--bogus'], /preflight: .*bogus/],
  ] as const) {
    const r = cli(['preflight', '--workspace', ws, ...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re);
    assert.equal(r.stderr.trim().split('\n').length, 1);
  }
});
