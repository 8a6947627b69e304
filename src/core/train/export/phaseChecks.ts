import type { RolloutRecord } from '../../store/types';
import { agentsWithModelCalls } from './adapters/rolloutSelection';
import { droppedText } from './emptyExport';
import { countTrainingRows } from './exportData';
import { ran, type PreflightContext } from './preflightContext';
import { CHARS_PER_TOKEN, llmCallOf, supervisorDecisions, type LlmCall } from './preflightSpans';
import { MAX_LISTED } from './preflightTypes';
import { DEFAULT_SFT_MIN_REWARD } from './trainingDefaults';

/** Fewer Supervisor decisions than this make a poor bandit. */
export const MIN_BANDIT_DECISIONS = 20;

/** SFT: enough rollouts reach the minimum reward, and their prompts fit. */
export function sftChecks(ctx: PreflightContext): void {
  const minReward = ctx.opts.minReward ?? DEFAULT_SFT_MIN_REWARD;
  const pass = ctx.withAgents.filter((r) => r.finalReward! >= minReward);
  const below = ctx.withAgents.filter((r) => r.finalReward! < minReward);
  ctx.counts.passMinReward = pass.length;
  ctx.counts.belowMinReward = below.length;
  ctx.checks.push({
    id: 'min-reward',
    severity: pass.length === 0 ? 'error' : 'info',
    title: `${pass.length} of ${ctx.withAgents.length} rollouts reach the minimum reward ${minReward}${below.length ? `; ${below.length} below it left out` : ''}`,
    count: below.length,
    rollouts: (pass.length === 0 ? below : []).map((r) => r.id).slice(0, MAX_LISTED),
    fix: 'Lower the minimum reward (--min-reward, or the phase\'s minReward), or gather more rollouts so that enough score well.',
  });
  promptLengthCheck(ctx, pass);
  trainingRowsCheck(ctx);
}

/**
 * The rows the phase's export would write, counted by the export itself: 0 is
 * an error that says, per reason, what was dropped — whatever the other
 * checks found.
 */
function trainingRowsCheck(ctx: PreflightContext): void {
  const format = ctx.opts.phase === 'sft' ? 'sft' : 'rl';
  const minReward = ctx.opts.phase === 'sft' ? (ctx.opts.minReward ?? DEFAULT_SFT_MIN_REWARD) : ctx.opts.minReward;
  const rows = countTrainingRows(ctx.store, ctx.config, {
    format,
    agents: ctx.agents,
    split: ctx.opts.split ?? 'all',
    ...(minReward !== undefined ? { minReward } : {}),
    includeSimulated: ctx.opts.includeSimulated === true,
    includePenalised: ctx.opts.includePenalised === true,
  });
  ctx.counts.rows = rows.records;
  ctx.counts.rowRollouts = rows.rollouts;
  ctx.counts.penalisedRollouts = rows.penalised + (rows.skipped.penalised ?? 0);
  const dropped = Object.values(rows.skipped).reduce((a, b) => a + b, 0);
  const facts = { format, options: rows.options, skipped: rows.skipped, agentsSeen: agentsWithModelCalls(ctx.store, { ...(ctx.opts.split ? { split: ctx.opts.split } : {}), includeSimulated: true }) } as const;
  const penalised = rows.penalised ? `; ${rows.penalised} of those rollouts have a penalty for a reward and say so (reward_source "penalty")` : '';
  ctx.add(
    {
      id: 'training-rows',
      severity: 'error',
      title: rows.records
        ? `${rows.records} ${format.toUpperCase()} rows from ${rows.rollouts} rollouts${ctx.scope}${penalised}${dropped ? `; dropped: ${droppedText(facts)}` : ''}`
        : `0 rows to train on${ctx.scope}; dropped: ${droppedText(facts)}`,
      count: rows.records ? dropped : 1,
      fix: 'Each reason says what to change: change it, or gather rollouts that pass, and check again.',
    },
    rows.records > 0,
  );
}


