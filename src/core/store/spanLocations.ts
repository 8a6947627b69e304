/**
 * Where a trace's span frames lie: a flat list of (file id, offset, length)
 * triples. A frame that directly follows the previous one of the same trace
 * extends it, so a rollout written without interleaving is one triple and one
 * read. Stored as a blob of little-endian doubles (no 4 GiB limit on offsets).
 */
export function appendLoc(locs: number[], fileId: number, offset: number, length: number): void {
  const n = locs.length;
  if (n >= 3 && locs[n - 3] === fileId && locs[n - 2]! + locs[n - 1]! === offset) {
    locs[n - 1] = locs[n - 1]! + length;
    return;
  }
  locs.push(fileId, offset, length);
}

export function encodeLocs(locs: readonly number[]): Uint8Array {
  const buf = Buffer.allocUnsafe(locs.length * 8);
  for (let i = 0; i < locs.length; i++) buf.writeDoubleLE(locs[i]!, i * 8);
  return buf;
}

export function decodeLocs(blob: Uint8Array): number[] {
  const buf = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
  const out: number[] = new Array<number>(blob.byteLength / 8);
  for (let i = 0; i < out.length; i++) out[i] = buf.readDoubleLE(i * 8);
  return out;
}
