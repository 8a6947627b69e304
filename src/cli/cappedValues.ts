import type { AttributeValue, Attributes } from '../core/trace/span';

/** Longest attribute text `traces --rollout` prints unless --full. */
export const MAX_PRINTED_VALUE_CHARS = 64 * 1024;

/**
 * Attribute values cut for printing: text over the cap ends in "… (N more
 * bytes; --full to print all)", so one huge attribute cannot flood the
 * terminal. `cut` counts the values cut.
 */
export function cappedAttributes(attributes: Attributes, counter: { cut: number }): Attributes {
  let out: Attributes | null = null;
  for (const [k, v] of Object.entries(attributes)) {
    if (typeof v !== 'string' || v.length <= MAX_PRINTED_VALUE_CHARS) continue;
    out ??= { ...attributes };
    const kept = v.slice(0, MAX_PRINTED_VALUE_CHARS);
    out[k] = `${kept}… (${Buffer.byteLength(v) - Buffer.byteLength(kept)} more bytes; --full to print all)` as AttributeValue;
    counter.cut++;
  }
  return out ?? attributes;
}