/** GRPO: complete groups with some spread of rewards, behaviour logprobs and token ids, prompts that fit. */
export function grpoChecks(ctx: PreflightContext): void {
  const groupSize = ctx.config.training.groupSize;
  const groups = new Map<string, RolloutRecord[]>();
  for (const r of ctx.withAgents) {
    const key = groupKey(ctx, r);
    const g = groups.get(key);
    if (g) g.push(r);
    else groups.set(key, [r]);
  }
  const all = [...groups.values()];
  const small = all.filter((g) => g.length < groupSize);
  const complete = all.length - small.length;
  ctx.counts.groups = all.length;
  ctx.counts.completeGroups = complete;
  ctx.counts.smallGroups = small.length;
  const sizes = new Map<number, number>();
  for (const g of small) sizes.set(g.length, (sizes.get(g.length) ?? 0) + 1);
  const sizeText = [...sizes.entries()]
    .sort((a, b) => b[0] - a[0])
    .map(([size, n]) => `${n} of size ${size}`)
    .join(', ');
  if (all.length === 0) {
    ctx.nothing(
      { id: 'small-groups', title: `no groups to check: no usable rollout${ctx.scope} in which ${ctx.agents.join(', ') || 'a chosen agent'} ran`, fix: `Gather ${groupSize} samples per task (\`rollout-lab run --samples ${groupSize}\`).` },
      'error',
    );
  } else {
    ctx.add(
      {
        id: 'small-groups',
        severity: complete === 0 ? 'error' : 'warning',
        title: small.length
          ? `${small.length} of ${all.length} groups have fewer rollouts than the group size ${groupSize} (${sizeText}); ${complete} complete`
          : `all ${all.length} groups have at least ${groupSize} rollouts`,
        count: small.length,
        rollouts: small.flat().map((r) => r.id),
        fix: `Gather ${groupSize} samples per task (\`rollout-lab run --samples ${groupSize}\`, or the gather phase's samples), or lower training.groupSize in lab.json.`,
      },
      small.length === 0,
    );
  }

  // A group whose rewards are all equal has zero advantages: GRPO learns nothing from it.
  const flat = all.filter((g) => g.length >= 2 && g.every((r) => Math.abs(r.finalReward! - g[0]!.finalReward!) < 1e-12));
  ctx.counts.zeroVarianceGroups = flat.length;
  const comparable = all.filter((g) => g.length >= 2).length;
  if (comparable === 0) {
    ctx.nothing({ id: 'zero-variance-groups', title: 'no group of two or more rollouts to check for a spread of rewards', fix: 'Gather several samples per task (`rollout-lab run --samples N`).' });
  } else {
    ctx.add(
      {
        id: 'zero-variance-groups',
        severity: 'warning',
        title: flat.length
          ? `${flat.length} of ${all.length} groups have the same reward for every rollout: no learning signal`
          : 'every group with two or more rollouts has some spread of rewards',
        count: flat.length,
        rollouts: flat.flat().map((r) => r.id),
        fix: 'Sample with a higher temperature or more samples per task, or use criteria and weights that tell the answers apart.',
      },
      flat.length === 0,
    );
  }

  const calls = llmCalls(ctx, ctx.withAgents);
  const missingLp = calls.filter((c) => !c.call.hasLogprobs);
  const withLp = calls.length - missingLp.length;
  ctx.counts.llmCalls = calls.length;
  ctx.counts.callsWithLogprobs = withLp;
  const models = [...new Set(missingLp.map((c) => c.call.logicalModel ?? ctx.config.agents[c.call.agent]?.model ?? '<name>'))];
  if (calls.length === 0) {
    ctx.nothing(
      {
        id: 'missing-logprobs',
        title: `no model calls of ${ctx.agents.join(', ') || 'the chosen agents'} to check for token logprobs${ctx.scope}; GRPO trains on those calls`,
        fix: 'Gather rollouts in which these agents call their model (`rollout-lab run --samples N`), with models.<name>.logprobs: true in .rollout-lab/lab.json.',
      },
      'error',
    );
  } else {
    ctx.add(
      {
        id: 'missing-logprobs',
        severity: withLp === 0 ? 'error' : 'warning',
        title: missingLp.length
          ? `${missingLp.length} of ${calls.length} model calls of ${ctx.agents.join(', ')} have no token logprobs; GRPO's clipped ratio needs the behaviour policy's logprobs`
          : `all ${calls.length} model calls carry token logprobs`,
        count: missingLp.length,
        rollouts: uniqueIds(missingLp),
        fix: `Set ${models.map((m) => `models.${m}.logprobs: true`).join(' and ') || 'models.<name>.logprobs: true'} in .rollout-lab/lab.json (the server must support logprobs) and gather the rollouts again.`,
      },
      missingLp.length === 0,
    );
  }

  const missingIds = calls.filter((c) => !c.call.hasTokenIds);
  ctx.counts.callsWithTokenIds = calls.length - missingIds.length;
  // The trainer can re-tokenise the recorded text, so this only informs.
  if (calls.length === 0) {
    ctx.nothing({ id: 'missing-token-ids', title: 'no model calls to check for completion token ids', fix: 'Gather rollouts in which the chosen agents call their model.' });
  } else {
    ctx.checks.push({
      id: 'missing-token-ids',
      severity: 'info',
      title: missingIds.length
        ? `${missingIds.length} of ${calls.length} model calls have no completion token ids; the trainer re-tokenises their text`
        : `all ${calls.length} model calls carry completion token ids`,
      count: missingIds.length,
      rollouts: uniqueIds(missingIds).slice(0, MAX_LISTED),
      fix: 'For exact token-level training, serve the model with a server that returns completion token ids.',
    });
  }

  promptLengthCheck(ctx, ctx.withAgents, calls);
  trainingRowsCheck(ctx);
}

