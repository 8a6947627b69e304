import { Server, ServerCredentials, status, type ServerUnaryCall, type ServiceDefinition, type sendUnaryData } from '@grpc/grpc-js';
import { protobufRequestSteps } from './otlpDecodeProtobuf';
import { OtlpPayloadError, spanCount, type OtlpTraceRequest } from './otlpModel';
import { OtlpLimitError, RequestBudget, runInSlices } from './otlpSlices';
import type { IngestResult, OtlpIngest } from './traceIngest';
import { encodeResponse } from './otlpEncode';
import { clampedLine } from './spanTimes';

/** OpenTelemetry's usual port for OTLP over gRPC. */
export const DEFAULT_OTLP_GRPC_PORT = 4317;

const EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';

/**
 * The TraceService of OTLP/gRPC with raw bytes in and out: the request is
 * decoded by the same reader as OTLP/HTTP protobuf, so both check a payload
 * the same way before anything is stored.
 */
const TRACE_SERVICE: ServiceDefinition = {
  Export: {
    path: EXPORT_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: (b: Buffer) => b,
    requestDeserialize: (b: Buffer) => b,
    responseSerialize: (b: Buffer) => b,
    responseDeserialize: (b: Buffer) => b,
  },
};

export interface OtlpGrpcServerOptions {
  port: number;
  host: string;
  ingest: OtlpIngest;
  maxMessageBytes: number;
  maxValuesPerRequest: number;
  /** The receiver's requests in flight: closing waits for them. */
  inFlight: Set<Promise<void>>;
  log: (line: string) => void;
  onStored?: (result: IngestResult) => void;
}

/**
 * Serves OTLP/gRPC's trace Export on its own port with @grpc/grpc-js
 * (gzip-compressed messages are taken; grpc-js decompresses them). A payload
 * that cannot be decoded is INVALID_ARGUMENT and stores nothing; an oversized
 * one is refused by grpc-js itself (RESOURCE_EXHAUSTED).
 */
export async function startOtlpGrpcServer(opts: OtlpGrpcServerOptions): Promise<{ url: string; port: number; close(): Promise<void> }> {
  const server = new Server({ 'grpc.max_receive_message_length': opts.maxMessageBytes });
  server.addService(TRACE_SERVICE, {
    Export: (call: ServerUnaryCall<Buffer, Buffer>, done: sendUnaryData<Buffer>) => {
      const work = exportCall(call, done).finally(() => opts.inFlight.delete(work));
      opts.inFlight.add(work);
    },
  });

  async function exportCall(call: ServerUnaryCall<Buffer, Buffer>, done: sendUnaryData<Buffer>): Promise<void> {
    const from = call.getPeer();
    const budget = new RequestBudget(opts.maxValuesPerRequest);
    let request: OtlpTraceRequest;
    try {
      request = await runInSlices(protobufRequestSteps(call.request, budget), budget);
    } catch (err) {
      const limit = err instanceof OtlpLimitError;
      const message = err instanceof OtlpPayloadError ? err.message : `the request cannot be decoded: ${(err as Error).message}`;
      opts.log(`otlp: gRPC Export from ${from} refused (${limit ? 'RESOURCE_EXHAUSTED' : 'INVALID_ARGUMENT'}): ${message}`);
      return done({ code: limit ? status.RESOURCE_EXHAUSTED : status.INVALID_ARGUMENT, details: message });
    }
    try {
      const result = await runInSlices(opts.ingest.ingestSteps(request, budget), budget);
      if (result.partial) opts.log(`otlp: ${result.partial.errorMessage} (of ${spanCount(request)} in the request)`);
      if (result.clamped) opts.log(clampedLine(result.clamped));
      opts.onStored?.(result);
      done(null, Buffer.from(encodeResponse(result.partial, false) as Uint8Array));
    } catch (err) {
      const invalid = err instanceof OtlpPayloadError;
      const message = invalid ? err.message : `the spans could not be stored: ${(err as Error).message}`;
      opts.log(`otlp: gRPC Export from ${from} refused (${invalid ? 'INVALID_ARGUMENT' : 'INTERNAL'}): ${message}`);
      done({ code: invalid ? status.INVALID_ARGUMENT : status.INTERNAL, details: message });
    }
  }
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${opts.host}:${opts.port}`, ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))),
  );
  return {
    url: `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
        // Exporters keep their channel open: what is still connected after a moment is cut.
        setTimeout(() => server.forceShutdown(), 1_000).unref();
      }),
  };
}
