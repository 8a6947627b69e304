import protobuf from 'protobufjs';

/**
 * The OTLP trace messages (opentelemetry.proto.collector.trace.v1 and the
 * trace, resource and common messages it uses) and google.rpc.Status, described
 * for protobufjs by hand: the field numbers and types are the protocol.
 */
const kv = { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } };
const attributes = (id: number): Record<string, unknown> => ({ attributes: { rule: 'repeated', type: 'KeyValue', id } });

const DESCRIPTOR = {
  nested: {
    otlp: {
      nested: {
        AnyValue: {
          oneofs: { value: { oneof: ['stringValue', 'boolValue', 'intValue', 'doubleValue', 'arrayValue', 'kvlistValue', 'bytesValue'] } },
          fields: {
            stringValue: { type: 'string', id: 1 },
            boolValue: { type: 'bool', id: 2 },
            intValue: { type: 'int64', id: 3 },
            doubleValue: { type: 'double', id: 4 },
            arrayValue: { type: 'ArrayValue', id: 5 },
            kvlistValue: { type: 'KeyValueList', id: 6 },
            bytesValue: { type: 'bytes', id: 7 },
          },
        },
        ArrayValue: { fields: { values: { rule: 'repeated', type: 'AnyValue', id: 1 } } },
        KeyValueList: { fields: { values: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
        KeyValue: { fields: kv },
        InstrumentationScope: {
          fields: { name: { type: 'string', id: 1 }, version: { type: 'string', id: 2 }, ...attributes(3), droppedAttributesCount: { type: 'uint32', id: 4 } },
        },
        Resource: { fields: { ...attributes(1), droppedAttributesCount: { type: 'uint32', id: 2 } } },
        Status: { fields: { message: { type: 'string', id: 2 }, code: { type: 'int32', id: 3 } } },
        Event: {
          fields: { timeUnixNano: { type: 'fixed64', id: 1 }, name: { type: 'string', id: 2 }, ...attributes(3), droppedAttributesCount: { type: 'uint32', id: 4 } },
        },
        Link: {
          fields: {
            traceId: { type: 'bytes', id: 1 },
            spanId: { type: 'bytes', id: 2 },
            traceState: { type: 'string', id: 3 },
            ...attributes(4),
            droppedAttributesCount: { type: 'uint32', id: 5 },
            flags: { type: 'fixed32', id: 6 },
          },
        },
        Span: {
          fields: {
            traceId: { type: 'bytes', id: 1 },
            spanId: { type: 'bytes', id: 2 },
            traceState: { type: 'string', id: 3 },
            parentSpanId: { type: 'bytes', id: 4 },
            name: { type: 'string', id: 5 },
            kind: { type: 'int32', id: 6 },
            startTimeUnixNano: { type: 'fixed64', id: 7 },
            endTimeUnixNano: { type: 'fixed64', id: 8 },
            ...attributes(9),
            droppedAttributesCount: { type: 'uint32', id: 10 },
            events: { rule: 'repeated', type: 'Event', id: 11 },
            droppedEventsCount: { type: 'uint32', id: 12 },
            links: { rule: 'repeated', type: 'Link', id: 13 },
            droppedLinksCount: { type: 'uint32', id: 14 },
            status: { type: 'Status', id: 15 },
            flags: { type: 'fixed32', id: 16 },
          },
        },
        ScopeSpans: {
          fields: { scope: { type: 'InstrumentationScope', id: 1 }, spans: { rule: 'repeated', type: 'Span', id: 2 }, schemaUrl: { type: 'string', id: 3 } },
        },
        ResourceSpans: {
          fields: { resource: { type: 'Resource', id: 1 }, scopeSpans: { rule: 'repeated', type: 'ScopeSpans', id: 2 }, schemaUrl: { type: 'string', id: 3 } },
        },
        ExportTraceServiceRequest: { fields: { resourceSpans: { rule: 'repeated', type: 'ResourceSpans', id: 1 } } },
        ExportTracePartialSuccess: { fields: { rejectedSpans: { type: 'int64', id: 1 }, errorMessage: { type: 'string', id: 2 } } },
        ExportTraceServiceResponse: { fields: { partialSuccess: { type: 'ExportTracePartialSuccess', id: 1 } } },
        Any: { fields: { typeUrl: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } },
        RpcStatus: { fields: { code: { type: 'int32', id: 1 }, message: { type: 'string', id: 2 }, details: { rule: 'repeated', type: 'Any', id: 3 } } },
      },
    },
  },
};

const root = protobuf.Root.fromJSON(DESCRIPTOR as protobuf.INamespace);
const type = (name: string): protobuf.Type => root.lookupType(`otlp.${name}`);

/** Encoded with protobufjs for export; the receiver reads requests field by field (otlpDecodeProtobuf.ts) by the same field numbers. */
export const ExportTraceServiceRequest = type('ExportTraceServiceRequest');
export const ExportTraceServiceResponse = type('ExportTraceServiceResponse');
/** google.rpc.Status: the body of an OTLP/HTTP error answer. */
export const RpcStatus = type('RpcStatus');
