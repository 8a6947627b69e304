import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { cli, json, tempWorkspace, PUBMEDQA, type RunDoc, type SpanDoc } from './cliHelpers';


let ws: string;
before(() => {
  ws = tempWorkspace();
});
after(() => rmSync(ws, { recursive: true, force: true }));

test('init, run 20 PubMedQA tasks and eval on the simulated endpoint; the store holds every trace', () => {
  const init = cli(['init', '--workspace', ws, '--dataset', PUBMEDQA]);
  assert.equal(init.code, 0, init.stderr);

  const run = cli(['run', '--workspace', ws, '--limit', '20', '--concurrency', '4', '--json']);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, /SIMULATED/);
  const doc = json<RunDoc>(run);
  assert.equal(doc.simulated, true);
  assert.equal(doc.rollouts, 20);
  assert.equal(doc.succeeded + doc.failed, 20);
  assert.ok(doc.metrics.executionSuccessRate >= 90, `success ${doc.metrics.executionSuccessRate}`);
  assert.ok(doc.metrics.averageFinalReward > 0 && doc.metrics.averageFinalReward <= 1);
  for (const k of ['novelty', 'feasibility', 'impact', 'clarity', 'groundedness', 'efficiency']) {
    const v = doc.metrics.judge[k]!;
    assert.ok(v >= 0 && v <= 1, `${k} = ${v}`);
  }

  const list = json<{ rollouts: Array<{ id: string; runId: string; taskId: string; status: string; finalReward: number | null; startTime: number; endTime: number }> }>(
    cli(['traces', '--workspace', ws, '--json']),
  );
  const mine = list.rollouts.filter((r) => r.runId === doc.runId);
  assert.equal(mine.length, 20);
  assert.equal(new Set(mine.map((r) => r.taskId)).size, 20);

  let revisions = 0;
  let severities = new Set<string>();
  for (const r of mine) {
    const tree = json<{ rollout: Record<string, unknown>; spans: SpanDoc[] }>(cli(['traces', '--workspace', ws, '--rollout', r.id, '--json']));
    const spans = tree.spans;
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const roots = spans.filter((s) => s.parentSpanId === null);
    assert.equal(roots.length, 1, `one root span in ${r.id}`);
    assert.equal(roots[0]!.kind, 'rollout');
    assert.equal(roots[0]!.attributes['rollout_lab.simulated'], true);
    for (const s of spans) {
      assert.match(s.spanId, /^[0-9a-f]{16}$/);
      assert.ok(['rollout', 'node', 'llm', 'tool', 'reward'].includes(s.kind));
      assert.ok(s.endTime >= s.startTime);
      if (s.parentSpanId) assert.ok(byId.has(s.parentSpanId), `parent of ${s.name} is in the tree`);
      if (s.kind === 'node') assert.equal(byId.get(s.parentSpanId!)!.kind, 'rollout');
      if (s.kind === 'llm') {
        assert.equal(s.attributes['gen_ai.operation.name'], 'chat');
        assert.equal(typeof s.attributes['gen_ai.usage.input_tokens'], 'number');
        assert.ok(String(s.attributes['gen_ai.input.messages']).startsWith('['));
      }
    }
    if (r.status !== 'succeeded') continue;
    const nodes = spans.filter((s) => s.kind === 'node').map((s) => s.name);
    for (const agent of ['Geneticist', 'Pharmacologist', 'Neurologist', 'Supervisor', 'HypothesisRefiner', 'ProtocolDesigner', 'PeerReviewer', 'SafetyOfficer', 'PrincipalInvestigator']) {
      assert.ok(nodes.includes(agent), `${agent} ran in ${r.id}`);
    }
    const rewards = spans.filter((s) => s.kind === 'reward');
    const final = rewards.find((s) => s.name === 'final');
    assert.ok(final, 'final reward span');
    assert.equal(final!.attributes['rollout_lab.reward.value'], r.finalReward);
    assert.ok(rewards.some((s) => s.name === 'judge' || s.name === 'no-output'));
    // Revision loops: a reviewer said CRITICAL or MAJOR and the graph went back.
    const reviews = spans
      .filter((s) => s.kind === 'node' && (s.name === 'PeerReviewer' || s.name === 'SafetyOfficer'))
      .map((s) => JSON.parse(String(s.attributes['rollout_lab.output'] ?? '{}')) as { critique_severity?: string });
    for (const rv of reviews) if (rv.critique_severity) severities.add(rv.critique_severity);
    const designs = nodes.filter((n) => n === 'ProtocolDesigner').length;
    const severe = reviews.filter((rv) => rv.critique_severity === 'CRITICAL' || rv.critique_severity === 'MAJOR').length;
    if (severe > 0 && designs > 1) revisions++;
    if (severe > 0) assert.ok(designs > 1 || Number(roots[0]!.attributes['rollout_lab.turn']) >= 15, 'a severe review sends the protocol back unless the turn limit was hit');
  }
  assert.ok(revisions > 0, 'at least one rollout took a revision loop');
  assert.ok(severities.has('MINOR') && (severities.has('CRITICAL') || severities.has('MAJOR')), [...severities].join(','));

  const ev = cli(['eval', '--workspace', ws, '--limit', '6', '--json']);
  assert.equal(ev.code, 0, ev.stderr);
  const evDoc = json<RunDoc>(ev);
  assert.equal(evDoc.rollouts, 6);
  assert.equal(evDoc.simulated, true);
  assert.equal(typeof evDoc.metrics.averageTurnCount, 'number');

  const table = cli(['eval', '--workspace', ws, '--limit', '2']);
  assert.equal(table.code, 0, table.stderr);
  for (const row of ['Execution Success Rate', 'Average Final Reward', 'Decision Alignment', 'Average Turn Count', 'Judge: novelty', 'SIMULATED']) {
    assert.ok(table.stdout.includes(row), `eval table has ${row}`);
  }
});

test('usage and config errors exit 2 with one line on stderr', () => {
  const bad = cli(['run', '--workspace', ws, '--bogus']);
  assert.equal(bad.code, 2);
  assert.equal(bad.stderr.trim().split('\n').length, 1);
  assert.match(bad.stderr, /--bogus/);
  const noCfg = cli(['run', '--workspace', tempWorkspace()]);
  assert.equal(noCfg.code, 2);
  assert.match(noCfg.stderr, /rollout-lab init/);
  const unknown = cli(['frobnicate']);
  assert.equal(unknown.code, 2);
});
