import type { ParseArgsConfig } from 'node:util';
import { resolve } from 'node:path';
import { UsageError } from '../../core/errors';
import { COMMON, givenSplit, out, parse } from '../args';

const OPTIONS = {
  workspace: COMMON.workspace,
  json: COMMON.json,
  help: COMMON.help,
  phase: { type: 'string' },
  agents: { type: 'string' },
  'min-reward': { type: 'string' },
  split: { type: 'string' },
  'include-simulated': { type: 'boolean' },
  'include-penalised': { type: 'boolean' },
} as const satisfies ParseArgsConfig['options'];

const PHASES = ['sft', 'grpo', 'bandit', 'apo'] as const;
type Phase = (typeof PHASES)[number];

/**
 * rollout-lab preflight: checks the stored rollouts a training phase would
 * learn from and reports what would make it fail or learn nothing. Exit 0 when
 * no check is an error, 1 when one is (so scripts can stop before the phase).
 */
export async function preflightCommand(argv: string[], usage: string): Promise<number> {
  const v = parse('preflight', argv, OPTIONS);
  if (v.help) return out(usage), 0;
  const phase = v.phase as string | undefined;
  if (phase === undefined) throw new UsageError('preflight: --phase is required: one of sft, grpo, bandit, apo');
  if (!(PHASES as readonly string[]).includes(phase)) throw new UsageError(`preflight: --phase must be one of sft, grpo, bandit, apo, got "${phase}"`);
  const split = givenSplit(v, 'preflight');
  let minReward: number | undefined;
  if (v['min-reward'] !== undefined) {
    minReward = Number(v['min-reward']);
    if (!Number.isFinite(minReward) || minReward < 0 || minReward > 1) {
      throw new UsageError(`preflight: --min-reward must be a number from 0 to 1, got "${String(v['min-reward'])}"`);
    }
  }
  let agents: string[] | undefined;
  if (v.agents !== undefined) {
    agents = String(v.agents)
      .split(',')
      .map((a) => a.trim())
      .filter((a) => a.length > 0);
    if (!agents.length) throw new UsageError('preflight: --agents must name at least one agent, e.g. --agents Writer,Critic (the agents of lab.json)');
  }

  const { loadConfig } = await import('../../core/config/loader');
  const { TraceStore } = await import('../../core/store/traceStore');
  const { configuredValTasks, runPreflight } = await import('../../core/train/export/preflight');
  const { preflightReportText } = await import('../../core/train/export/preflightText');
  const loaded = await loadConfig(resolve((v.workspace as string) ?? '.'));
  const valTasks = phase === 'apo' ? await configuredValTasks(loaded.workspaceDir, loaded.config) : undefined;
  // Pre-flight only reads: no journal, no checkpoint.
  const store = await TraceStore.open(loaded.workspaceDir, { readOnly: true });
  try {
    const report = runPreflight(store, loaded.config, {
      phase: phase as Phase,
      ...(agents ? { agents } : {}),
      ...(minReward !== undefined ? { minReward } : {}),
      ...(split ? { split } : {}),
      ...(valTasks !== undefined ? { valTasks } : {}),
      includeSimulated: v['include-simulated'] === true,
      includePenalised: v['include-penalised'] === true,
    });
    out(v.json ? JSON.stringify(report) : preflightReportText(report));
    return report.ok ? 0 : 1;
  } finally {
    await store.close();
  }
}
