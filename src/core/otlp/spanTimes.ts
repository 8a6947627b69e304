import type { SpanRecord } from '../trace/span';

/** On a span whose times were out of range: the times it came with (epoch ms), as JSON `{"startTime":…,"endTime":…}` (those changed). */
export const TIME_CLAMPED_ATTR = 'rollout_lab.time.clamped';

const EARLIEST_MS = Date.UTC(2000, 0, 1);
const DAY_MS = 86_400_000;

/**
 * Keeps a received span's times in a sane window (2000-01-01 to a day after
 * it was received, ending no earlier than it starts), so a u64-max timestamp
 * cannot sort its rollout first forever nor a span last -10¹² ms. A start out
 * of the window becomes the end (if that one is sane) or the time received;
 * an end out of it, or before the start, becomes the start. True when a time
 * was changed; the originals are kept in TIME_CLAMPED_ATTR.
 */
export function clampSpanTimes(span: SpanRecord, receivedMs: number): boolean {
  const sane = (t: number): boolean => Number.isFinite(t) && t >= EARLIEST_MS && t <= receivedMs + DAY_MS;
  const original: { startTime?: number; endTime?: number } = {};
  if (!sane(span.startTime)) {
    original.startTime = span.startTime;
    span.startTime = sane(span.endTime) ? span.endTime : receivedMs;
  }
  if (!sane(span.endTime) || span.endTime < span.startTime) {
    original.endTime = span.endTime;
    span.endTime = span.startTime;
  }
  if (original.startTime === undefined && original.endTime === undefined) return false;
  span.attributes[TIME_CLAMPED_ATTR] = JSON.stringify(original);
  return true;
}

/** The receiver's log line for spans stored with clamped times. */
export function clampedLine(n: number): string {
  return `otlp: ${n} span${n === 1 ? '' : 's'} had times before 2000-01-01, more than a day ahead or ending before the start; stored clamped (the originals in ${TIME_CLAMPED_ATTR})`;
}
