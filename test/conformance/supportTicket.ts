import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TraceStore } from '../../src/core/store/traceStore';
import type { RolloutRecord } from '../../src/core/store/types';
import type { SpanRecord } from '../../src/core/trace/span';
import type { RlRecord } from '../../src/core/train/export/adapters/rlAdapter';
import { cli, cliAsync, json, tempWorkspace, type CliResult, type RunDoc } from '../e2e/cliHelpers';
import { startOpenAIStub, type OpenAIStub, type StubReply, type StubRequest } from '../fakes/openaiStub';

/*
 * The conformance task every agent framework is held to: one support ticket,
 * one agent (Support), one tool lookup_customer(id), a final JSON answer and
 * an AIR rule on the tool. Whatever framework writes the agent, the lab must
 * make the same training rows of it: two model calls of Support, the first
 * asking for the tool (and credited its AIR reward), the second answering
 * with the tool's result in its prompt, both with the server's token ids.
 */

export const AGENT = 'Support';
export const TOOL = 'lookup_customer';
export const TICKET = { id: 'T-1', ticket: 'Customer C-17 cannot log in since the password reset.' } as const;
export const CUSTOMER_ID = 'C-17';
/** What lookup_customer returns for C-17: every framework's tool must return exactly this (as JSON). */
export const CUSTOMER = { id: 'C-17', plan: 'pro', status: 'locked' } as const;
/** The final answer the model gives once it has the tool's result. */
export const ANSWER = { queue: 'tech', customer: 'C-17', plan: 'pro' } as const;
export const SYSTEM_PROMPT =
  'You are Support. You triage one support ticket. Look the customer up with the lookup_customer tool first, then answer with one JSON object {"queue", "customer", "plan"}.';
export const AIR_RULE = { name: 'lookup_ok', when: 'tool.ok', tools: [TOOL], reward: 0.1 } as const;

/** The tool's JSON Schema, for frameworks that take one. */
export const TOOL_PARAMETERS = {
  type: 'object',
  properties: { id: { type: 'string', description: 'The customer id, e.g. C-17' } },
  required: ['id'],
  additionalProperties: false,
} as const;

type WireMessage = { role: string; content?: unknown; tool_calls?: unknown };

/**
 * The model, as the OpenAI-compatible test server plays it (vLLM's quirks:
 * unique tool-call ids, token ids when asked): a conversation with no tool
 * result yet gets the tool call; one with the tool's result gets the answer.
 */
export function ticketModel(req: StubRequest): StubReply {
  const messages = (req.body.messages ?? []) as WireMessage[];
  const hasResult = messages.some((m) => m.role === 'tool' || (m.role === 'user' && JSON.stringify(m.content ?? '').includes('"plan"')));
  if (hasResult) return { content: JSON.stringify(ANSWER) };
  return { toolCalls: [{ name: TOOL, arguments: { id: CUSTOMER_ID } }] };
}

export function startTicketServer(): Promise<OpenAIStub> {
  return startOpenAIStub({ server: 'vllm', replies: ticketModel });
}

/** The reward module: 1 when the final output is the expected JSON answer, else 0. */
const REWARD_MODULE = `
export default function ticketAnswered({ task, outcome }) {
  let got = null;
  try { got = JSON.parse(outcome.finalOutput ?? ''); } catch { got = null; }
  const gold = task.expected;
  const ok = got !== null && typeof got === 'object' && Object.keys(gold).every((k) => got[k] === gold[k]);
  return { reward: ok ? 1 : 0, breakdown: { answer: ok ? 1 : 0 }, info: ok ? 'answered' : 'wrong or no answer: ' + String(outcome.finalOutput).slice(0, 200) };
}
`;

/** lab.json's graph block: a LangGraph.js module, or a command run once per rollout. */
export type TicketGraph =
  | { kind: 'module'; module: string; export?: string }
  | { kind: 'command'; command: string[]; cwd?: string; env?: Record<string, string>; timeoutMs?: number };

/**
 * A workspace with the ticket lab: one model (the test server), the agent
 * Support with its prompt, the one-ticket dataset (train split), the reward
 * module and the AIR rule. `files` are written relative to the workspace
 * (a graph module, an agent program).
 */
