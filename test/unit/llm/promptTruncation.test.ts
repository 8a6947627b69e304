import assert from 'node:assert/strict';
import { join } from 'node:path';
import { afterEach, before, describe, it } from 'node:test';
import { HumanMessage, SystemMessage } from '@langchain/core/messages';
// The tokenizers of OpenAI's models (o200k: GPT-4o; cl100k: GPT-4, close to Llama 3's and Qwen's), to check the bound against.
import { getEncoding } from 'js-tiktoken';
import { loadDataset, type Task } from '../../../src/core/data/dataset';
import { roleMarker, type ResearchLabAgent } from '../../../src/core/graph/researchLab/outputs';
import { JUDGE_MARKER } from '../../../src/core/reward/judgeSchema';
import { DEFAULT_PROMPTS } from '../../../src/core/graph/researchLab/prompts';
import { estimatePromptTokens, estimateTextTokens, promptTruncation } from '../../../src/core/llm/promptTruncation';
import { RoutedChatModel } from '../../../src/core/llm/routedChatModel';
import { startSimServer } from '../../../src/core/sim/simServer';
import { Attr } from '../../../src/core/trace/span';
import { startOpenAIStub, type OpenAIStub } from '../../fakes/openaiStub';
import { resolvedAt, traced } from './tracedCall';

const PUBMEDQA = join(__dirname, '..', '..', '..', '..', 'shared', 'data', 'pubmedqa', 'ori_pqal.json');
const encodings = [getEncoding('o200k_base'), getEncoding('cl100k_base')];
const realTokens = (text: string): number => Math.min(...encodings.map((e) => e.encode(text).length));

let tasks: Task[];
before(async () => {
  tasks = await loadDataset(PUBMEDQA, 'pubmedqa');
});

let stub: OpenAIStub | null = null;
afterEach(async () => {
  await stub?.close();
  stub = null;
});

/** A research-lab agent's first call on a task, as the graph writes it. */
function agentPrompt(agent: ResearchLabAgent, task: Task): string[] {
  return [`${roleMarker(agent)}\n${DEFAULT_PROMPTS[agent]}`, `Research question: ${task.goal}\n\nContext:\n${task.context}\n\nPropose your hypothesis.`];
}

describe('the prompt-size estimate', () => {
  it('is a lower bound of real tokenizers on every PubMedQA prompt, and not far below them', () => {
    let lowest = Infinity;
    for (const task of tasks) {
      for (const agent of ['Geneticist', 'ProtocolDesigner'] as const) {
        const text = agentPrompt(agent, task).join('\n');
        const ratio = estimateTextTokens(text) / realTokens(text);
        assert.ok(ratio <= 1, `task ${task.id} ${agent}: estimate ${estimateTextTokens(text)} over ${realTokens(text)} real tokens`);
        lowest = Math.min(lowest, ratio);
      }
    }
    // A cut to ~60 % (1,300 → 763 tokens) must stay visible under the 80 % threshold.
    assert.ok(lowest > 0.7, `estimate as low as ${lowest.toFixed(2)} of the real count`);
  });

  it('is a lower bound on tool results and answers written as JSON', () => {
    for (const task of tasks.slice(0, 200)) {
      const json = JSON.stringify([{ pmid: task.id, title: task.goal, abstract: task.context.slice(0, 600) }], null, 2);
      assert.ok(estimateTextTokens(json) <= realTokens(json), `task ${task.id}`);
    }
  });
});

