import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { LabConfigSchema, RESEARCH_LAB_TOOLS, type AirRule, type LabConfig } from '../../../src/core/config/schema';
import { knownAirTargets, previewAirRules, validateAirRules, type AirRuleIssue } from '../../../src/core/reward/airRules';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts } from '../../../src/core/rollout/runner';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

/** The rules the runner applies during the rollouts, and the preview is checked against. */
const RULES: AirRule[] = [
  { name: 'tool-ok', when: 'tool.ok', reward: 0.05 },
  { name: 'tool-error', when: 'tool.error', reward: -0.1 },
  { name: 'search-ok', when: 'tool.ok', tools: ['pubmed_search', 'clinical_trials_search'], reward: 0.02 },
  { name: 'answer-ok', when: 'output.valid', reward: 0.01 },
  { name: 'answer-bad', when: 'output.invalid', reward: -0.2 },
];

function at(issues: AirRuleIssue[], path: string): AirRuleIssue[] {
  return issues.filter((i) => i.path === path);
}

describe('AIR rules: validation and preview on a real rollout', () => {
  let dir: string;
  let config: LabConfig;
  let spans: SpanRecord[];
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rl-air-'));
    await initWorkspace(dir, { dataset: PUBMEDQA });
    const cfgFile = join(dir, '.rollout-lab', 'lab.json');
    const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
    cfg.air = RULES;
    writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
    const lab = await Lab.open({ workspace: dir, env: {} });
    try {
      config = lab.loaded.config;
      const ds = await lab.loadDataset();
      const tasks = lab.selectTasks(ds, { split: 'train', limit: 3, seed: 7 });
      const r = await runRollouts(await lab.environment(ds.tasks), { tasks, samples: 1, concurrency: 3, params: {}, seed: 7 });
      // The rollout with the most tool calls gives the rules the most to do.
      const trees = r.rollouts.map((x) => lab.store.getSpans(x.id));
      spans = trees.sort((a, b) => b.filter((s) => s.kind === 'tool').length - a.filter((s) => s.kind === 'tool').length)[0]!;
    } finally {
      await lab.close();
    }
    assert.ok(spans.some((s) => s.kind === 'tool'), 'the rollout called tools');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('knows the lab’s agents and the tools they may call', () => {
    const known = knownAirTargets(config);
    assert.deepEqual(known.agents, Object.keys(config.agents).sort());
    const listed = new Set(Object.values(config.agents).flatMap((a) => a.tools));
    assert.deepEqual(known.tools, [...listed].sort());
    assert.ok(known.tools.length > 0);
    for (const t of known.tools) assert.ok((RESEARCH_LAB_TOOLS as readonly string[]).includes(t), t);
    const toolAgents = new Set(spans.filter((s) => s.kind === 'tool').map((s) => String(s.attributes[Attr.agentName])));
    for (const a of toolAgents) assert.ok(known.agents.includes(a), `${a} called a tool and is a known agent`);
  });

  it('accepts the rules the lab ran with', () => {
    const { rules, issues } = validateAirRules(JSON.parse(JSON.stringify(RULES)), knownAirTargets(config));
    assert.deepEqual(issues, []);
    assert.deepEqual(rules, RULES);
  });

  it('reports schema errors and duplicate names where they are, with the fix', () => {
    const known = knownAirTargets(config);
    const bad = validateAirRules(
      [
        { name: 'ok', when: 'tool.ok', reward: 0.1 },
        { when: 'tool.ok', reward: 0.1 },
        { name: 'x', when: 'tool.done', reward: 2, colour: 'red' },
        'not a rule',
        { name: 'ok', when: 'output.valid', reward: 0.1 },
        { name: 'y', when: 'tool.ok', reward: 0.1, agents: [3] },
      ],
      known,
    );
    assert.equal(bad.rules, null);
    assert.ok(bad.issues.every((i) => i.severity === 'error'), JSON.stringify(bad.issues));
    assert.match(at(bad.issues, 'air[1].name')[0]!.message, /"name" is missing; add a label such as "search-ok"/);
    assert.match(at(bad.issues, 'air[2].when')[0]!.message, /"tool\.ok", "tool\.error", "output\.valid", "output\.invalid"/);
    assert.match(at(bad.issues, 'air[2].reward')[0]!.message, /from -1 to 1/);
    assert.match(at(bad.issues, 'air[2].colour')[0]!.message, /unknown field "colour"/);
    assert.match(at(bad.issues, 'air[3]')[0]!.message, /must be an object such as \{ "name"/);
    assert.match(at(bad.issues, 'air[4].name')[0]!.message, /"ok" is already used by air\[0\]/);
    assert.match(at(bad.issues, 'air[5].agents[0]')[0]!.message, /must be a name/);
    assert.equal(bad.issues.length, 7);

    const notList = validateAirRules({ name: 'x' }, known);
    assert.equal(notList.rules, null);
    assert.deepEqual(notList.issues.map((i) => [i.path, i.severity]), [['air', 'error']]);
    assert.match(notList.issues[0]!.message, /must be a list of rules/);
  });

  it('warns about rules that can never fire or change nothing, and still returns them', () => {
    const known = knownAirTargets(config);
    const agent = known.agents[0]!;
    const { rules, issues } = validateAirRules(
      [
        { name: 'a', when: 'tool.ok', agents: [agent, 'Astrologer'], reward: 0.1 },
        { name: 'b', when: 'tool.error', tools: ['crystal_ball'], reward: -0.1 },
        { name: 'c', when: 'output.valid', tools: ['pubmed_search'], reward: 0.1 },
        { name: 'd', when: 'output.invalid', reward: 0 },
        { name: 'e', when: 'tool.ok', agents: [], reward: 0.1 },
      ],
      known,
    );
    assert.equal(rules?.length, 5);
    assert.ok(issues.every((i) => i.severity === 'warning'), JSON.stringify(issues));
    assert.deepEqual(
      issues.map((i) => i.path),
      ['air[0].agents[1]', 'air[1].tools[0]', 'air[2].tools', 'air[3].reward', 'air[4].agents'],
    );
    assert.match(issues[0]!.message, /agent "Astrologer" is not in this lab/);
    assert.ok(issues[0]!.message.includes(agent));
    assert.match(issues[1]!.message, /tool "crystal_ball"/);
    assert.match(issues[2]!.message, /can never fire/);
    assert.match(issues[3]!.message, /changes nothing/);
  });

  it('previews exactly the intermediate rewards the runner gave the rollout', () => {
    const preview = previewAirRules(RULES, spans);
    assert.equal(preview.spansChecked, spans.length);
    // What the runner recorded: one reward span per firing, under the span that fired it.
    const recorded = spans
      .filter((s) => s.kind === 'reward' && s.attributes[Attr.rewardKind] === 'intermediate')
      .map((s) => `${s.name} ${s.parentSpanId} ${String(s.attributes[Attr.rewardValue])}`)
      .sort();
    assert.ok(recorded.length > 0);
    assert.deepEqual(preview.rewards.map((r) => `${r.rule} ${r.spanId} ${r.reward}`).sort(), recorded);

    const byId = new Map(spans.map((s) => [s.spanId, s]));
    for (const r of preview.rewards) {
      assert.equal(r.spanName, byId.get(r.spanId)!.name);
      assert.equal(r.startTime, byId.get(r.spanId)!.startTime);
    }
    assert.deepEqual(preview.rewards.map((r) => r.startTime), preview.rewards.map((r) => r.startTime).sort((a, b) => a - b));

    // Counted from the spans themselves.
    const tools = spans.filter((s) => s.kind === 'tool');
    const okTools = tools.filter((s) => s.status !== 'error');
    const searches = okTools.filter((s) => ['pubmed_search', 'clinical_trials_search'].includes(String(s.attributes[Attr.toolName])));
    const valid = spans.filter((s) => s.kind === 'node' && s.attributes['rollout_lab.output.ok'] === true);
    const invalid = spans.filter((s) => s.kind === 'node' && s.attributes['rollout_lab.output.ok'] === false);
    const expected = {
      'tool-ok': okTools.length,
      'tool-error': tools.length - okTools.length,
      'search-ok': searches.length,
      'answer-ok': valid.length,
      'answer-bad': invalid.length,
    };
    assert.deepEqual(Object.fromEntries(Object.entries(preview.byRule).map(([k, v]) => [k, v.count])), expected);
    for (const rule of RULES) assert.ok(Math.abs(preview.byRule[rule.name]!.total - expected[rule.name as keyof typeof expected] * rule.reward) < 1e-12);
    const sum = preview.rewards.reduce((a, r) => a + r.reward, 0);
    assert.ok(Math.abs(preview.total - sum) < 1e-12);
    assert.ok(Math.abs(Object.values(preview.byAgent).reduce((a, b) => a + b, 0) - sum) < 1e-12);

    const none = previewAirRules([], spans);
    assert.deepEqual({ ...none, spansChecked: 0 }, { rewards: [], byRule: {}, byAgent: {}, total: 0, spansChecked: 0 });
  });
});

it('a module graph: a tool lab.json does not list may still be the graph\'s own, so the rule is flagged as unchecked, not as never firing', () => {
  const config = LabConfigSchema.parse({
    models: { m: { model: 'x' } },
    agents: { SqlWriter: { model: 'm', promptText: 'Write SQL.', tools: ['run_sql'] }, Checker: { model: 'm', promptText: 'Check.' } },
    graph: { kind: 'module', module: 'graph.ts' },
    reward: { judge: { model: 'm' } },
  });
  const known = knownAirTargets(config);
  assert.equal(known.toolsMayBeUnlisted, true);
  assert.deepEqual(known.tools, ['run_sql']);
  const { rules, issues } = validateAirRules([{ name: 'sql-ok', when: 'tool.ok', tools: ['run_sql', 'explain'], agents: ['SqlWriter'], reward: 0.1 }], known);
  assert.equal(rules?.length, 1);
  assert.deepEqual(issues.map((i) => [i.path, i.severity]), [['air[0].tools[1]', 'warning']]);
  assert.match(issues[0]!.message, /tool "explain" is not listed under any agent's "tools" in lab\.json, so it cannot be checked: the rule fires only if your graph runs a tool of exactly that name/);
  const builtIn = validateAirRules([{ name: 'x', when: 'tool.ok', tools: ['explain'], reward: 0.1 }], { agents: [], tools: ['pubmed_search'] });
  assert.match(builtIn.issues[0]!.message, /is not one the agents may call, so the rule never fires/);
});
