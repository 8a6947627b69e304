import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RESEARCH_LAB_AGENTS } from '../../../src/core/graph/researchLab/outputs';
import { nodeAggregates, rolloutOverlay } from '../../../src/core/analysis/graphStats';
import { rewardSeries } from '../../../src/core/analysis/rewardSeries';
import { describeLabGraph } from '../../../src/core/lab/graphDescription';
import type { Lab } from '../../../src/core/lab/lab';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';
import { tempLab, tempModuleLab, type TempLab } from '../../webview/labViewsData';

const WITH_TOOLS = ['Geneticist', 'Pharmacologist', 'Neurologist', 'HypothesisRefiner', 'ProtocolDesigner'];

/**
 * Node visits with an error, by node name, counted here from the spans: a
 * failed node span, or a failed model or tool call under it (the nearest node
 * above the call). A simulated tool may fail (an unknown protein), so a clean
 * run can have some.
 */
function failedVisits(spans: readonly SpanRecord[]): Record<string, number> {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const failed = new Set<SpanRecord>();
  for (const s of spans) {
    if (s.status !== 'error') continue;
    let node: SpanRecord | undefined = s;
    while (node && node.kind !== 'node') node = node.parentSpanId ? byId.get(node.parentSpanId) : undefined;
    if (node) failed.add(node);
  }
  const out: Record<string, number> = {};
  for (const n of failed) out[n.name] = (out[n.name] ?? 0) + 1;
  return out;
}