/** Bandit: enough complete decisions of the decision agents. */
export function banditChecks(ctx: PreflightContext): void {
  let decisions = 0;
  let complete = 0;
  const broken: string[] = [];
  for (const r of ctx.withAgents) {
    const found = supervisorDecisions(ctx.store.getSpans(r.id), ctx.agents);
    decisions += found.length;
    const ok = found.filter((d) => d.candidates > 0 && d.chosen !== null && d.chosen < d.candidates).length;
    complete += ok;
    if (ok < found.length) broken.push(r.id);
  }
  ctx.counts.decisions = decisions;
  ctx.counts.completeDecisions = complete;
  if (decisions === 0) {
    ctx.nothing({ id: 'incomplete-decisions', title: `no ${ctx.agents.join(', ')} decisions to check${ctx.scope}`, fix: 'Gather rollouts in which the decision agents choose (`rollout-lab run --limit N`).' });
  } else {
    ctx.add(
      {
        id: 'incomplete-decisions',
        severity: 'warning',
        title: decisions - complete
          ? `${decisions - complete} of ${decisions} ${ctx.agents.join(', ')} decisions have no candidates or no valid chosen index; they are left out`
          : `all ${decisions} ${ctx.agents.join(', ')} decisions have candidates and a chosen index`,
        count: decisions - complete,
        rollouts: broken,
        fix: 'Open these traces: the candidate agents failed or the decision could not be parsed; fix the prompt or the model and gather again.',
      },
      decisions === complete,
    );
  }
  ctx.add(
    {
      id: 'few-decisions',
      severity: complete === 0 ? 'error' : 'warning',
      title:
        complete < MIN_BANDIT_DECISIONS
          ? `only ${complete} usable decisions (with a reward); a bandit needs at least ${MIN_BANDIT_DECISIONS} to learn anything`
          : `${complete} usable decisions`,
      count: complete < MIN_BANDIT_DECISIONS ? MIN_BANDIT_DECISIONS - complete : 0,
      fix: `Gather more rollouts (\`rollout-lab run --limit N\`) until there are at least ${MIN_BANDIT_DECISIONS} decisions with a reward.`,
    },
    complete >= MIN_BANDIT_DECISIONS,
  );
}

