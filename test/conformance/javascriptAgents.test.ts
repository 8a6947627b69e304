import { test, after } from 'node:test';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../e2e/cliHelpers';
import { assertGraphOfAgents, assertOneSpanPerCall } from './mergedCalls';
import { assertTicketRows, runAndExport, startTicketServer, ticketLab } from './supportTicket';

/*
 * The support ticket written with JavaScript agent frameworks from their real
 * packages, each run as a command agent: its model calls come through the
 * lab's recording gateway, its own spans over OTLP through the receiver. Each
 * call is recorded twice (the gateway's record and the framework's LLM span)
 * and must become one llm span and one training row, inside the agent's step.
 */
const FRAMEWORKS = [
  // ChatOpenAI + bindTools, a tool loop by hand, traced by OpenInference's LangChain instrumentation.
  { name: 'LangChain.js with OpenInference', agent: 'langchainSupport.mjs' },
  // An Agent with a function tool, on chat completions, traced by OpenInference's processor for the SDK.
  { name: 'the OpenAI Agents SDK for JS with OpenInference', agent: 'openaiAgentsSupport.mjs' },
  // `ai` with @ai-sdk/openai-compatible, generateText with a tool and experimental_telemetry (functionId names the agent).
  { name: 'the Vercel AI SDK with its telemetry', agent: 'vercelAi.mjs' },
];

const server = startTicketServer();
const workspaces: string[] = [];
after(async () => {
  await (await server).close();
  for (const ws of workspaces) rmSync(ws, { recursive: true, force: true });
});

for (const f of FRAMEWORKS) {
  test(`${f.name}: two calls of Support, the tool call with its AIR credit, token ids, one span per call`, async () => {
    const ws = ticketLab({ kind: 'command', command: [process.execPath, join(REPO, 'test/conformance/agents', f.agent)] }, (await server).url);
    workspaces.push(ws);
    const result = await runAndExport(ws);
    assertTicketRows(result);
    assertOneSpanPerCall(result, 'response_id');
    await assertGraphOfAgents(ws);
  });
}
