import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { COMMAND_NAMES, COMMAND_USAGE } from '../../src/cli/usage';
import { cli, json, tempWorkspace, PUBMEDQA, type RunDoc } from './cliHelpers';

const GLOBAL_TITLE = 'Rollout Lab: run, trace and score multi-agent LangGraph.js systems.';

/** The lines of a help text's "Usage:" section. */
function usageLines(text: string): string[] {
  const lines = text.split('\n');
  const from = lines.indexOf('Usage:') + 1;
  const to = lines.indexOf('', from);
  return lines.slice(from, to === -1 ? undefined : to);
}

/** The command followed by every option its help lists, each with a value where it takes one. */
function everyOption(command: keyof typeof COMMAND_USAGE): string[] {
  const args: string[] = [command];
  for (const [flag] of COMMAND_USAGE[command].options) {
    const [name, value] = flag.split(' ');
    args.push(name!);
    if (value) args.push(value === 'KEY=VALUE' ? 'lr=1' : 'x');
  }
  return args;
}

test('`COMMAND -h` (or --help) prints that command\'s own usage with a line per option, and the command accepts each option listed', () => {
  for (const command of COMMAND_NAMES) {
    const r = cli([command, '-h']);
    assert.equal(r.code, 0, `${command}: ${r.stderr}`);
    assert.ok(r.stdout.startsWith(`rollout-lab ${command}: `), `${command} -h starts with the command:\n${r.stdout}`);
    assert.ok(!r.stdout.includes(GLOBAL_TITLE), `${command} -h is not the global usage`);
    const forms = usageLines(r.stdout);
    assert.ok(forms.length > 0, `${command}: a Usage section`);
    for (const line of forms) assert.match(line, new RegExp(`^  (rollout-lab ${command} |\\s+\\[)`), `${command}: only its own forms, got "${line}"`);
    for (const [flag] of COMMAND_USAGE[command].options) {
      assert.ok(r.stdout.split('\n').some((l) => l.startsWith(`  ${flag}  `)), `${command} -h has a line for ${flag}`);
    }
    assert.match(r.stdout, /^ {2}-h, --help {2}/m);
    // The parser checks every option before it looks at --help: an option the help lists but the command lacks fails here.
    const all = cli([...everyOption(command), '--help']);
    assert.equal(all.code, 0, `${everyOption(command).join(' ')}: ${all.stderr}`);
    assert.equal(all.stdout, r.stdout, `${command} --help is ${command} -h`);
  }
});

test('the global help lists every command; `help COMMAND` is `COMMAND --help`; unknown commands say which exist', () => {
  const global = cli(['--help']);
  assert.equal(global.code, 0);
  assert.ok(global.stdout.startsWith(GLOBAL_TITLE));
  for (const command of COMMAND_NAMES) assert.match(global.stdout, new RegExp(`^  rollout-lab ${command} `, 'm'));
  assert.equal(cli(['-h']).stdout, global.stdout);
  const bare = cli([]);
  assert.equal(bare.code, 2, 'no command is a usage error');
  assert.equal(bare.stdout, global.stdout);

  assert.equal(cli(['help', 'traces']).stdout, cli(['traces', '--help']).stdout);
  for (const args of [['help', 'nope'], ['nope']]) {
    const r = cli(args);
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trim().split('\n').length, 1, 'one line');
    assert.match(r.stderr, /"nope" — one of init, run, eval, traces/);
  }
  const bad = cli(['run', '--limt', '3']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /run --help/);
});

test('traces --limit N --json lists the N newest rollouts and the total; without --limit, every one', () => {
  const ws = tempWorkspace();
  try {
    assert.equal(cli(['init', '--workspace', ws, '--dataset', PUBMEDQA]).code, 0);
    const run = cli(['run', '--workspace', ws, '--limit', '3', '--concurrency', '3', '--json']);
    assert.equal(run.code, 0, run.stderr);
    const runId = json<RunDoc>(run).runId;

    type List = { total: number; rollouts: Array<{ id: string; runId: string; startTime: number }> };
    const all = json<List>(cli(['traces', '--workspace', ws, '--json']));
    assert.equal(all.total, 3);
    assert.equal(all.rollouts.length, 3);
    const two = json<List>(cli(['traces', '--workspace', ws, '--limit', '2', '--json']));
    assert.equal(two.total, 3, 'total counts every rollout, listed or not');
    assert.deepEqual(two.rollouts.map((r) => r.id), all.rollouts.slice(0, 2).map((r) => r.id), 'the newest two');
    assert.ok(two.rollouts[0]!.startTime >= two.rollouts[1]!.startTime);
    const ofRun = json<List>(cli(['traces', '--workspace', ws, '--run', runId, '--limit', '1', '--json']));
    assert.deepEqual([ofRun.total, ofRun.rollouts.length, ofRun.rollouts[0]!.runId], [3, 1, runId]);

    const table = cli(['traces', '--workspace', ws, '--limit', '2']);
    assert.match(table.stdout, /^2 of 3 rollouts \(use --limit N or --run RUN_ID\)$/m);
    assert.equal(cli(['traces', '--workspace', ws, '--limit', '0', '--json']).code, 2, '--limit must be at least 1');
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('demo --example chooses the learning run\'s example: only with --train, and only an example that has one', () => {
  const alone = cli(['demo', '--example', 'stock-lookup']);
  assert.equal(alone.code, 2, alone.stderr);
  assert.match(alone.stderr, /--example chooses the learning run's example: pass it with --train/);
  const ws = tempWorkspace();
  try {
    const other = cli(['demo', '--train', '--example', 'command-agents', '--workspace', ws]);
    assert.equal(other.code, 2, other.stderr);
    assert.match(other.stderr, /demo --train runs the learning run of ticket-routing or stock-lookup, not "command-agents"/);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