export function ticketLab(graph: TicketGraph, serverUrl: string, files: Record<string, string> = {}): string {
  const ws = tempWorkspace();
  const labDir = join(ws, '.rollout-lab');
  mkdirSync(join(labDir, 'prompts'), { recursive: true });
  mkdirSync(join(ws, 'data'), { recursive: true });
  writeFileSync(join(labDir, 'prompts', `${AGENT}.md`), `${SYSTEM_PROMPT}\n`);
  // The ticket is the train split's one task; a second ticket makes the val split (a split cannot be empty).
  const val = { id: 'T-2', ticket: 'Customer C-17 asks for an invoice copy.', gold: { queue: 'bill', customer: 'C-17', plan: 'pro' } };
  writeFileSync(join(ws, 'data', 'tickets.jsonl'), `${JSON.stringify({ ...TICKET, gold: ANSWER })}\n${JSON.stringify(val)}\n`);
  writeFileSync(join(ws, 'reward.mjs'), REWARD_MODULE);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(ws, rel, '..'), { recursive: true });
    writeFileSync(join(ws, rel), text);
  }
  const config = {
    version: 1,
    models: { main: { baseUrl: serverUrl, model: 'served-model', temperature: 0, maxTokens: 128, logprobs: true, tokenIds: true, maxRetries: 0 } },
    agents: { [AGENT]: { model: 'main', prompt: `prompts/${AGENT}.md`, trainable: true } },
    graph: graph.kind === 'command' ? { timeoutMs: 120_000, ...graph } : graph,
    datasets: { tickets: { path: 'data/tickets.jsonl', format: 'jsonl', trainFraction: 0.5, fields: { goal: 'ticket', expected: 'gold' } } },
    reward: { module: 'reward.mjs', judge: { model: 'main' }, criteria: {} },
    air: [AIR_RULE],
    runner: { concurrency: 1, samples: 1, seed: 7, maxTurns: 6, dataset: 'tickets' },
  };
  writeFileSync(join(labDir, 'lab.json'), JSON.stringify(config, null, 2));
  return ws;
}

export interface TicketResult {
  run: RunDoc;
  rollout: RolloutRecord;
  spans: SpanRecord[];
  rl: RlRecord[];
  sft: Array<{ messages: Array<Record<string, unknown>>; metadata?: Record<string, unknown> } & Record<string, unknown>>;
  /** The CLI's output of each step, for failure messages. */
  log: string;
}

function rows<T>(file: string): T[] {
  const text = readFileSync(file, 'utf8').trim();
  return text ? text.split('\n').map((l) => JSON.parse(l) as T) : [];
}

function step(name: string, r: CliResult): string {
  return `$ ${name} (exit ${r.code})\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-4000)}`;
}

/**
 * Runs the ticket as a user would: `run` (the test server answers from this
 * process, so the CLI runs in its own), then `export --format rl` and
 * `--format sft` of everything stored. Returns the stored rollout and spans
 * and the rows.
 */
export async function runAndExport(ws: string, env: NodeJS.ProcessEnv = {}): Promise<TicketResult> {
  const runResult = await cliAsync(['run', '--workspace', ws, '--split', 'train', '--json'], env).done;
  let log = step('run', runResult);
  const run = json<RunDoc>(runResult);
  const store = await TraceStore.open(ws, { readOnly: true });
  let rollout: RolloutRecord;
  let spans: SpanRecord[];
  try {
    const listed = store.listRollouts({ runId: run.runId }).rollouts;
    assert.equal(listed.length, 1, `one rollout stored\n${log}`);
    rollout = listed[0]!;
    spans = store.getSpans(rollout.id);
  } finally {
    await store.close();
  }
  const out: Record<'rl' | 'sft', string> = { rl: join(ws, 'exports', 'rl.jsonl'), sft: join(ws, 'exports', 'sft.jsonl') };
  for (const format of ['rl', 'sft'] as const) {
    const r = cli(['export', '--workspace', ws, '--format', format, '--split', 'all', '--out', out[format], '--json']);
    log += `\n${step(`export --format ${format}`, r)}`;
    assert.equal(r.code, 0, `export --format ${format} failed\n${log}`);
  }
  return { run, rollout, spans, rl: rows<RlRecord>(out.rl), sft: rows(out.sft), log };
}

