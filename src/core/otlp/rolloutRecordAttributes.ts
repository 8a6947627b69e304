import type { RolloutRecord } from '../store/types';
import type { AgentVersions } from '../trace/llmSpanAttributes';
import type { Attributes } from '../trace/span';
import type { OtlpValue } from './otlpModel';

/**
 * What a rollout record knows beyond its spans, as attributes of its root span
 * when the lab exports it over OTLP, and read back by the receiver, so that
 * `traces export --otlp` into another lab's `collect` loses nothing.
 */
export const ROLLOUT_RECORD_ATTRS = {
  /** The custom reward's breakdown, as JSON. */
  rewardBreakdown: 'rollout_lab.rollout.reward_breakdown',
  judgeFailed: 'rollout_lab.rollout.judge_failed',
  /** Each agent's prompt version, routed model and model version, as JSON [{agent, promptVersion, model, modelVersion}]. */
  agents: 'rollout_lab.rollout.agents',
  /** The key of the reward definition it was scored under. */
  rewardDefinition: 'rollout_lab.rollout.reward_definition',
  /** The earlier attempts (same run, task and sample) it replaces. */
  supersedes: 'rollout_lab.rollout.supersedes',
} as const;

type AgentVersion = Pick<RolloutRecord['agents'][number], 'agent' | 'promptVersion' | 'model' | 'modelVersion'>;

/** The root span's share of the record: only what the record has (an absent value stays absent). */
export function rolloutRecordAttributes(r: RolloutRecord): Array<[string, OtlpValue]> {
  const out: Array<[string, OtlpValue]> = [[ROLLOUT_RECORD_ATTRS.judgeFailed, r.judgeFailed]];
  if (r.rewardBreakdown) out.push([ROLLOUT_RECORD_ATTRS.rewardBreakdown, JSON.stringify(r.rewardBreakdown)]);
  if (r.agents.length) {
    const versions: AgentVersion[] = r.agents.map((a) => ({ agent: a.agent, promptVersion: a.promptVersion, model: a.model, modelVersion: a.modelVersion }));
    out.push([ROLLOUT_RECORD_ATTRS.agents, JSON.stringify(versions)]);
  }
  if (r.rewardDefinition) out.push([ROLLOUT_RECORD_ATTRS.rewardDefinition, r.rewardDefinition]);
  if (r.supersedes?.length) out.push([ROLLOUT_RECORD_ATTRS.supersedes, [...r.supersedes]]);
  return out;
}

function parsed(v: unknown): unknown {
  if (typeof v !== 'string') return undefined;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return undefined;
  }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const textOrNull = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** The numbers of a breakdown; anything else in it (a hand-written span's) is left out. */
function breakdown(v: unknown): Record<string, number> | null {
  if (!isObj(v)) return null;
  const out = Object.entries(v).filter((e): e is [string, number] => typeof e[1] === 'number' && Number.isFinite(e[1]));
  return out.length ? Object.fromEntries(out) : null;
}

/** The record fields a root span carries (see rolloutRecordAttributes), with the agents' versions for the per-agent summary. */
export function readRolloutRecordAttributes(root: Attributes): {
  fields: Pick<RolloutRecord, 'rewardBreakdown' | 'judgeFailed'> & Partial<Pick<RolloutRecord, 'rewardDefinition' | 'supersedes'>>;
  versions: AgentVersions | undefined;
} {
  const fields: ReturnType<typeof readRolloutRecordAttributes>['fields'] = {
    rewardBreakdown: breakdown(parsed(root[ROLLOUT_RECORD_ATTRS.rewardBreakdown])),
    judgeFailed: root[ROLLOUT_RECORD_ATTRS.judgeFailed] === true,
  };
  const definition = root[ROLLOUT_RECORD_ATTRS.rewardDefinition];
  if (typeof definition === 'string' && definition) fields.rewardDefinition = definition;
  const supersedes = root[ROLLOUT_RECORD_ATTRS.supersedes];
  if (Array.isArray(supersedes) && supersedes.length && supersedes.every((s) => typeof s === 'string')) fields.supersedes = supersedes as string[];

  const list = parsed(root[ROLLOUT_RECORD_ATTRS.agents]);
  if (!Array.isArray(list)) return { fields, versions: undefined };
  const byAgent = new Map<string, AgentVersion>();
  for (const a of list) {
    if (isObj(a) && typeof a.agent === 'string') byAgent.set(a.agent, { agent: a.agent, promptVersion: textOrNull(a.promptVersion), model: textOrNull(a.model), modelVersion: textOrNull(a.modelVersion) });
  }
  const versions: AgentVersions = {
    promptVersion: (agent) => byAgent.get(agent)?.promptVersion ?? null,
    model: (agent) => {
      const a = byAgent.get(agent);
      return a?.model ? { logical: a.model, version: a.modelVersion } : null;
    },
  };
  return { fields, versions };
}
