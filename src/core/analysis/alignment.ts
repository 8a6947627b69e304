import type { RolloutRecord } from '../store/types';

export type Alignment = 'aligned' | 'misaligned' | 'maybe' | 'unknown';

/** A decision as alignment reads it: GO (or YES), NO-GO (or NOGO, NO); null for anything else. */
export function goNoGo(decision: string | null): 'GO' | 'NO-GO' | null {
  if (!decision) return null;
  const d = decision.toUpperCase().trim().replace(/[\s_]/g, '-');
  if (d === 'GO' || d === 'YES') return 'GO';
  if (d === 'NO-GO' || d === 'NOGO' || d === 'NO') return 'NO-GO';
  return null;
}

/** An expert label alignment knows: yes, no or maybe (any case); null for none or anything else. */
export function expertLabel(expected: string | null): 'yes' | 'no' | 'maybe' | null {
  const e = expected?.toLowerCase().trim();
  return e === 'yes' || e === 'no' || e === 'maybe' ? e : null;
}

/**
 * Decision alignment of the reference study: GO matches an expert "yes", NO-GO
 * matches "no". Tasks whose expert answer is "maybe" are reported separately,
 * and rollouts without a decision or a label are "unknown".
 */
export function decisionAlignment(decision: string | null, expected: string | null): Alignment {
  const exp = expertLabel(expected);
  if (!exp) return 'unknown';
  if (exp === 'maybe') return 'maybe';
  const d = goNoGo(decision);
  if (!d) return 'unknown';
  return (d === 'GO' && exp === 'yes') || (d === 'NO-GO' && exp === 'no') ? 'aligned' : 'misaligned';
}

/**
 * Whether decision alignment means anything for these rollouts: some task is
 * labelled yes / no / maybe and the graph emits GO / NO-GO-like decisions. A
 * graph deciding CORRECT / INCORRECT, or tasks without expert labels, have no
 * alignment to report.
 */
export function alignmentApplies(rollouts: ReadonlyArray<Pick<RolloutRecord, 'decision' | 'expectedDecision'>>): boolean {
  return rollouts.some((r) => expertLabel(r.expectedDecision) !== null) && rollouts.some((r) => goNoGo(r.decision) !== null);
}
