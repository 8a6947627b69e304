import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import {
  AGENT_OUTPUT,
  JUNIOR_AGENTS,
  RESEARCH_LAB_AGENTS,
  REVIEW_AGENTS,
  type ResearchLabAgent,
} from '../../../src/core/graph/researchLab/outputs';
import { judgeOutputSchema } from '../../../src/core/reward/judgeSchema';
import { extractJson, parseStructured } from '../../../src/core/llm/structuredOutput';
import { startSimServer, type SimServer } from '../../../src/core/sim/simServer';
import { agentMessages, judgeMessages, LAB_TOOLS, pubmedqaTasks, taskBlock, type LabTask, type WireMessage } from './labFixtures';

const TASKS = pubmedqaTasks(30);

function briefing(agent: ResearchLabAgent, t: LabTask, previousReviews = 0): string {
  const reviews = Array.from(
    { length: previousReviews },
    (_, i) => `Previous review (round ${i + 1}, PeerReviewer): REVISE, severity MAJOR\nAdd a control group.`,
  ).join('\n\n');
  const protocol = JSON.stringify({ title: 'A study', steps: ['Recruit 40 patients', 'Measure outcome'], safety_concerns: '', budget_usd: 1000 });
  switch (agent) {
    case 'Supervisor':
      return `Research question: ${t.goal}\n\nHypotheses:\n[0] Geneticist: genes explain ${t.goal} (papers: none)\n[1] Pharmacologist: a drug changes ${t.goal} (papers: none)\n[2] Neurologist: networks mediate ${t.goal} (papers: none)\n\nSelect the most promising hypothesis.`;
    case 'HypothesisRefiner':
      return `${taskBlock(t)}\n\nSelected hypothesis: Variants modify the outcome (proposed by Geneticist)${reviews ? `\n\n${reviews}` : ''}`;
    case 'ProtocolDesigner':
      return `${taskBlock(t)}\n\nRefined hypothesis: Variants modify the outcome by 20%.${reviews ? `\n\nYour previous protocol:\n${protocol}\n\n${reviews}` : ''}`;
    case 'PeerReviewer':
    case 'SafetyOfficer':
    case 'PrincipalInvestigator':
      return `${taskBlock(t)}\n\nRefined hypothesis: Variants modify the outcome.\n\nProtocol:\n${protocol}${reviews ? `\n\n${reviews}` : ''}`;
    default:
      return `${taskBlock(t)}\n\nPropose your hypothesis.`;
  }
}

