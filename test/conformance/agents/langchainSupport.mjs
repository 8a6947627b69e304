// The support-ticket agent written with LangChain.js alone (no LangGraph):
// ChatOpenAI with bindTools, a tool loop by hand, traced by OpenInference's
// LangChain instrumentation and exported over OTLP, as its README shows. The
// lab starts it once per rollout with the task on standard input; the agent's
// calls go to the lab's gateway (its per-agent base URL) and its spans to the
// lab's OTLP receiver. The agent's work runs inside a runnable named after
// the lab's agent, `Support` (OpenInference records it as a CHAIN span).
import { readFileSync } from 'node:fs';
import { NodeTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { LangChainInstrumentation } from '@arizeai/openinference-instrumentation-langchain';
import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { RunnableLambda } from '@langchain/core/runnables';
import { tool } from '@langchain/core/tools';
import { HumanMessage, SystemMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';

const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'support-langchain' }).merge(detectResources({ detectors: [envDetector] })),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
});
provider.register();
new LangChainInstrumentation({ tracerProvider: provider }).manuallyInstrument(CallbackManagerModule);

const CUSTOMERS = { 'C-17': { id: 'C-17', plan: 'pro', status: 'locked' } };
const lookupCustomer = tool(async ({ id }) => JSON.stringify(CUSTOMERS[id] ?? { id, error: 'no such customer' }), {
  name: 'lookup_customer',
  description: 'Looks a customer up by id: their plan and account status.',
  schema: z.object({ id: z.string() }),
});

// The lab's prompt for Support (prompt edits and optimisation reach the agent through it).
const promptsFile = process.env.ROLLOUT_LAB_PROMPTS_FILE;
const SYSTEM = (promptsFile && JSON.parse(readFileSync(promptsFile, 'utf8')).Support) || 'You triage support tickets. Look the customer up, then answer with JSON {"queue","customer","plan"}.';
const baseURL = JSON.parse(process.env.ROLLOUT_LAB_AGENT_BASE_URLS ?? '{}').Support ?? process.env.OPENAI_BASE_URL;
const model = new ChatOpenAI({ model: 'Support', temperature: 0, configuration: { baseURL } }).bindTools([lookupCustomer]);

// The runnable's config goes to every call inside it, so their runs (and spans) nest under `Support`.
const support = RunnableLambda.from(async (ticket, config) => {
  const messages = [
    new SystemMessage(SYSTEM),
    new HumanMessage(ticket),
  ];
  for (let turn = 0; turn < 4; turn++) {
    const reply = await model.invoke(messages, config);
    messages.push(reply);
    if (!reply.tool_calls?.length) return { answer: JSON.parse(String(reply.content)), turns: turn + 1 };
    for (const call of reply.tool_calls) messages.push(await lookupCustomer.invoke(call, config));
  }
  throw new Error('no final answer after 4 model calls');
}).withConfig({ runName: 'Support' });

const task = JSON.parse(readFileSync(0, 'utf8'));
try {
  const { answer, turns } = await support.invoke(task.ticket ?? task.goal);
  await provider.shutdown();
  process.stdout.write(`${JSON.stringify({ final_output: answer, turns })}\n`);
} catch (err) {
  await provider.shutdown();
  console.error(`support agent failed: ${err?.stack ?? err}`);
  process.exit(1);
}