describe('a prompt the server cut to fit its context', () => {
  /** About 1,300 real tokens: the protocol designer's system prompt and sentences of the first tasks' contexts. */
  function longPrompt(): [SystemMessage, HumanMessage] {
    const system = `${roleMarker('ProtocolDesigner')}\n${DEFAULT_PROMPTS.ProtocolDesigner}`;
    const sentences = tasks.flatMap((t) => t.context.split(/(?<=\.)\s+/));
    let user = `Research question: ${tasks[0]!.goal}\n\nContext:\n`;
    for (const sentence of sentences) {
      if (realTokens(`${system}\n${user}`) >= 1_300) break;
      user += `${sentence} `;
    }
    return [new SystemMessage(system), new HumanMessage(user)];
  }

  it('is flagged on the llm span when usage.prompt_tokens is well under the estimate (≈1,300 → 763, HTTP 200)', async () => {
    const prompt = longPrompt();
    const real = realTokens(prompt.map((m) => m.text).join('\n'));
    assert.ok(real >= 1_300 && real < 1_400, `the prompt has ${real} tokens`);
    stub = await startOpenAIStub({ server: 'llama.cpp', quirks: { contextTokens: 763 }, replies: [{ content: 'ok' }] });
    const { llm } = await traced(new RoutedChatModel({ resolved: resolvedAt(stub.url) }), prompt);
    const span = llm[0]!;
    assert.equal(span.attributes[Attr.inputTokens], 763);
    assert.equal(span.attributes[Attr.promptTruncated], true);
    const estimate = span.attributes[Attr.promptEstimatedTokens] as number;
    assert.ok(estimate > 763 / 0.8 && estimate <= real, `estimate ${estimate}`);
    assert.equal(span.status, 'ok');
  });

  it('is not flagged when the whole prompt was read', async () => {
    stub = await startOpenAIStub({ server: 'llama.cpp', replies: () => ({ content: 'ok' }) });
    const model = new RoutedChatModel({ resolved: resolvedAt(stub.url) });
    const { llm } = await traced(model, longPrompt());
    assert.equal(llm[0]!.attributes[Attr.promptTruncated], undefined);
    assert.ok((llm[0]!.attributes[Attr.promptEstimatedTokens] as number) > 900);
    for (const task of tasks.slice(0, 20)) {
      const [system, user] = agentPrompt('Geneticist', task);
      const { llm: spans } = await traced(model, [new SystemMessage(system!), new HumanMessage(user!)]);
      assert.equal(spans[0]!.attributes[Attr.promptTruncated], undefined, `task ${task.id}`);
    }
  });

  it("is never flagged on the simulator's answers", async () => {
    const sim = await startSimServer({ seed: 5 });
    try {
      const model = new RoutedChatModel({ resolved: resolvedAt(sim.url, { simulated: true }) });
      for (const task of tasks.slice(0, 10)) {
        const [system, user] = agentPrompt('Geneticist', task);
        const { llm } = await traced(model, [new SystemMessage(system!), new HumanMessage(user!)]);
        assert.equal(llm[0]!.attributes[Attr.promptTruncated], undefined, `task ${task.id}`);
      }
      const judged = await traced(model, [new SystemMessage(`${JUDGE_MARKER}\nScore it.`), new HumanMessage(`Protocol to score:\n${tasks[0]!.context}`)]);
      assert.equal(judged.llm[0]!.attributes[Attr.promptTruncated], undefined);
    } finally {
      await sim.close();
    }
  });

  it("trusts the server's own word (llama.cpp's `truncated` in a verbose answer)", async () => {
    stub = await startOpenAIStub({ server: 'llama.cpp', replies: [{ content: 'ok', extra: { __verbose: { truncated: true } } }] });
    const { llm } = await traced(new RoutedChatModel({ resolved: resolvedAt(stub.url) }), [new HumanMessage('hi')]);
    assert.equal(llm[0]!.attributes[Attr.promptTruncated], true);
  });

  it('reads nothing into a missing or zero prompt count, or a short prompt', () => {
    const messages = [{ role: 'user' as const, content: 'Short question about APOE4 and amyloid-beta in older adults?' }];
    const estimate = estimatePromptTokens(messages);
    assert.equal(promptTruncation(estimate, undefined).truncated, false);
    assert.equal(promptTruncation(estimate, 0).truncated, false);
    assert.equal(promptTruncation(estimate, 3).truncated, false, 'a few tokens of template difference on a short prompt');
    assert.equal(promptTruncation(1300, 763).truncated, true);
    assert.equal(promptTruncation(1300, 1100).truncated, false);
  });
});
