// The support-ticket agent written with the OpenAI Agents SDK for JS, on the
// chat completions API (the lab's gateway speaks it), traced by OpenInference's
// processor for the SDK and exported over OTLP, as its README shows. The lab
// starts it once per rollout with the task on standard input.
import { readFileSync } from 'node:fs';
import * as agents from '@openai/agents';
import { Agent, OpenAIChatCompletionsModel, getGlobalTraceProvider, run, tool } from '@openai/agents';
import OpenAI from 'openai';
import { NodeTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { OpenAIAgentsInstrumentation } from '@arizeai/openinference-instrumentation-openai-agents';
import { z } from 'zod';

const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'support-openai-agents' }).merge(detectResources({ detectors: [envDetector] })),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
});
provider.register();
new OpenAIAgentsInstrumentation({ tracerProvider: provider }).manuallyInstrument(agents);

const CUSTOMERS = { 'C-17': { id: 'C-17', plan: 'pro', status: 'locked' } };
const lookupCustomer = tool({
  name: 'lookup_customer',
  description: 'Looks a customer up by id: their plan and account status.',
  parameters: z.object({ id: z.string() }),
  execute: async ({ id }) => JSON.stringify(CUSTOMERS[id] ?? { id, error: 'no such customer' }),
});

// The lab's prompt for Support (prompt edits and optimisation reach the agent through it).
const promptsFile = process.env.ROLLOUT_LAB_PROMPTS_FILE;
const SYSTEM = (promptsFile && JSON.parse(readFileSync(promptsFile, 'utf8')).Support) || 'You triage support tickets. Look the customer up, then answer with JSON {"queue","customer","plan"}.';
const baseURL = JSON.parse(process.env.ROLLOUT_LAB_AGENT_BASE_URLS ?? '{}').Support ?? process.env.OPENAI_BASE_URL;
const support = new Agent({
  name: 'Support',
  instructions: SYSTEM,
  tools: [lookupCustomer],
  model: new OpenAIChatCompletionsModel(new OpenAI({ baseURL }), 'Support'),
});

const task = JSON.parse(readFileSync(0, 'utf8'));
const finish = async () => {
  await getGlobalTraceProvider().forceFlush();
  await provider.shutdown();
};
try {
  const result = await run(support, task.ticket ?? task.goal, { maxTurns: 4 });
  await finish();
  process.stdout.write(`${JSON.stringify({ final_output: JSON.parse(result.finalOutput) })}\n`);
} catch (err) {
  await finish();
  console.error(`support agent failed: ${err?.stack ?? err}`);
  process.exit(1);
}
