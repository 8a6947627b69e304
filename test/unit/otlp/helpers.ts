import { context, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { TraceStore } from '../../../src/core/store/traceStore';
import { startOtlpReceiver, type OtlpReceiver } from '../../../src/core/otlp/otlpReceiver';
import type { LiveRollouts } from '../../../src/core/trace/liveRollouts';
import { tempWorkspace } from '../store/helpers/storeFixtures';

export interface ReceiverFixture {
  store: TraceStore;
  receiver: OtlpReceiver;
  logs: string[];
  close(): Promise<void>;
}

/** A receiver on a free port over a real store in a temp workspace. */
export async function receiverFixture(opts: { live?: LiveRollouts; maxBodyBytes?: number; maxValuesPerRequest?: number; idleEndMs?: number; grpc?: boolean } = {}): Promise<ReceiverFixture> {
  const ws = tempWorkspace();
  const store = await TraceStore.open(ws.dir);
  const logs: string[] = [];
  const receiver = await startOtlpReceiver({ store, port: 0, live: opts.live, maxBodyBytes: opts.maxBodyBytes, maxValuesPerRequest: opts.maxValuesPerRequest, idleEndMs: opts.idleEndMs, log: (l) => logs.push(l), ...(opts.grpc ? { grpcPort: 0 } : {}) });
  return {
    store,
    receiver,
    logs,
    async close() {
      await receiver.close();
      await store.close();
      ws.cleanup();
    },
  };
}

export interface SdkFixture {
  tracer: Tracer;
  /** Starts a span, under `parent` when given (no global context manager needed). */
  span(name: string, attributes?: Attributes, parent?: Span): Span;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** The real OpenTelemetry JS SDK exporting to `url` over OTLP/HTTP protobuf or JSON, or OTLP/gRPC. */
export function sdkFixture(url: string, o: { protocol: 'protobuf' | 'json' | 'grpc'; resource?: Attributes; gzip?: boolean; simple?: boolean }): SdkFixture {
  const exporterOpts = { url: o.protocol === 'grpc' ? url : `${url}/v1/traces`, ...(o.gzip ? { compression: 'gzip' as never } : {}) };
  const exporter = o.protocol === 'grpc' ? new GrpcExporter(exporterOpts) : o.protocol === 'protobuf' ? new ProtoExporter(exporterOpts) : new JsonExporter(exporterOpts);
  const processor = o.simple ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter);
  const provider = new NodeTracerProvider({ resource: resourceFromAttributes({ 'service.name': 'agent-under-test', ...(o.resource ?? {}) }), spanProcessors: [processor] });
  const tracer = provider.getTracer('otlp-test');
  return {
    tracer,
    span: (name, attributes, parent) => tracer.startSpan(name, { attributes }, parent ? trace.setSpan(context.active(), parent) : undefined),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
