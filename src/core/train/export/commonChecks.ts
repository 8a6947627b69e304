import { isScoredFailure } from './adapters/rolloutSelection';
import { ran, type PreflightContext } from './preflightContext';

const DEFAULT_SIMULATED_HINT = 'pass --include-simulated to use them';

/**
 * Simulated rollouts answer from a test double: left out unless asked for,
 * an error when nothing else is in scope (the phase would learn only the
 * simulator), a warning when included.
 */
export function simulatedCheck(ctx: PreflightContext): void {
  const n = ctx.simulated.length;
  const ids = ctx.simulated.map((r) => r.id);
  const fix =
    'The simulated endpoint is a test double: point the models at a real server (models.<name>.baseUrl in lab.json, or --base-url) and gather again; include simulated rollouts only to try the pipeline out.';
  if (ctx.opts.includeSimulated) {
    ctx.add(
      {
        id: 'simulated-rollouts',
        severity: 'warning',
        title: n
          ? `${n} of ${ctx.finished.length} rollouts${ctx.scope} are simulated and included: a model trained on them learns the simulator, not the task`
          : `no simulated rollouts${ctx.scope}`,
        count: n,
        rollouts: ids,
        fix,
      },
      n === 0,
    );
    return;
  }
  const hint = ctx.opts.includeSimulatedHint ?? DEFAULT_SIMULATED_HINT;
  const only = n > 0 && ctx.finished.length === 0;
  ctx.add(
    {
      id: 'simulated-rollouts',
      severity: only ? 'error' : 'info',
      title: only
        ? `all ${n} rollouts${ctx.scope} are simulated, so nothing is left to train on: ${n} simulated rollouts left out (${hint})`
        : n
          ? `${n} simulated rollouts${ctx.scope} left out (${hint})`
          : `no simulated rollouts${ctx.scope}`,
      count: n,
      rollouts: only ? ids : [],
      fix,
    },
    n === 0,
  );
}

