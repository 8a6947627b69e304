// A command agent in Node.js, written as people write agents: the `openai`
// package for model calls and the OpenTelemetry JS SDK with its OTLP exporter
// for spans. Rollout Lab starts it once per rollout with the task as JSON on
// standard input; OPENAI_BASE_URL (read by the openai client) points at the
// lab's recording gateway, OTEL_EXPORTER_OTLP_ENDPOINT and
// OTEL_RESOURCE_ATTRIBUTES (read by the exporter and the env detector) at the
// lab's OTLP receiver and the rollout's ids. The final output is one JSON
// object on standard output.
import { readFileSync, existsSync } from 'node:fs';
import OpenAI from 'openai';
import { context, propagation, trace, SpanStatusCode } from '@opentelemetry/api';
import { NodeTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';

const QUEUES = ['bill', 'ship', 'tech', 'user'];
const DEFAULT_PROMPTS = {
  Router: 'You route support tickets. Answer with one word: bill, ship, tech or user.',
  Responder: 'You acknowledge support tickets in one short sentence that names the queue.',
};

const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'ticket-agent-node' }).merge(detectResources({ detectors: [envDetector] })),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
});
provider.register();
const tracer = trace.getTracer('ticket-agent');
const openai = new OpenAI();

/** The lab's prompt per agent (prompt edits and optimisation reach this program), else our own. */
function prompts() {
  const file = process.env.ROLLOUT_LAB_PROMPTS_FILE;
  return file && existsSync(file) ? { ...DEFAULT_PROMPTS, ...JSON.parse(readFileSync(file, 'utf8')) } : DEFAULT_PROMPTS;
}

/**
 * A model call inside a GenAI `chat` span. The trace context goes to the gateway: its record of the call is a
 * child of this span, and the lab makes the two one span (the gateway's tokens and logprobs, this span's place).
 */
async function chat(agent, messages) {
  return tracer.startActiveSpan(`chat ${agent}`, async (span) => {
    span.setAttributes({
      'gen_ai.operation.name': 'chat',
      'gen_ai.agent.name': agent,
      'gen_ai.request.model': agent,
      'gen_ai.input.messages': JSON.stringify(messages.map((m) => ({ role: m.role, parts: [{ type: 'text', content: m.content }] }))),
    });
    const headers = { 'X-Rollout-Lab-Agent': agent };
    propagation.inject(context.active(), headers);
    try {
      const completion = await openai.chat.completions.create({ model: agent, messages }, { headers });
      const text = completion.choices[0]?.message?.content ?? '';
      span.setAttributes({
        'gen_ai.response.id': completion.id,
        'gen_ai.response.model': completion.model,
        'gen_ai.response.finish_reasons': [completion.choices[0]?.finish_reason ?? 'stop'],
        'gen_ai.usage.input_tokens': completion.usage?.prompt_tokens ?? 0,
        'gen_ai.usage.output_tokens': completion.usage?.completion_tokens ?? 0,
        'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: text }] }]),
      });
      return text;
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: String(err?.message ?? err) });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** An agent's turn: an `invoke_agent` span around its work. */
function invokeAgent(agent, work) {
  return tracer.startActiveSpan(`invoke_agent ${agent}`, { attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': agent } }, async (span) => {
    try {
      return await work();
    } finally {
      span.end();
    }
  });
}

/** The tool: the queue named in the Router's answer, or null; an `execute_tool` span. */
function normalizeQueue(answer) {
  return tracer.startActiveSpan('execute_tool normalize_queue', (span) => {
    const words = answer.split(/\s+/).map((w) => w.replace(/[.,:;!"']/g, '').toLowerCase());
    const queue = words.find((w) => QUEUES.includes(w)) ?? null;
    span.setAttributes({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'normalize_queue',
      'gen_ai.agent.name': 'Router',
      'gen_ai.tool.call.arguments': JSON.stringify({ answer }),
      'gen_ai.tool.call.result': JSON.stringify({ queue }),
    });
    if (!queue) span.setStatus({ code: SpanStatusCode.ERROR, message: 'no queue named' });
    span.end();
    return queue;
  });
}

const task = JSON.parse(readFileSync(0, 'utf8'));
const p = prompts();
try {
  const queue = await invokeAgent('Router', async () =>
    normalizeQueue(await chat('Router', [{ role: 'system', content: p.Router }, { role: 'user', content: task.goal }])),
  );
  const reply = await invokeAgent('Responder', () =>
    chat('Responder', [{ role: 'system', content: p.Responder }, { role: 'user', content: `${task.goal}\nQueue: ${queue ?? 'unknown'}` }]),
  );
  const failures = queue ? [] : [{ agent: 'Router', error: 'no queue in its answer' }];
  await provider.shutdown();
  process.stdout.write(`${JSON.stringify({ final_output: queue, decision: queue, turns: 2, failures, reply })}\n`);
} catch (err) {
  await provider.shutdown();
  console.error(`ticket agent failed: ${err?.stack ?? err}`);
  process.exit(1);
}
