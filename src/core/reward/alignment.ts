export type Alignment = 'aligned' | 'misaligned' | 'maybe' | 'unknown';

/**
 * Decision alignment of the reference study: GO matches an expert "yes", NO-GO
 * matches "no". Tasks whose expert answer is "maybe" are reported separately,
 * and rollouts without a decision or a label are "unknown".
 */
export function decisionAlignment(decision: string | null, expected: string | null): Alignment {
  if (!expected) return 'unknown';
  const exp = expected.toLowerCase();
  if (exp === 'maybe') return 'maybe';
  if (!decision) return 'unknown';
  const d = decision.toUpperCase().replace(/[\s_]/g, '-');
  const go = d === 'GO' || d === 'YES';
  const noGo = d === 'NO-GO' || d === 'NOGO' || d === 'NO';
  if (!go && !noGo) return 'unknown';
  return (go && exp === 'yes') || (noGo && exp === 'no') ? 'aligned' : 'misaligned';
}
