import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { credentials, makeGenericClientConstructor, status, type ServiceError } from '@grpc/grpc-js';
import { Attr } from '../../../src/core/trace/span';
import { startOtlpReceiver, OtlpPortError } from '../../../src/core/otlp/otlpReceiver';
import { nestedEmptyArraysRequest } from './hostilePayloads';
import { receiverFixture, sdkFixture, type ReceiverFixture } from './helpers';

describe('OTLP/gRPC receiver with the real OpenTelemetry gRPC exporter', () => {
  let fx: ReceiverFixture;
  beforeEach(async () => {
    fx = await receiverFixture({ grpc: true });
  });
  afterEach(async () => {
    await fx.close();
  });

  it('stores spans exported over gRPC (gzip) as a rollout, in the same store as OTLP/HTTP', async () => {
    assert.match(fx.receiver.grpcUrl ?? '', /^http:\/\/127\.0\.0\.1:\d+$/);
    const sdk = sdkFixture(fx.receiver.grpcUrl!, { protocol: 'grpc', gzip: true, resource: { 'rollout_lab.run.id': 'run-grpc', 'rollout_lab.task.id': 'task-g' } });
    const agent = sdk.span('invoke_agent Planner', { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'Planner' });
    const tool = sdk.span('execute_tool search', { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'search', 'gen_ai.tool.call.result': 'found' }, agent);
    tool.end();
    agent.end();
    await sdk.shutdown();
    const { rollouts } = fx.store.listRollouts({ runId: 'run-grpc' });
    assert.equal(rollouts.length, 1);
    assert.equal(rollouts[0]!.taskId, 'task-g');
    assert.equal(rollouts[0]!.status, 'succeeded');
    const spans = fx.store.getSpans(rollouts[0]!.id);
    const t = spans.find((s) => s.kind === 'tool');
    assert.equal(t?.attributes[Attr.toolName], 'search');
    assert.equal(t?.attributes[Attr.agentName], 'Planner');
  });

  it('answers bytes that are no ExportTraceServiceRequest with INVALID_ARGUMENT and stores nothing', async () => {
    const Client = makeGenericClientConstructor(
      { Export: { path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export', requestStream: false, responseStream: false, requestSerialize: (b: Buffer) => b, requestDeserialize: (b: Buffer) => b, responseSerialize: (b: Buffer) => b, responseDeserialize: (b: Buffer) => b } },
      'TraceService',
    );
    const client = new Client(fx.receiver.grpcUrl!.replace('http://', ''), credentials.createInsecure());
    try {
      const err = await new Promise<ServiceError | null>((resolve) =>
        (client as unknown as { Export(b: Buffer, cb: (e: ServiceError | null) => void): void }).Export(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01]), (e) => resolve(e)),
      );
      assert.equal(err?.code, status.INVALID_ARGUMENT);
      assert.equal(fx.store.listRollouts().rollouts.length, 0);
      assert.ok(fx.logs.some((l) => /gRPC Export .* refused \(INVALID_ARGUMENT\)/.test(l)), fx.logs.join('\n'));
    } finally {
      client.close();
    }
  });
});

it('a gRPC Export over the value budget is RESOURCE_EXHAUSTED naming the limit, and stores nothing', async () => {
  const fx = await receiverFixture({ grpc: true });
  const Client = makeGenericClientConstructor(
    { Export: { path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export', requestStream: false, responseStream: false, requestSerialize: (b: Buffer) => b, requestDeserialize: (b: Buffer) => b, responseSerialize: (b: Buffer) => b, responseDeserialize: (b: Buffer) => b } },
    'TraceService',
  );
  const client = new Client(fx.receiver.grpcUrl!.replace('http://', ''), credentials.createInsecure());
  try {
    const err = await new Promise<ServiceError | null>((resolve) =>
      (client as unknown as { Export(b: Buffer, cb: (e: ServiceError | null) => void): void }).Export(nestedEmptyArraysRequest(20_000, 80), (e) => resolve(e)),
    );
    assert.equal(err?.code, status.RESOURCE_EXHAUSTED);
    assert.match(err?.details ?? '', /more than 1000000 values .*maxValuesPerRequest/);
    assert.equal(fx.store.stats().spans, 0);
  } finally {
    client.close();
    await fx.close();
  }
});

it('a gRPC port in use is an OtlpPortError that names the port', async () => {
  const busy = createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
  const port = (busy.address() as { port: number }).port;
  try {
    const { TraceStore } = await import('../../../src/core/store/traceStore');
    const { tempWorkspace } = await import('../store/helpers/storeFixtures');
    const ws = tempWorkspace();
    const store = await TraceStore.open(ws.dir);
    try {
      await assert.rejects(startOtlpReceiver({ store, port: 0, grpcPort: port }), (e: unknown) => e instanceof OtlpPortError && e.port === port);
    } finally {
      await store.close();
      ws.cleanup();
    }
  } finally {
    busy.close();
  }
});