/** APO: enough low-reward rollouts per agent for the critic, and enough validation tasks. */
export function apoChecks(ctx: PreflightContext): void {
  const want = ctx.config.optimize.lowRewardRollouts;
  const short: string[] = [];
  for (const agent of ctx.agents) {
    const n = ctx.usable.filter((r) => r.agents.some((a) => a.agent === agent && ran(a))).length;
    if (n < want) short.push(`${agent} (${n})`);
  }
  if (ctx.agents.length === 0) {
    ctx.nothing({ id: 'few-low-reward-rollouts', title: 'no agents to check for low-reward rollouts', fix: 'Choose the agents to optimise (--agents).' });
  } else {
    ctx.add(
      {
        id: 'few-low-reward-rollouts',
        severity: 'warning',
        title: short.length
          ? `the critic is shown the ${want} lowest-reward rollouts of an agent, but fewer have a reward for: ${short.join(', ')}`
          : `every agent has at least ${want} rollouts with a reward for the critic`,
        count: short.length,
        fix: 'Gather more rollouts first, or lower optimize.lowRewardRollouts in lab.json.',
      },
      short.length === 0,
    );
  }

  const fromStore = ctx.opts.valTasks === undefined;
  const valTasks = fromStore
    ? new Set(ctx.store.listRollouts({ split: 'val' }).rollouts.map((r) => r.taskId)).size
    : ctx.opts.valTasks!;
  const wantVal = ctx.config.optimize.validationTasks;
  ctx.counts.valTasks = valTasks;
  ctx.add(
    {
      id: 'few-validation-tasks',
      severity: 'warning',
      title:
        valTasks < wantVal
          ? `${valTasks} validation tasks${fromStore ? ' with rollouts in the store' : ' in the dataset'}, fewer than optimize.validationTasks ${wantVal}; candidates are scored on fewer tasks`
          : `${valTasks} validation tasks${fromStore ? ' with rollouts in the store' : ' in the dataset'} (${wantVal} used)`,
      count: Math.max(0, wantVal - valTasks),
      fix: 'Use a dataset with more validation tasks (a smaller datasets.<name>.trainFraction), or lower optimize.validationTasks.',
    },
    valTasks >= wantVal,
  );
}

/** Rollouts of one task whose chosen agents ran the same prompt and model versions. */
function groupKey(ctx: PreflightContext, r: RolloutRecord): string {
  const versions = r.agents
    .filter((a) => ctx.agents.includes(a.agent) && ran(a))
    .map((a) => `${a.agent}=${a.promptVersion ?? '-'}/${a.model ?? '-'}@${a.modelVersion ?? '-'}`)
    .sort();
  return JSON.stringify([r.taskId, versions]);
}

/** The chosen agents' successful model calls, read one rollout at a time. */
function llmCalls(ctx: PreflightContext, rollouts: RolloutRecord[]): Array<{ rolloutId: string; call: LlmCall }> {
  const calls: Array<{ rolloutId: string; call: LlmCall }> = [];
  for (const r of rollouts) {
    for (const s of ctx.store.getSpans(r.id)) {
      const call = llmCallOf(s, ctx.agents);
      if (call) calls.push({ rolloutId: r.id, call });
    }
  }
  return calls;
}

function promptLengthCheck(ctx: PreflightContext, rollouts: RolloutRecord[], known?: Array<{ rolloutId: string; call: LlmCall }>): void {
  const max = ctx.config.training.maxPromptTokens;
  const calls = known ?? llmCalls(ctx, rollouts);
  const long = calls.filter((c) => c.call.promptTokens > max);
  ctx.counts.longPrompts = long.length;
  if (calls.length === 0) {
    ctx.nothing({ id: 'long-prompts', title: 'no model calls whose prompts could be checked against training.maxPromptTokens', fix: 'Gather rollouts in which the chosen agents call their model.' });
    return;
  }
  ctx.add(
    {
      id: 'long-prompts',
      // Every call over the limit: the trainer would drop them all.
      severity: long.length === calls.length ? 'error' : 'warning',
      title: long.length
        ? `${long.length} of ${calls.length} model calls have prompts longer than training.maxPromptTokens ${max} (estimated at ${CHARS_PER_TOKEN} characters a token); the trainer truncates or drops them${long.length === calls.length ? ', so no row is left to train on' : ''}`
        : `all ${calls.length} prompts fit in training.maxPromptTokens ${max} (estimated at ${CHARS_PER_TOKEN} characters a token)`,
      count: long.length,
      rollouts: uniqueIds(long),
      fix: 'Raise training.maxPromptTokens if the model takes longer inputs, or shorten the prompts and tool results (tools.searchTopK).',
    },
    long.length === 0,
  );
}

function uniqueIds(calls: Array<{ rolloutId: string }>): string[] {
  return [...new Set(calls.map((c) => c.rolloutId))];
}