describe('simulated endpoint: research-lab roles', () => {
  let sim: SimServer;
  let client: OpenAI;
  before(async () => {
    sim = await startSimServer({ seed: 7 });
    client = new OpenAI({ baseURL: sim.url, apiKey: 'not-needed', maxRetries: 0 });
  });
  after(() => sim.close());

  const ask = async (messages: WireMessage[], extra: Partial<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming> = {}): Promise<OpenAI.Chat.ChatCompletion> =>
    client.chat.completions.create({ model: 'sim-model', messages: messages as OpenAI.Chat.ChatCompletionMessageParam[], ...extra });

  it('answers every role with output that validates against its schema, varied across tasks', async () => {
    for (const agent of RESEARCH_LAB_AGENTS) {
      const texts = new Set<string>();
      for (const t of TASKS) {
        const r = await ask(agentMessages(agent, briefing(agent, t)));
        const content = r.choices[0]!.message.content ?? '';
        const parsed = await parseStructured(AGENT_OUTPUT[agent], content);
        assert.ok(parsed.ok, `${agent} on task ${t.id}: ${parsed.ok ? '' : parsed.error}\n${content}`);
        texts.add(JSON.stringify(extractJson(content)));
      }
      assert.ok(texts.size >= TASKS.length * 0.5, `${agent} gave only ${texts.size} distinct answers over ${TASKS.length} tasks`);
    }
  });

  it('builds answers from the task text', async () => {
    const t = TASKS[0]!;
    const r = await ask(agentMessages('Pharmacologist', briefing('Pharmacologist', t)));
    const { hypothesis } = extractJson(r.choices[0]!.message.content ?? '') as { hypothesis: string };
    const words = new Set(`${t.goal} ${t.context}`.toLowerCase().match(/[a-z]{5,}/g));
    const shared = (hypothesis.toLowerCase().match(/[a-z]{5,}/g) ?? []).filter((w) => words.has(w));
    assert.ok(shared.length >= 2, `hypothesis shares too little with the task: ${hypothesis}`);
  });

  it('is reproducible for the same input and seed, and varies with the request seed', async () => {
    const msgs = agentMessages('Neurologist', briefing('Neurologist', TASKS[3]!));
    const a = await ask(msgs);
    const b = await ask(msgs);
    assert.equal(a.choices[0]!.message.content, b.choices[0]!.message.content);
    const seeded = new Set<string>();
    for (let seed = 0; seed < 8; seed++) seeded.add((await ask(msgs, { seed })).choices[0]!.message.content ?? '');
    assert.ok(seeded.size > 1, 'request seeds should vary the answer');
  });

  it('gives reviews of every severity, consistent decisions, and fewer severe ones after revisions', async () => {
    const severe = (counts: Map<string, number>): number => (counts.get('CRITICAL') ?? 0) + (counts.get('MAJOR') ?? 0);
    const tally = async (previous: number): Promise<Map<string, number>> => {
      const counts = new Map<string, number>();
      for (const agent of REVIEW_AGENTS) {
        for (const t of TASKS) {
          const r = await ask(agentMessages(agent, briefing(agent, t, previous)));
          const review = extractJson(r.choices[0]!.message.content ?? '') as { decision: string; critique_severity: string };
          assert.equal(review.decision, review.critique_severity === 'MINOR' ? 'APPROVE' : 'REVISE');
          counts.set(review.critique_severity, (counts.get(review.critique_severity) ?? 0) + 1);
        }
      }
      return counts;
    };
    const fresh = await tally(0);
    for (const s of ['CRITICAL', 'MAJOR', 'MINOR']) assert.ok((fresh.get(s) ?? 0) > 0, `no ${s} review in ${[...fresh]}`);
    const late = await tally(4);
    assert.ok(severe(late) < severe(fresh), `severe reviews should become rarer: ${severe(fresh)} then ${severe(late)}`);
  });

  it('lets the Supervisor choose one of the listed hypotheses', async () => {
    const chosen = new Set<number>();
    for (const t of TASKS) {
      const r = await ask(agentMessages('Supervisor', briefing('Supervisor', t)));
      const { selected_hypothesis_index: i } = extractJson(r.choices[0]!.message.content ?? '') as { selected_hypothesis_index: number };
      assert.ok([0, 1, 2].includes(i), `index ${i} was not offered`);
      chosen.add(i);
    }
    assert.ok(chosen.size > 1, 'the choice should depend on the input');
  });

  it('has the PrincipalInvestigator decide both GO and NO-GO across tasks', async () => {
    const decisions = new Set<string>();
    for (const t of TASKS) {
      const r = await ask(agentMessages('PrincipalInvestigator', briefing('PrincipalInvestigator', t)));
      decisions.add((extractJson(r.choices[0]!.message.content ?? '') as { final_decision: string }).final_decision);
    }
    assert.deepEqual([...decisions].sort(), ['GO', 'NO-GO']);
  });

  it('calls tools with sensible arguments, then answers citing the tool result', async () => {
    let calls = 0;
    let cited = 0;
    for (const t of TASKS) {
      for (const agent of JUNIOR_AGENTS) {
        const msgs = agentMessages(agent, briefing(agent, t));
        const r = await ask(msgs, { tools: LAB_TOOLS });
        const m = r.choices[0]!.message;
        if (!m.tool_calls?.length) continue;
        calls++;
        assert.equal(r.choices[0]!.finish_reason, 'tool_calls');
        const call = m.tool_calls[0]!;
        assert.equal(call.type, 'function');
        if (call.type !== 'function') continue;
        const tool = LAB_TOOLS.find((x) => x.function.name === call.function.name);
        assert.ok(tool, `unknown tool ${call.function.name}`);
        const args = JSON.parse(call.function.arguments) as Record<string, unknown>;
        for (const req of tool.function.parameters.required) assert.ok(typeof args[req] === 'string' && (args[req] as string).length > 0, `missing ${req}`);
        const result = JSON.stringify([{ pmid: '12345678', title: `Evidence on ${t.goal.slice(0, 30)}` }]);
        const followUp = await ask([...msgs, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: result }], {
          tools: LAB_TOOLS,
        });
        const fm = followUp.choices[0]!.message;
        assert.ok(!fm.tool_calls?.length, 'after a tool result the agent answers');
        const parsed = await parseStructured(AGENT_OUTPUT[agent], fm.content ?? '');
        assert.ok(parsed.ok);
        if ((parsed.value as { supporting_papers: string[] }).supporting_papers.some((p) => p.includes('12345678'))) cited++;
      }
    }
    assert.ok(calls >= TASKS.length * 3 * 0.25, `too few tool calls: ${calls}`);
    assert.equal(cited, calls, 'every answer after a tool call cites the tool result');
  });

  it('calls a lookup tool with a protein name found in the task', async () => {
    const t: LabTask = { id: 'x', goal: 'Does APOE4 change amyloid-beta clearance in ageing mice?', context: 'APOE4 carriers show more amyloid-beta. TREM2 matters too.', decision: 'yes' };
    const r = await ask(agentMessages('Geneticist', taskBlock(t)), { tools: LAB_TOOLS, tool_choice: { type: 'function', function: { name: 'protein_lookup' } } });
    const call = r.choices[0]!.message.tool_calls?.[0];
    assert.ok(call && call.type === 'function');
    assert.deepEqual(JSON.parse(call.function.arguments), { name: 'APOE4' });
    const none = await ask(agentMessages('Geneticist', taskBlock(t)), { tools: LAB_TOOLS, tool_choice: 'none' });
    assert.equal(none.choices[0]!.message.tool_calls, undefined);
  });

  it('scores with exactly the judge keys asked for, higher for a better protocol', async () => {
    const keys = ['novelty', 'feasibility', 'impact', 'clarity', 'groundedness', 'efficiency'];
    let betterWins = 0;
    for (const t of TASKS.slice(0, 10)) {
      const sentences = t.context.split(/(?<=\.)\s+/).slice(0, 4);
      const good = JSON.stringify({
        title: `Controlled study: ${t.goal}`,
        steps: [
          ...sentences.map((s) => `Measure as described: ${s}`),
          'Randomise 120 participants 1:1 to intervention or placebo control; blind assessors.',
          'Primary endpoint at 12 weeks; power 0.8, alpha 0.05; pre-register the analysis.',
          'Replicate in an independent cohort of 60 with positive and negative controls.',
        ],
        budget_usd: 40000,
      });
      const poor = JSON.stringify({ title: 'Try something', steps: ['Do an experiment on random things'], budget_usd: 900000 });
      const score = async (protocol: string): Promise<number> => {
        const r = await ask(judgeMessages(t, protocol, keys));
        const parsed = await parseStructured(judgeOutputSchema(keys), r.choices[0]!.message.content ?? '');
        assert.ok(parsed.ok, parsed.ok ? '' : parsed.error);
        const v = parsed.value as Record<string, unknown>;
        assert.deepEqual(Object.keys(v).sort(), [...keys, 'rationale'].sort());
        return keys.reduce((s, k) => s + (v[k] as number), 0);
      };
      if ((await score(good)) > (await score(poor))) betterWins++;
    }
    assert.equal(betterWins, 10);
    const custom = ['originality', 'rigour'];
    const r = await ask(judgeMessages(TASKS[0]!, '{"title":"x","steps":["a b c d"]}', custom));
    const v = extractJson(r.choices[0]!.message.content ?? '') as Record<string, unknown>;
    assert.deepEqual(Object.keys(v).sort(), ['originality', 'rationale', 'rigour']);
  });

  it('answers an unknown role briefly, and with JSON when the prompt lists keys', async () => {
    const text = await ask([
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: `${taskBlock(TASKS[1]!)}\n\nWhat do you think?` },
    ]);
    const plain = text.choices[0]!.message.content ?? '';
    assert.ok(plain.length > 20 && plain.length < 800, plain);
    assert.throws(() => JSON.parse(plain));
    const json = await ask([
      { role: 'system', content: '[agent: Summariser]\nSummarise.' },
      { role: 'user', content: `${taskBlock(TASKS[1]!)}\n\nReply in JSON with these keys: summary, confidence_note.` },
    ]);
    const v = extractJson(json.choices[0]!.message.content ?? '') as Record<string, unknown>;
    assert.deepEqual(Object.keys(v).sort(), ['confidence_note', 'summary']);
  });
});
