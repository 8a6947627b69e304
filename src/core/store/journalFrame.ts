import { crc32 } from 'node:zlib';
import type { SpanRecord } from '../trace/span';
import type { PromptVersionRecord, RescoreRecord, RolloutRecord, RunRecord } from './types';

/**
 * The on-disk record format shared by journals and segments:
 *   [u32 payload length][u32 crc32 of type+payload][u8 type][payload]
 * Little-endian. A frame is written with one write() call, so a process killed
 * mid-run leaves either the whole frame or a torn tail that fails the length or
 * CRC check and is ignored by readers.
 */
export const JOURNAL_FORMAT_VERSION = 1;
export const FRAME_HEADER_BYTES = 9;
/** Trace ids are fixed-width, so span frames carry theirs in the clear and a scan can route them without parsing JSON. */
export const TRACE_ID_BYTES = 32;
/** A length above this is corruption, not data: no span is that large. */
const MAX_PAYLOAD_BYTES = 1 << 30;

export const FrameType = {
  header: 0,
  run: 1,
  rolloutStart: 2,
  span: 3,
  rolloutEnd: 4,
  prompt: 5,
  close: 6,
  /** Segments only: the gzipped span frames of one trace. */
  spanBlock: 7,
  /** New final rewards for stored rollouts under new weights; the earlier rewards stay as revisions. */
  rescore: 8,
} as const;
export type FrameTypeCode = (typeof FrameType)[keyof typeof FrameType];

export interface JournalHeader {
  v: number;
  kind: 'journal';
  writer: string;
  pid: number;
  host: string;
  seq: number;
  startTime: number;
}

export interface SegmentHeader {
  v: number;
  kind: 'segment';
  /** Journal file names whose content this segment carries; they are ignored once it takes effect. */
  supersedes: string[];
  createdAt: number;
}

export type FileHeader = JournalHeader | SegmentHeader;
export interface RunFrame {
  at: number;
  run: RunRecord;
}
export interface RolloutFrame {
  rollout: RolloutRecord;
}
export interface PromptFrame {
  prompt: PromptVersionRecord;
}
export interface CloseFrame {
  at: number;
}
export interface RescoreFrame {
  rescore: RescoreRecord;
}

/** One frame found in a byte range: where it is and its (unparsed) payload. */
export interface RawFrame {
  type: number;
  offset: number;
  /** Whole frame, header included. */
  length: number;
  payload: Buffer;
}

const TRACE_ID = /^[0-9a-f]{32}$/;

export function encodeFrame(type: FrameTypeCode, payload: Buffer): Buffer {
  const buf = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payload.length);
  buf.writeUInt32LE(payload.length, 0);
  buf[8] = type;
  payload.copy(buf, FRAME_HEADER_BYTES);
  buf.writeUInt32LE(crc32(buf.subarray(8)), 4);
  return buf;
}

export function encodeJsonFrame(type: FrameTypeCode, value: unknown): Buffer {
  return encodeFrame(type, Buffer.from(JSON.stringify(value), 'utf8'));
}

/** Hot path (one per span): a single allocation, no intermediate buffers. */
export function encodeSpanFrame(span: SpanRecord): Buffer {
  if (!TRACE_ID.test(span.traceId)) {
    throw new Error(`span ${span.spanId} has trace id '${span.traceId}'; trace ids must be 32 lowercase hex characters`);
  }
  const json = JSON.stringify(span);
  const jsonBytes = Buffer.byteLength(json, 'utf8');
  const payloadBytes = TRACE_ID_BYTES + jsonBytes;
  const buf = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payloadBytes);
  buf.writeUInt32LE(payloadBytes, 0);
  buf[8] = FrameType.span;
  buf.write(span.traceId, FRAME_HEADER_BYTES, 'latin1');
  buf.write(json, FRAME_HEADER_BYTES + TRACE_ID_BYTES, 'utf8');
  buf.writeUInt32LE(crc32(buf.subarray(8)), 4);
  return buf;
}

/** A span block's payload: trace id, u32 span count, then gzip(the trace's span frames, concatenated). */
export const SPAN_BLOCK_HEADER_BYTES = TRACE_ID_BYTES + 4;

export function encodeSpanBlockFrame(traceId: string, spans: number, gzipped: Buffer): Buffer {
  const payload = Buffer.allocUnsafe(SPAN_BLOCK_HEADER_BYTES + gzipped.length);
  payload.write(traceId, 0, 'latin1');
  payload.writeUInt32LE(spans, TRACE_ID_BYTES);
  gzipped.copy(payload, SPAN_BLOCK_HEADER_BYTES);
  return encodeFrame(FrameType.spanBlock, payload);
}

export function spanBlockCount(frame: RawFrame): number {
  return frame.payload.readUInt32LE(TRACE_ID_BYTES);
}

export function frameTraceId(frame: RawFrame): string {
  return frame.payload.toString('latin1', 0, TRACE_ID_BYTES);
}

export function frameJson<T>(frame: RawFrame): T {
  return JSON.parse(frame.payload.toString('utf8')) as T;
}

export function spanFromFrame(frame: RawFrame): SpanRecord {
  return JSON.parse(frame.payload.toString('utf8', TRACE_ID_BYTES)) as SpanRecord;
}

export interface FrameScan {
  frames: RawFrame[];
  /** File offset just past the last good frame. */
  end: number;
  /** Why the scan stopped before the end of the buffer: an unfinished frame, or one that fails its check. */
  stop: 'end' | 'incomplete' | 'corrupt';
  /** For 'incomplete': bytes the unfinished frame needs in all, so a caller can read enough. */
  needed: number;
}

/** Splits a buffer read at file offset `base` into frames, stopping at the first that is torn or corrupt. */
export function scanFrames(buf: Buffer, base: number): FrameScan {
  const frames: RawFrame[] = [];
  let pos = 0;
  while (pos < buf.length) {
    if (buf.length - pos < FRAME_HEADER_BYTES) return { frames, end: base + pos, stop: 'incomplete', needed: FRAME_HEADER_BYTES };
    const payloadBytes = buf.readUInt32LE(pos);
    if (payloadBytes > MAX_PAYLOAD_BYTES) return { frames, end: base + pos, stop: 'corrupt', needed: 0 };
    const total = FRAME_HEADER_BYTES + payloadBytes;
    if (buf.length - pos < total) return { frames, end: base + pos, stop: 'incomplete', needed: total };
    if (crc32(buf.subarray(pos + 8, pos + total)) !== buf.readUInt32LE(pos + 4)) {
      return { frames, end: base + pos, stop: 'corrupt', needed: 0 };
    }
    frames.push({ type: buf[pos + 8]!, offset: base + pos, length: total, payload: buf.subarray(pos + FRAME_HEADER_BYTES, pos + total) });
    pos += total;
  }
  return { frames, end: base + pos, stop: 'end', needed: 0 };
}
