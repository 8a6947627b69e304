import { after, before, test } from 'node:test';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../e2e/cliHelpers';
import type { OpenAIStub } from '../fakes/openaiStub';
import { assertTicketRows, runAndExport, startTicketServer, ticketLab } from './supportTicket';

/*
 * The support ticket written with the Vercel AI SDK (`ai` with
 * @ai-sdk/openai-compatible, `generateText`, a tool, experimental_telemetry)
 * as a command agent: its model calls go through the recording gateway, its
 * own spans (ai.generateText, .doGenerate, ai.toolCall) to the OTLP receiver.
 * The SDK's model-call spans carry the server's response id, so they are one
 * call with the gateway's record; ai.toolCall is the tool span the AIR rule
 * rewards; functionId names the agent.
 */

let server: OpenAIStub;
let ws: string;
before(async () => {
  server = await startTicketServer();
  ws = ticketLab({ kind: 'command', command: [process.execPath, join(REPO, 'test/conformance/agents/vercelAi.mjs')] }, server.url);
});
after(async () => {
  await server.close();
  rmSync(ws, { recursive: true, force: true });
});

test('Vercel AI SDK with its telemetry: two rows of Support, the tool call credited its AIR reward, token ids', async () => {
  assertTicketRows(await runAndExport(ws));
});
