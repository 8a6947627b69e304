/**
 * Why a rollout did not succeed (or what went wrong in one that did): the one
 * list of categories the runner records on a rollout, the store keeps, and the
 * report, the CLI and the views show. It lives with the store's types because
 * a rollout record carries it.
 */
export const FAILURE_KINDS = [
  'no_output',
  'truncated',
  'rate_limit',
  'server_error',
  'client_error',
  'timeout',
  'connection',
  'invalid_output',
  'tool_error',
  'max_turns',
  'judge_failed',
  'custom_reward_failed',
  'cancelled',
  'interrupted',
  'other',
] as const;

export type FailureKind = (typeof FAILURE_KINDS)[number];

/** As a heading (report, evaluation table). */
export const FAILURE_LABELS: Record<FailureKind, string> = {
  no_output: 'No final output',
  truncated: 'Truncated at max_tokens',
  rate_limit: 'Rate limited (HTTP 429)',
  server_error: 'Server error (HTTP 5xx)',
  client_error: 'Request rejected (HTTP 4xx)',
  timeout: 'Timeout',
  connection: 'Connection failed',
  invalid_output: 'Invalid model output (JSON)',
  tool_error: 'Tool error',
  max_turns: 'Max turns reached',
  judge_failed: 'Judge failed',
  custom_reward_failed: 'Custom reward failed',
  cancelled: 'Cancelled',
  interrupted: 'Interrupted (its process ended)',
  other: 'Other error',
};

/** As a few words beside a rollout (the Rollouts view, a progress line). */
export const FAILURE_SHORT_LABELS: Record<FailureKind, string> = {
  no_output: 'no output',
  truncated: 'truncated',
  rate_limit: 'rate limited',
  server_error: 'server error',
  client_error: 'request rejected',
  timeout: 'timeout',
  connection: 'connection failed',
  invalid_output: 'invalid output',
  tool_error: 'tool error',
  max_turns: 'max turns',
  judge_failed: 'judge failed',
  custom_reward_failed: 'custom reward failed',
  cancelled: 'cancelled',
  interrupted: 'interrupted',
  other: 'error',
};

/**
 * Failures on the way to the model (the network, the server, its time limit),
 * not the agent's own: `run --resume` redoes them once the server is back.
 */
export const TRANSPORT_FAILURES: readonly FailureKind[] = ['connection', 'timeout', 'server_error', 'rate_limit'];

export function isTransportFailure(kind: FailureKind | null | undefined): boolean {
  return kind !== null && kind !== undefined && TRANSPORT_FAILURES.includes(kind);
}

/** "timeout ×3, no output ×1": counts of failure kinds, the most frequent first. */
export function failureCountsText(counts: Partial<Record<FailureKind, number>>): string {
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([k, n]) => `${FAILURE_SHORT_LABELS[k as FailureKind]} ×${n}`)
    .join(', ');
}

/** How many of these rollouts failed of each kind (one with no kind recorded counts as "other"). */
export function countFailures(rollouts: readonly { status: string; failure?: FailureKind | null }[]): Partial<Record<FailureKind, number>> {
  const counts: Partial<Record<FailureKind, number>> = {};
  for (const r of rollouts) if (r.status === 'failed') counts[r.failure ?? 'other'] = (counts[r.failure ?? 'other'] ?? 0) + 1;
  return counts;
}

export function isFailureKind(v: unknown): v is FailureKind {
  return typeof v === 'string' && (FAILURE_KINDS as readonly string[]).includes(v);
}

/** "failed (no output)", "succeeded", "cancelled", "failed (connection failed), superseded": a rollout's status with why it failed, and whether a resume redid it. */
export function statusText(r: { status: string; failure?: FailureKind | null; supersededBy?: string | null }): string {
  const status = r.failure && r.failure !== r.status ? `${r.status} (${FAILURE_SHORT_LABELS[r.failure]})` : r.status;
  return r.supersededBy ? `${status}, superseded` : status;
}
