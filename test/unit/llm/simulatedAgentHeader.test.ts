import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { HumanMessage } from '@langchain/core/messages';
import { AGENT_HEADER } from '../../../src/core/llm/client';
import { RoutedChatModel } from '../../../src/core/llm/routedChatModel';
import { startOpenAIStub, type OpenAIStub } from '../../fakes/openaiStub';
import { resolvedAt } from './tracedCall';

let stub: OpenAIStub | null = null;
afterEach(async () => {
  await stub?.close();
  stub = null;
});

describe(`the ${AGENT_HEADER} header`, () => {
  it('names the calling agent to the simulated endpoint, and is never sent to a real server', async () => {
    stub = await startOpenAIStub({ replies: () => ({ content: 'ok' }) });
    await new RoutedChatModel({ resolved: resolvedAt(stub.url, { simulated: true }), agent: 'PeerReviewer' }).invoke([new HumanMessage('hi')]);
    await new RoutedChatModel({ resolved: resolvedAt(stub.url, { simulated: false }), agent: 'PeerReviewer' }).invoke([new HumanMessage('hi')]);
    assert.equal(stub.requests[0]!.headers[AGENT_HEADER], 'PeerReviewer');
    assert.equal(stub.requests[1]!.headers[AGENT_HEADER], undefined);
  });
});
