import type { ParseArgsConfig } from 'node:util';
import { resolve } from 'node:path';
import { UsageError } from '../../core/errors';
import { COMMON, err, intOption, out, parse } from '../args';

const COLLECT_OPTIONS = {
  workspace: COMMON.workspace,
  help: COMMON.help,
  port: { type: 'string' },
  'grpc-port': { type: 'string' },
  host: { type: 'string' },
  'idle-end-ms': { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

const EXPORT_OPTIONS = {
  workspace: COMMON.workspace,
  json: COMMON.json,
  help: COMMON.help,
  otlp: { type: 'string' },
  headers: { type: 'string' },
  run: { type: 'string' },
  rollout: { type: 'string' },
  protocol: { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

/**
 * rollout-lab collect: the OTLP/HTTP receiver on the workspace's store until
 * Ctrl+C (or SIGTERM). Every trace it receives becomes a rollout. The workspace
 * needs no lab.json: the store is created in <workspace>/.rollout-lab/store.
 */
export async function collectCommand(argv: string[], usage: string): Promise<number> {
  const v = parse('collect', argv, COLLECT_OPTIONS);
  if (v.help) return out(usage), 0;
  const port = intOption(v, 'port', 0) ?? 4318;
  if (port > 65535) throw new UsageError(`collect: --port must be at most 65535, got ${port}`);
  const grpcOff = v['grpc-port'] === 'off';
  const grpcPort = grpcOff ? undefined : (intOption(v, 'grpc-port', 0) ?? 4317);
  if (grpcPort !== undefined && grpcPort > 65535) throw new UsageError(`collect: --grpc-port must be at most 65535 (or off), got ${grpcPort}`);
  const { TraceStore } = await import('../../core/store/traceStore');
  const { startOtlpReceiver } = await import('../../core/otlp/otlpReceiver');
  const workspace = resolve((v.workspace as string) ?? '.');
  const store = await TraceStore.open(workspace);
  let receiver;
  try {
    receiver = await startOtlpReceiver({
      store,
      port,
      ...(grpcPort === undefined ? {} : { grpcPort }),
      host: (v.host as string | undefined) ?? '127.0.0.1',
      idleEndMs: intOption(v, 'idle-end-ms', 1),
      log: err,
      onStored: (r) => {
        const parts = [`${r.traces} trace${r.traces === 1 ? '' : 's'}`, `${r.spans} span${r.spans === 1 ? '' : 's'}`];
        if (r.finished) parts.push(`${r.finished} finished`);
        if (r.partial) parts.push(`${r.partial.rejectedSpans} refused`);
        if (r.clamped) parts.push(`${r.clamped} with clamped times`);
        out(`stored ${parts.join(', ')}`);
      },
    });
  } catch (e) {
    await store.close();
    const { OtlpPortError } = await import('../../core/otlp/otlpReceiver');
    if (e instanceof OtlpPortError) throw new UsageError(`collect: ${e.message}; pick another with --grpc-port, or --grpc-port off`);
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new UsageError(`collect: port ${port} is in use (another collector, such as the AI Toolkit's, may be on it); pick another with --port`);
    throw e;
  }
  out(`OTLP/HTTP receiver on ${receiver.url}/v1/traces (protobuf or JSON, gzip) storing into ${store.dir}; set OTEL_EXPORTER_OTLP_ENDPOINT=${receiver.url}. Ctrl+C stops it.`);
  if (receiver.grpcUrl) out(`OTLP/gRPC receiver on ${receiver.grpcUrl} (TraceService/Export; OTEL_EXPORTER_OTLP_PROTOCOL=grpc, OTEL_EXPORTER_OTLP_ENDPOINT=${receiver.grpcUrl})`);
  await new Promise<void>((done) => {
    const stop = (): void => done();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await receiver.close();
  await store.close();
  return 0;
}

/** rollout-lab traces export: stored rollouts to an OTLP collector, one trace each. */
export async function tracesExportCommand(argv: string[], usage: string): Promise<number> {
  const v = parse('traces export', argv, EXPORT_OPTIONS);
  if (v.help) return out(usage), 0;
  if (!v.otlp) throw new UsageError('traces export: give the collector with --otlp URL, e.g. --otlp http://localhost:4318');
  if (v.run && v.rollout) throw new UsageError('traces export: give --run or --rollout, not both');
  const protocol = (v.protocol as string | undefined) ?? 'http/protobuf';
  const { OTLP_PROTOCOLS, exportStoredRollouts, parseOtlpHeaders, tracesUrl } = await import('../../core/otlp/otlpExporter');
  if (!(OTLP_PROTOCOLS as readonly string[]).includes(protocol)) throw new UsageError(`traces export: --protocol must be ${OTLP_PROTOCOLS.join(' or ')}, got "${protocol}"`);
  const url = tracesUrl(v.otlp as string);
  const headers = { ...parseOtlpHeaders(process.env.OTEL_EXPORTER_OTLP_HEADERS), ...parseOtlpHeaders(v.headers as string | undefined) };
  const { TraceStore } = await import('../../core/store/traceStore');
  const store = await TraceStore.open(resolve((v.workspace as string) ?? '.'), { readOnly: true });
  const controller = new AbortController();
  const stop = (): void => controller.abort();
  process.once('SIGINT', stop);
  try {
    const names = Object.keys(headers);
    err(`exporting to ${url} (${protocol}${names.length ? `, headers ${names.join(', ')}` : ''})`);
    const summary = await exportStoredRollouts(
      store,
      { endpoint: url, headers, protocol: protocol as 'http/protobuf' | 'http/json', signal: controller.signal },
      { runId: v.run as string | undefined, rolloutId: v.rollout as string | undefined },
      v.json ? undefined : (r, spans) => err(`exported ${r.id} (${spans} spans)`),
    );
    if (v.json) out(JSON.stringify({ endpoint: url, protocol, ...summary }));
    else out(`exported ${summary.rollouts} rollout${summary.rollouts === 1 ? '' : 's'} (${summary.spans} spans) to ${url}${summary.rejectedSpans ? `; the collector refused ${summary.rejectedSpans} spans` : ''}`);
    return 0;
  } finally {
    process.off('SIGINT', stop);
    await store.close();
  }
}
