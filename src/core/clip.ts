/** Text quoted from a rollout, on one line and at most `max` characters (an ellipsis says when it was cut). */
export function clip(s: string, max = 300): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}