describe('graph view and reward curve data from a research lab', () => {
  let t: TempLab;
  let lab: Lab;
  let firstRun: string;
  let secondRun: string;
  before(async () => {
    t = await tempLab('rl-labviews-');
    firstRun = await t.run({ limit: 6, seed: 3 });
    // A new prompt for one agent and a new model version for another: the next run records both.
    writeFileSync(join(t.dir, '.rollout-lab', 'prompts', 'SafetyOfficer.md'), 'You are the safety officer. Flag any CRITICAL risk.\n');
    t.editConfig((cfg) => (cfg.models.senior.version = 'v2'));
    secondRun = await t.run({ limit: 6, seed: 4 });
    lab = await t.open();
  });
  after(async () => {
    await lab?.close();
    t?.remove();
  });

  it('describes the research lab from LangGraph introspection, with prompts for agents and their tool nodes', async () => {
    const d = await describeLabGraph(lab);
    assert.equal(d.source, 'research-lab');
    const byId = new Map(d.nodes.map((n) => [n.id, n]));
    for (const a of RESEARCH_LAB_AGENTS) assert.deepEqual(byId.get(a), { id: a, kind: 'agent', agent: a, hasPrompt: true });
    for (const a of WITH_TOOLS) assert.deepEqual(byId.get(`${a}_tools`), { id: `${a}_tools`, kind: 'tools', agent: a, hasPrompt: true });
    assert.deepEqual(byId.get('__start__'), { id: '__start__', kind: 'start', agent: null, hasPrompt: false });
    assert.equal(byId.get('__end__')?.kind, 'end');
    assert.equal(d.nodes.length, 16);
    const labels = new Set(d.edges.filter((e) => e.conditional).map((e) => `${e.source}-[${e.label}]->${e.target}`));
    assert.ok(labels.has('SafetyOfficer-[CRITICAL]->HypothesisRefiner'));
    assert.ok(labels.has('SafetyOfficer-[MAJOR]->ProtocolDesigner'));
    assert.ok(labels.has('Geneticist-[tool call]->Geneticist_tools'));
    assert.ok(d.edges.some((e) => e.source === 'Geneticist_tools' && e.target === 'Geneticist' && !e.conditional), 'the tool loop returns to its agent');
  });

  it('overlays one rollout: its path in time order, visits with revision loops, errors per node', () => {
    const { rollouts } = lab.store.listRollouts();
    let loops = 0;
    for (const r of rollouts) {
      const spans = lab.store.getSpans(r.id);
      const o = rolloutOverlay(spans);
      const nodeSpans = spans.filter((s) => s.kind === 'node').sort((a, b) => a.startTime - b.startTime);
      assert.equal(o.path.length, nodeSpans.length);
      assert.deepEqual([...o.path].sort(), nodeSpans.map((s) => s.name).sort());
      assert.equal(o.path[o.path.length - 1], 'PrincipalInvestigator');
      for (const a of r.agents) assert.equal(o.visits[a.agent] ?? 0, a.visits, `${a.agent} visits match the rollout row`);
      assert.equal(Object.values(o.visits).reduce((x, y) => x + y, 0), o.path.length);
      assert.deepEqual(o.errors, failedVisits(spans));
      // No model call fails against the simulated endpoint: only tool nodes can have errors here.
      for (const node of Object.keys(o.errors)) assert.ok(node.endsWith('_tools'), `${node} has an error`);
      if ((o.visits.PeerReviewer ?? 0) > 1) loops++;
    }
    assert.ok(loops > 0, 'some rollout went round a revision loop');

    // A failed model call counts against the node visit it happened in.
    const spans = lab.store.getSpans(rollouts[0]!.id).map((s) => ({ ...s }));
    const llm = spans.find((s) => s.kind === 'llm' && s.attributes[Attr.agentName] === 'Supervisor')!;
    llm.status = 'error';
    assert.deepEqual(rolloutOverlay(spans).errors, { Supervisor: 1 });
  });

  it('aggregates nodes over all rollouts: agents from rollout rows, tool nodes from spans, rewards per agent', () => {
    const all = nodeAggregates(lab.store);
    const { rollouts } = lab.store.listRollouts();
    assert.equal(all.rollouts, rollouts.length);
    // The same figures, counted from every span.
    const visits = new Map<string, number>();
    const present = new Map<string, number>();
    const latency = new Map<string, number>();
    // Rollouts in which a node recorded an error: for an agent, any failed span of its own (its tool calls included); for a tool node, a failed visit.
    const failedIn = new Map<string, number>();
    for (const r of rollouts) {
      const spans = lab.store.getSpans(r.id);
      const o = rolloutOverlay(spans);
      const failed = failedVisits(spans);
      for (const [n, v] of Object.entries(o.visits)) {
        visits.set(n, (visits.get(n) ?? 0) + v);
        present.set(n, (present.get(n) ?? 0) + 1);
        const erred = n.endsWith('_tools') ? (failed[n] ?? 0) > 0 : spans.some((s) => s.status === 'error' && s.attributes[Attr.agentName] === n);
        if (erred) failedIn.set(n, (failedIn.get(n) ?? 0) + 1);
      }
      for (const s of spans) if (s.kind === 'node') latency.set(s.name, (latency.get(s.name) ?? 0) + (s.endTime - s.startTime));
    }
    assert.deepEqual(all.nodes.map((n) => n.node).sort(), [...visits.keys()].sort());
    for (const n of all.nodes) {
      assert.equal(n.visits, visits.get(n.node), n.node);
      assert.equal(n.rollouts, present.get(n.node), n.node);
      assert.ok(Math.abs(n.meanLatencyMs! - latency.get(n.node)! / n.visits) < 1.5, `${n.node} latency`);
      assert.equal(n.errorRate, (failedIn.get(n.node) ?? 0) / present.get(n.node)!, `${n.node} error rate`);
      assert.equal(n.sample !== undefined, n.node.endsWith('_tools'), `${n.node}: only tool nodes are sampled`);
    }
    assert.deepEqual(all.agents, lab.store.aggregateByAgent());
    const so = all.agents.filter((a) => a.agent === 'SafetyOfficer');
    assert.equal(so.length, 2, 'two prompt versions of the safety officer');

    const one = nodeAggregates(lab.store, { runId: firstRun, maxRollouts: 2 });
    assert.equal(one.rollouts, 6);
    assert.equal(one.nodes.find((n) => n.node === 'Supervisor')!.rollouts, 6);
    for (const n of one.nodes.filter((x) => x.node.endsWith('_tools'))) assert.ok(n.sample === 2 && n.rollouts <= 2, n.node);
    assert.equal(one.agents.filter((a) => a.agent === 'SafetyOfficer').length, 1);
  });

  it('tells nodes apart in the aggregate: reward when revisited or not, visits per rollout, latency percentiles, edge traffic', async () => {
    const agg = nodeAggregates(lab.store);
    const { rollouts } = lab.store.listRollouts();
    assert.equal(agg.spanSample, rollouts.length, 'all 12 rollouts fit in the span sample');
    const byNode = new Map(agg.nodes.map((n) => [n.node, n]));
    // Rewards of the scored rollouts that ran a node more than once, or once, counted here from each rollout's spans.
    const groups = new Map<string, { revisited: number[]; once: number[] }>();
    const durations = new Map<string, number[]>();
    for (const r of rollouts) {
      const spans = lab.store.getSpans(r.id);
      for (const s of spans) if (s.kind === 'node') durations.set(s.name, [...(durations.get(s.name) ?? []), s.endTime - s.startTime]);
      if (r.finalReward === null) continue;
      for (const [n, v] of Object.entries(rolloutOverlay(spans).visits)) {
        const g = groups.get(n) ?? { revisited: [], once: [] };
        (v > 1 ? g.revisited : g.once).push(r.finalReward);
        groups.set(n, g);
      }
    }
    const mean = (xs: number[]): number | null => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
    let differs = 0;
    for (const [n, g] of groups) {
      const s = byNode.get(n)!;
      assert.equal(s.revisited.rollouts, g.revisited.length, `${n} revisited`);
      assert.equal(s.once.rollouts, g.once.length, `${n} once`);
      for (const [got, want] of [[s.revisited.meanReward, mean(g.revisited)], [s.once.meanReward, mean(g.once)]] as const) {
        if (want === null) assert.equal(got, null, n);
        else assert.ok(Math.abs(got! - want) < 1e-9, `${n}: ${got} vs ${want}`);
      }
      assert.ok(Math.abs(s.visitsPerRollout! - s.visits / s.rollouts) < 1e-12);
      if (s.revisited.rollouts && s.once.rollouts) differs++;
      const d = durations.get(n)!.sort((a, b) => a - b);
      assert.ok(s.p50LatencyMs! >= d[0]! && s.p50LatencyMs! <= s.p95LatencyMs! && s.p95LatencyMs! <= d[d.length - 1]!, `${n} percentiles`);
      if (d.length % 2) assert.equal(s.p50LatencyMs, d[(d.length - 1) / 2], `${n} median`);
      // No model call against the simulated endpoint retries.
      if (!n.endsWith('_tools')) assert.equal(s.retryRate, 0, n);
    }
    assert.ok(differs > 0, 'some node was revisited in some rollouts and not in others');
    assert.ok(byNode.get('PeerReviewer')!.visitsPerRollout! > 1, 'the reviewer runs more than once per rollout on average');
    assert.equal(byNode.get('Supervisor')!.visitsPerRollout, 1);

    // Edge traffic: along the edges of the graph, a node entered one step at a time is entered as often as it runs.
    const d = await describeLabGraph(lab);
    const isEdge = new Set(d.edges.map((e) => `${e.source}>${e.target}`));
    const onGraph = agg.edges.filter((e) => isEdge.has(`${e.source}>${e.target}`));
    const into = (node: string): number => onGraph.filter((e) => e.target === node).reduce((n, e) => n + e.traversals, 0);
    for (const n of ['HypothesisRefiner', 'ProtocolDesigner', 'ProtocolDesigner_tools', 'PeerReviewer', 'SafetyOfficer', 'PrincipalInvestigator']) {
      assert.equal(into(n), byNode.get(n)?.visits ?? 0, `traversals into ${n}`);
    }
    assert.equal(into('__end__'), rollouts.length);
    const startEdges = onGraph.filter((e) => e.source === '__start__');
    assert.deepEqual(startEdges.map((e) => [e.target, e.traversals, e.rollouts]).sort(), [['Geneticist', 12, 12], ['Neurologist', 12, 12], ['Pharmacologist', 12, 12]]);
    const loop = onGraph.find((e) => e.source === 'SafetyOfficer' && (e.target === 'ProtocolDesigner' || e.target === 'HypothesisRefiner') && e.traversals > 0);
    assert.ok(loop && loop.rollouts <= loop.traversals, 'the revision loop back from the safety officer was counted');
    // The sample bounds the rollouts whose spans are read.
    const two = nodeAggregates(lab.store, { maxRollouts: 2 });
    assert.equal(two.spanSample, 2);
    assert.equal(two.edges.filter((e) => e.target === '__end__').reduce((n, e) => n + e.traversals, 0), 2);
  });

  it('gives the reward series in start order with prompt and model versions per agent', () => {
    const criteria = Object.keys(lab.loaded.config.reward.criteria);
    const s = rewardSeries(lab.store, criteria);
    assert.deepEqual(s.criteria, criteria);
    assert.equal(s.points.length, 12);
    for (let i = 1; i < s.points.length; i++) assert.ok(s.points[i]!.startTime >= s.points[i - 1]!.startTime);
    const first = s.points.filter((p) => p.runId === firstRun);
    const second = s.points.filter((p) => p.runId === secondRun);
    assert.equal(first.length, 6);
    assert.equal(second.length, 6);
    assert.ok(s.points.indexOf(first[5]!) < s.points.indexOf(second[0]!), 'the first run comes first');
    const versions = (ps: typeof first, pick: (p: (typeof first)[number]) => string | null): Set<string | null> => new Set(ps.map(pick));
    assert.equal(versions(first, (p) => p.promptVersions.SafetyOfficer!).size, 1);
    assert.notDeepEqual(versions(first, (p) => p.promptVersions.SafetyOfficer!), versions(second, (p) => p.promptVersions.SafetyOfficer!));
    assert.deepEqual(versions(first, (p) => p.promptVersions.Supervisor!), versions(second, (p) => p.promptVersions.Supervisor!));
    assert.deepEqual([...versions(first, (p) => p.modelVersions.HypothesisRefiner!)], ['senior']);
    assert.deepEqual([...versions(second, (p) => p.modelVersions.HypothesisRefiner!)], ['senior@v2']);
    for (const p of s.points) {
      const r = lab.store.getRollout(p.rolloutId)!;
      assert.equal(p.finalReward, r.finalReward);
      assert.deepEqual(p.criteria, r.criteria);
      assert.equal(p.taskId, r.taskId);
      assert.equal(p.simulated, true);
    }
    assert.equal(rewardSeries(lab.store, criteria, { runId: secondRun }).points.length, 6);
  });
});

