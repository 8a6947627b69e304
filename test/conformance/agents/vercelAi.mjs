// The support-ticket agent written with the Vercel AI SDK, as its users write
// one: `generateText` with a tool, its own telemetry on
// (`experimental_telemetry`, functionId = the agent's name) and the
// OpenTelemetry JS SDK exporting over OTLP. The lab starts it once per
// rollout with the task on standard input; OPENAI_BASE_URL is the lab's
// recording gateway, OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_RESOURCE_ATTRIBUTES
// its OTLP receiver and the rollout's ids. The final JSON goes to stdout.
import { existsSync, readFileSync } from 'node:fs';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

const AGENT = 'Support';
const CUSTOMERS = { 'C-17': { id: 'C-17', plan: 'pro', status: 'locked' } };

const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'support-ticket-vercel' }).merge(detectResources({ detectors: [envDetector] })),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
});
provider.register();

/** The lab's prompt for the agent (so prompt edits reach this program). */
function systemPrompt() {
  const file = process.env.ROLLOUT_LAB_PROMPTS_FILE;
  const prompts = file && existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  if (!prompts[AGENT]) throw new Error(`no prompt for ${AGENT} in ROLLOUT_LAB_PROMPTS_FILE`);
  return prompts[AGENT];
}

const lab = createOpenAICompatible({ name: 'rollout-lab', baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
const lookupCustomer = tool({
  description: 'Look a customer up by id: their plan and account status.',
  inputSchema: jsonSchema({
    type: 'object',
    properties: { id: { type: 'string', description: 'The customer id, e.g. C-17' } },
    required: ['id'],
    additionalProperties: false,
  }),
  execute: async ({ id }) => CUSTOMERS[id] ?? { id, error: 'no such customer' },
});

const task = JSON.parse(readFileSync(0, 'utf8'));
try {
  const result = await generateText({
    model: lab(AGENT),
    system: systemPrompt(),
    prompt: task.goal,
    tools: { lookup_customer: lookupCustomer },
    stopWhen: stepCountIs(4),
    experimental_telemetry: { isEnabled: true, functionId: AGENT },
  });
  await provider.shutdown();
  process.stdout.write(`${JSON.stringify({ final_output: result.text, turns: result.steps.length })}\n`);
} catch (err) {
  await provider.shutdown();
  console.error(`vercel ai agent failed: ${err?.stack ?? err}`);
  process.exit(1);
}