function spanSummary(spans: readonly SpanRecord[]): string {
  return spans
    .map((s) => `${s.kind} ${s.name} agent=${String(s.attributes['gen_ai.agent.name'] ?? '-')} id=${s.spanId} parent=${s.parentSpanId ?? '-'}`)
    .join('\n');
}

/**
 * The rows every framework must give for the ticket: exactly two RL rows of
 * Support — the tool call with its AIR credit, then the answer with the tool
 * result in its prompt — with token ids, and the same two calls as SFT rows.
 */
export function assertTicketRows(result: TicketResult): void {
  const { rollout, spans, rl, sft } = result;
  const why = `\n--- spans ---\n${spanSummary(spans)}\n--- log ---\n${result.log}`;
  assert.equal(rollout.status, 'succeeded', `the rollout succeeded: ${rollout.error ?? ''}${why}`);
  assert.equal(rollout.finalReward, 1, `the final answer was scored right${why}`);
  assert.equal(spans.filter((s) => s.kind === 'llm').length, 2, `one llm span per model call (2 calls), none twice${why}`);
  const tools = spans.filter((s) => s.kind === 'tool');
  assert.equal(tools.length, 1, `one tool span${why}`);
  assert.equal(tools[0]!.attributes['gen_ai.tool.name'], TOOL, `the tool span names ${TOOL}${why}`);
  assert.deepEqual(
    rollout.agents.map((a) => a.agent),
    [AGENT],
    `the only agent listed is ${AGENT} (framework wrapper spans are not agents): ${JSON.stringify(rollout.agents)}${why}`,
  );
  assert.equal(rollout.agents[0]!.llmCalls, 2, `${AGENT} made 2 model calls${why}`);
  assert.equal(rollout.agents[0]!.toolCalls, 1, `${AGENT} made 1 tool call${why}`);

  assert.equal(rl.length, 2, `two RL rows (one per model call): ${JSON.stringify(rl.map((r) => [r.agent, r.call]))}${why}`);
  assert.deepEqual(rl.map((r) => r.agent), [AGENT, AGENT], `both rows are ${AGENT}'s${why}`);
  const [ask, answer] = rl as [RlRecord, RlRecord];
  for (const r of rl) {
    assert.ok(r.messages.some((m) => m.role === 'user' && String(m.content).includes(TICKET.ticket)), `row ${r.call}'s prompt holds the ticket as a user message${why}`);
  }
  assert.equal(ask.completion.tool_calls.length, 1, `row 0 asks for the tool${why}`);
  const call = ask.completion.tool_calls[0]!;
  assert.equal(call.function.name, TOOL);
  assert.deepEqual(JSON.parse(call.function.arguments), { id: CUSTOMER_ID });
  assert.equal(ask.air, AIR_RULE.reward, `row 0 (the call that asked for the tool) carries the AIR reward${why}`);
  assert.equal(answer.air, 0, `row 1 carries no AIR reward${why}`);
  assert.deepEqual(JSON.parse(answer.completion.text), ANSWER, `row 1 is the final answer${why}`);
  assert.ok(answer.messages.some((m) => m.role === 'system' && String(m.content).includes('You are Support')), `row 1's prompt has the system prompt${why}`);
  const toolResult = answer.messages.find((m) => m.role === 'tool');
  assert.ok(toolResult, `row 1's prompt holds the tool's result as a tool message${why}`);
  assert.deepEqual(JSON.parse(String(toolResult.content)), CUSTOMER, `the tool message is lookup_customer's result${why}`);
  assert.equal(toolResult.tool_call_id, call.id, `the tool message answers row 0's tool call${why}`);
  for (const r of rl) {
    assert.ok(Array.isArray(r.token_ids) && r.token_ids.length > 0, `row ${r.call} has the server's token ids${why}`);
    assert.ok(Array.isArray(r.logprobs) && r.logprobs.length === r.token_ids!.length, `row ${r.call} has one logprob per token${why}`);
  }
  assert.equal(sft.length, 2, `two SFT rows${why}`);
}