/** Checks every phase runs: failed rollouts, missing rewards, judge failures, agents without rollouts. */
export function commonChecks(ctx: PreflightContext): void {
  const failed = ctx.finished.filter(
    (r) => r.status === 'cancelled' || (r.status === 'failed' && !(ctx.keepsScoredFailures && isScoredFailure(r))),
  );
  const scored = ctx.keepsScoredFailures ? ctx.usable.filter(isScoredFailure) : [];
  ctx.counts.failed = failed.length;
  if (ctx.keepsScoredFailures) ctx.counts.scoredFailures = scored.length;
  const kept = scored.length ? `${scored.length} failed with a reward (no output) and are kept: GRPO learns from them too` : '';
  if (ctx.finished.length === 0) {
    ctx.nothing({ id: 'failed-rollouts', title: `no finished rollouts${ctx.scope} to check`, fix: 'Run rollouts first (`rollout-lab run --samples N`).' });
  } else {
    ctx.add(
      {
        id: 'failed-rollouts',
        severity: 'warning',
        title: failed.length
          ? `${failed.length} of ${ctx.finished.length} rollouts${ctx.scope} failed or were cancelled; they are left out${kept ? `; ${kept}` : ''}`
          : kept
            ? `of ${ctx.finished.length} rollouts${ctx.scope}, ${kept}`
            : `no failed or cancelled rollouts among ${ctx.finished.length}${ctx.scope}`,
        count: failed.length,
        rollouts: failed.map((r) => r.id),
        fix: 'Open a failed rollout to see its error; fix the endpoint or the graph and re-run with `rollout-lab run --resume RUN`.',
      },
      failed.length === 0,
    );
  }

  const noReward = ctx.finished.filter((r) => r.status === 'succeeded' && r.finalReward === null);
  const needsReward = ctx.opts.phase === 'grpo' || ctx.opts.phase === 'bandit';
  ctx.counts.noReward = noReward.length;
  const succeeded = ctx.finished.filter((r) => r.status === 'succeeded').length;
  if (succeeded === 0) {
    ctx.nothing({ id: 'missing-rewards', title: `no succeeded rollouts${ctx.scope} to check for a final reward`, fix: 'Run rollouts first, or fix what made them fail (see the failed rollouts).' });
  } else {
    ctx.add(
      {
        id: 'missing-rewards',
        severity: needsReward ? 'error' : 'warning',
        title: noReward.length
          ? `${noReward.length} succeeded rollouts have no final reward${needsReward ? `; ${ctx.opts.phase} learns from rewards` : ''}`
          : 'every succeeded rollout has a final reward',
        count: noReward.length,
        rollouts: noReward.map((r) => r.id),
        fix: 'Score them again with `rollout-lab rescore` (needs stored criterion scores), or re-run those tasks.',
      },
      noReward.length === 0,
    );
  }

  const judgeFailed = ctx.usable.filter((r) => r.judgeFailed);
  ctx.counts.judgeFailed = judgeFailed.length;
  // A rollout the judge ran on has criterion scores; with a custom reward in mode "replace" it may never run.
  const judged = ctx.usable.filter((r) => r.criteria !== null).length;
  ctx.counts.judged = judged;
  if (ctx.usable.length === 0) {
    ctx.nothing({ id: 'judge-failures', title: `no usable rollouts${ctx.scope} whose scores could be checked`, fix: 'Run rollouts first (`rollout-lab run --samples N`).' });
  } else {
    ctx.add(
      {
        id: 'judge-failures',
        severity: 'warning',
        title: judgeFailed.length
          ? `the judge failed on ${judgeFailed.length} rollouts; their reward is the penalty ${ctx.config.reward.judgeFailurePenalty}, not a score: ${
              ctx.opts.includePenalised ? 'included, their rows say reward_source "penalty"' : 'left out (include them with --include-penalised, or the phase\'s "includePenalised": true)'
            }`
          : scoredBy(ctx, judged),
        count: judgeFailed.length,
        rollouts: judgeFailed.map((r) => r.id),
        fix: 'Check the judge model (reward.judge.model) and its answers in these traces, then re-run them, or leave them out with a minimum reward.',
      },
      judgeFailed.length === 0,
    );
  }

  if (ctx.agents.length === 0) {
    ctx.add(
      {
        id: 'agents-without-rollouts',
        severity: 'error',
        title: `no agent made model calls in the usable rollouts${ctx.scope}, so there is nothing to train`,
        count: 1,
        fix: `Run rollouts first (\`rollout-lab run --samples N\`), or name the agents (--agents), or mark them "trainable": true in lab.json: ${Object.keys(ctx.config.agents).join(', ') || '(none)'}.`,
      },
      false,
    );
    return;
  }
  const missing = ctx.agents.filter((agent) => !ctx.usable.some((r) => r.agents.some((a) => a.agent === agent && ran(a))));
  ctx.add(
    {
      id: 'agents-without-rollouts',
      severity: 'error',
      title: missing.length
        ? `no usable rollout${ctx.scope} in which ${missing.join(', ')} ran`
        : `usable rollouts${ctx.scope} for ${ctx.agents.join(', ')}: ${ctx.withAgents.length}`,
      count: missing.length,
      fix: `Run rollouts first (\`rollout-lab run --samples N\`), or choose agents of lab.json: ${Object.keys(ctx.config.agents).join(', ') || '(none)'}.`,
    },
    missing.length === 0,
  );
}

/** What scored the usable rollouts, when the judge never failed: said from lab.json's reward and the stored judge scores. */
function scoredBy(ctx: PreflightContext, judged: number): string {
  const n = ctx.usable.length;
  const { module, mode } = ctx.config.reward;
  if (module) {
    if (mode === 'combine') return `the custom reward ${module} and the judge scored the rollouts (mode "combine"); the judge scored ${judged} of ${n}`;
    return `the custom reward ${module} scored the ${n} rollouts (mode "replace"); ${judged ? `the judge ran on ${judged} of them, when the module asked for it` : 'the judge never ran'}`;
  }
  if (judged === n) return n ? 'the judge scored every rollout' : 'no usable rollout to be scored yet';
  return `the judge scored ${judged} of ${n} rollouts; the other ${n - judged} have no judge scores (no final output to judge: reward.noOutputReward)`;
}
