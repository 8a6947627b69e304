import { test, before, after } from 'node:test';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../e2e/cliHelpers';
import type { OpenAIStub } from '../fakes/openaiStub';
import { assertGraphOfAgents, assertOneSpanPerCall } from './mergedCalls';
import { assertTicketRows, runAndExport, startTicketServer, ticketLab } from './supportTicket';

/*
 * The support ticket written with LangChain.js (ChatOpenAI + bindTools, a tool
 * loop by hand) traced by OpenInference's LangChain instrumentation,
 * run as a command agent: its model calls come through the lab's recording
 * gateway, its spans (OpenInference, over OTLP) through the receiver. Each call
 * is recorded twice (the gateway's record and the framework's LLM span) and must
 * become one llm span and one training row.
 */

let server: OpenAIStub;
let ws: string;

before(async () => {
  server = await startTicketServer();
  ws = ticketLab({ kind: 'command', command: [process.execPath, join(REPO, 'test/conformance/agents/langchainSupport.mjs')] }, server.url);
});
after(async () => {
  await server.close();
  rmSync(ws, { recursive: true, force: true });
});

test('the ticket gives the same training rows as every framework: two calls of Support, the tool call with its AIR credit, token ids', async () => {
  const result = await runAndExport(ws);
  assertTicketRows(result);
  assertOneSpanPerCall(result, 'response_id');
  await assertGraphOfAgents(ws);
});
