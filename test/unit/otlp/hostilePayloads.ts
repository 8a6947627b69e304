/** Hostile OTLP/protobuf payloads, built byte by byte (an SDK would refuse to build them). */

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 127) {
    out.push((n & 127) | 128);
    n >>>= 7;
  }
  out.push(n);
  return out;
}

/** A length-delimited field. */
function field(no: number, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from([(no << 3) | 2, ...varint(body.length)]), body]);
}

/**
 * One span whose attribute "hostile" is an ArrayValue of `outer` ArrayValues
 * each holding `inner` empty values: 16.6 MB and 8.1 million values at
 * 99,999 × 80, the request that once held the receiver for ten seconds.
 */
export function nestedEmptyArraysRequest(outer = 99_999, inner = 80, traceByte = 0xab): Buffer {
  const middle = field(1, field(5, Buffer.concat(Array<Buffer>(inner).fill(Buffer.from([0x0a, 0x00])))));
  const value = field(5, Buffer.concat(Array<Buffer>(outer).fill(middle)));
  const attribute = field(9, Buffer.concat([field(1, Buffer.from('hostile')), field(2, value)]));
  const span = Buffer.concat([field(1, Buffer.alloc(16, traceByte)), field(2, Buffer.alloc(8, 0xcd)), field(5, Buffer.from('root')), attribute]);
  return field(1, field(2, field(2, span)));
}