describe('graph view data from a user module graph', () => {
  let t: TempLab;
  let lab: Lab;
  before(async () => {
    t = await tempModuleLab('rl-labviews-module-');
    await t.run({ limit: 4, seed: 2 });
    lab = await t.open();
  });
  after(async () => {
    await lab?.close();
    t?.remove();
  });

  it('describes examples/custom-graph and overlays and aggregates its rollouts', async () => {
    const d = await describeLabGraph(lab);
    assert.equal(d.source, 'module');
    assert.deepEqual(
      d.nodes.map((n) => `${n.id}:${n.kind}:${n.agent}:${n.hasPrompt}`).sort(),
      ['Critic:agent:Critic:true', 'Writer:agent:Writer:true', 'Writer_tools:tools:Writer:true', '__end__:end:null:false', '__start__:start:null:false'],
    );
    const edges = new Set(d.edges.map((e) => `${e.source}-[${e.label ?? ''}]->${e.target}`));
    for (const e of ['Writer-[tool call]->Writer_tools', 'Writer-[draft]->Critic', 'Critic-[revise]->Writer', 'Critic-[done]->__end__']) {
      assert.ok(edges.has(e), `${e} in ${[...edges].join(', ')}`);
    }

    const { rollouts } = lab.store.listRollouts();
    assert.equal(rollouts.length, 4);
    for (const r of rollouts) {
      const o = rolloutOverlay(lab.store.getSpans(r.id));
      assert.equal(o.path[0], 'Writer');
      assert.ok((o.visits.Critic ?? 0) >= 1);
    }
    const agg = nodeAggregates(lab.store);
    assert.equal(agg.rollouts, 4);
    assert.equal(agg.nodes.find((n) => n.node === 'Writer')!.rollouts, 4);
    assert.ok(agg.agents.some((a) => a.agent === 'Critic' && a.meanReward !== null));
  });
});
