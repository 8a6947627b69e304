import { randomBytes } from 'node:crypto';

// One pooled buffer keeps id generation off the hot path of every span.
let pool = Buffer.alloc(0);
let offset = 0;

function hex(bytes: number): string {
  if (offset + bytes > pool.length) {
    pool = randomBytes(4096);
    offset = 0;
  }
  const s = pool.toString('hex', offset, offset + bytes);
  offset += bytes;
  return s;
}

/** OpenTelemetry trace id: 16 random bytes as 32 lowercase hex chars. */
export function newTraceId(): string {
  return hex(16);
}

/** OpenTelemetry span id: 8 random bytes as 16 lowercase hex chars. */
export function newSpanId(): string {
  return hex(8);
}
