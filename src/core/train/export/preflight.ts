/**
 * Pre-flight checks: before a training phase spends GPU time, look at the
 * stored rollouts it would learn from and say, with counts and the offending
 * rollout ids, what would make the phase useless or wrong — simulated
 * rollouts, failed rollouts, missing rewards, GRPO groups too small or with no reward spread, missing
 * behaviour logprobs, prompts longer than the trainer takes, Supervisor
 * decisions that cannot be replayed, too little data to optimise a prompt.
 *
 * It only reads: the rollout rows from the catalog, and the spans one rollout
 * at a time (never all of them at once), so it stays bounded on large stores.
 */
import { resolve } from 'node:path';
import type { LabConfig } from '../../config/schema';
import { loadDataset, splitTasks } from '../../data/dataset';
import type { RolloutRecord, Split } from '../../store/types';
import type { TraceStore } from '../../store/traceStore';
import { Attr, type SpanRecord } from '../../trace/span';
import { agentsWithModelCalls, isScoredFailure, type RolloutScope } from './adapters/rolloutSelection';
import { DEFAULT_SFT_MIN_REWARD, defaultDataSplit, defaultTrainingAgents, requireBanditGraph, splitScope, type TrainingRole } from './trainingDefaults';

export type PreflightPhase = 'sft' | 'grpo' | 'bandit' | 'apo';
export const PREFLIGHT_PHASES: readonly PreflightPhase[] = ['sft', 'grpo', 'bandit', 'apo'];

export type PreflightSeverity = 'error' | 'warning' | 'info';

export interface PreflightCheck {
  /** Stable id, e.g. "failed-rollouts". */
  id: string;
  /** 'info' with count 0 means the check passed. */
  severity: PreflightSeverity;
  title: string;
  /** How many things the check found (rollouts, groups, model calls: the title says which). */
  count: number;
  /** Up to MAX_LISTED offending rollout ids. */
  rollouts: string[];
  /** One sentence: what to do about it. */
  fix: string;
}

export interface PreflightReport {
  phase: PreflightPhase;
  /** No check has severity 'error'. */
  ok: boolean;
  checks: PreflightCheck[];
  counts: Record<string, number>;
}

export interface PreflightOptions {
  phase: PreflightPhase;
  /** Agents the phase trains; the defaults depend on the phase and the graph (see defaultPreflightAgents). */
  agents?: string[];
  /** SFT: rollouts at or over this reward are used (default 0.7). */
  minReward?: number;
  /** The rollouts checked: a split, or 'all'; default the split the phase trains on (defaultDataSplit). */
  split?: Split | 'all';
  /** Rollouts of the simulated endpoint are left out (and counted) unless this is true. */
  includeSimulated?: boolean;
  /** How the caller includes simulated rollouts, said after their count (default: the CLI's flag). */
  includeSimulatedHint?: string;
  /**
   * APO: validation tasks the dataset has. The caller knows the dataset; when
   * left out, the distinct val-split tasks that have rollouts in the store are counted.
   */
  valTasks?: number;
}

/** The options the checks run with: the split resolved (none: every split). */
type CheckedOptions = Omit<PreflightOptions, 'split'> & { split?: Split };

/** Offending rollout ids listed per check. */
export const MAX_LISTED = 50;
/** Fewer Supervisor decisions than this make a poor bandit. */
export const MIN_BANDIT_DECISIONS = 20;
/** Characters per token of the prompt-length estimate (a tokenizer would be exact). */
const CHARS_PER_TOKEN = 4;

const ROLE: Record<PreflightPhase, TrainingRole> = { sft: 'sft', grpo: 'rl', bandit: 'bandit', apo: 'apo' };
const DEFAULT_SIMULATED_HINT = 'pass --include-simulated to use them';

/**
 * The agents a phase trains when none are given: on the research-lab graph
 * the juniors (sft), the seniors (grpo), the bandit's decision agent, every
 * agent (apo); on a module graph the agents lab.json marks trainable, else
 * every agent that made model calls in the rollouts in scope.
 */
export function defaultPreflightAgents(store: TraceStore, config: LabConfig, phase: PreflightPhase, scope: RolloutScope = {}): string[] {
  return defaultTrainingAgents(config, ROLE[phase], () => agentsWithModelCalls(store, scope));
}

/** Runs the checks of one phase over the stored rollouts. */
export function runPreflight(store: TraceStore, config: LabConfig, options: PreflightOptions): PreflightReport {
  if (options.phase === 'bandit') requireBanditGraph(config);
  const { split, ...rest } = options;
  const opts: CheckedOptions = { ...rest, ...splitScope(split ?? defaultDataSplit(options.phase)) };
  const scope: RolloutScope = { ...(opts.split ? { split: opts.split } : {}), includeSimulated: opts.includeSimulated === true };
  const agents = opts.agents?.length ? [...new Set(opts.agents)] : defaultPreflightAgents(store, config, opts.phase, scope);
  const ctx = new Context(store, config, opts, agents);
  ctx.simulatedCheck();
  ctx.commonChecks();
  switch (opts.phase) {
    case 'sft':
      ctx.sftChecks();
      break;
    case 'grpo':
      ctx.grpoChecks();
      break;
    case 'bandit':
      ctx.banditChecks();
      break;
    case 'apo':
      ctx.apoChecks();
      break;
  }
  return { phase: opts.phase, ok: !ctx.checks.some((c) => c.severity === 'error'), checks: ctx.checks, counts: ctx.counts };
}

/** One model call of a chosen agent, as the checks need it. */
interface LlmCall {
  agent: string;
  logicalModel: string | null;
  promptTokens: number;
  hasLogprobs: boolean;
  hasTokenIds: boolean;
}

class Context {
  readonly checks: PreflightCheck[] = [];
  readonly counts: Record<string, number> = {};
  /** Finished rollouts of the split (simulated ones only when included): the phase's candidates. */
  private readonly finished: RolloutRecord[];
  /** Finished simulated rollouts of the split, included or not. */
  private readonly simulated: RolloutRecord[];
  /** Succeeded with a final reward; for grpo also failures the runner still scored (the negative signal). */
  private readonly usable: RolloutRecord[];
  /** Usable rollouts in which a chosen agent ran. */
  private readonly withAgents: RolloutRecord[];

  constructor(
    private readonly store: TraceStore,
    private readonly config: LabConfig,
    private readonly opts: CheckedOptions,
    private readonly agents: string[],
  ) {
    // Oldest first, so the listed ids follow the order the rollouts ran in.
    const all = store.listRollouts({ ...(opts.split ? { split: opts.split } : {}), sort: 'startTime', order: 'asc' }).rollouts;
    const finished = all.filter((r) => r.status !== 'running');
    this.simulated = finished.filter((r) => r.simulated);
    this.finished = opts.includeSimulated ? finished : finished.filter((r) => !r.simulated);
    this.usable = this.finished.filter((r) => r.finalReward !== null && (r.status === 'succeeded' || (this.keepsScoredFailures && isScoredFailure(r))));
    this.withAgents = this.usable.filter((r) => this.ranChosen(r));
    this.counts.rollouts = this.finished.length;
    this.counts.simulated = this.simulated.length;
    this.counts.running = all.length - finished.length;
    this.counts.usable = this.usable.length;
    this.counts.withAgents = this.withAgents.length;
  }

  /** GRPO compares a group's rollouts with each other: a scored failure (no output) is part of its signal. */
  private get keepsScoredFailures(): boolean {
    return this.opts.phase === 'grpo';
  }

  private ranChosen(r: RolloutRecord): boolean {
    return r.agents.some((a) => this.agents.includes(a.agent) && ran(a));
  }

  private add(check: Omit<PreflightCheck, 'rollouts'> & { rollouts?: string[] }, passed: boolean): void {
    this.checks.push({
      id: check.id,
      severity: passed ? 'info' : check.severity,
      title: check.title,
      count: check.count,
      rollouts: (check.rollouts ?? []).slice(0, MAX_LISTED),
      fix: check.fix,
    });
  }

  private get scope(): string {
    return this.opts.split ? ` (${this.opts.split} split)` : '';
  }

  /**
   * Simulated rollouts answer from a test double: left out unless asked for,
   * an error when nothing else is in scope (the phase would learn only the
   * simulator), a warning when included.
   */
  simulatedCheck(): void {
    const n = this.simulated.length;
    const ids = this.simulated.map((r) => r.id);
    const fix =
      'The simulated endpoint is a test double: point the models at a real server (models.<name>.baseUrl in lab.json, or --base-url) and gather again; include simulated rollouts only to try the pipeline out.';
    if (this.opts.includeSimulated) {
      this.add(
        {
          id: 'simulated-rollouts',
          severity: 'warning',
          title: n
            ? `${n} of ${this.finished.length} rollouts${this.scope} are simulated and included: a model trained on them learns the simulator, not the task`
            : `no simulated rollouts${this.scope}`,
          count: n,
          rollouts: ids,
          fix,
        },
        n === 0,
      );
      return;
    }
    const hint = this.opts.includeSimulatedHint ?? DEFAULT_SIMULATED_HINT;
    const only = n > 0 && this.finished.length === 0;
    this.add(
      {
        id: 'simulated-rollouts',
        severity: only ? 'error' : 'info',
        title: only
          ? `all ${n} rollouts${this.scope} are simulated, so nothing is left to train on: ${n} simulated rollouts left out (${hint})`
          : n
            ? `${n} simulated rollouts${this.scope} left out (${hint})`
            : `no simulated rollouts${this.scope}`,
        count: n,
        rollouts: only ? ids : [],
        fix,
      },
      n === 0,
    );
  }

  commonChecks(): void {
    const failed = this.finished.filter(
      (r) => r.status === 'cancelled' || (r.status === 'failed' && !(this.keepsScoredFailures && isScoredFailure(r))),
    );
    const scored = this.keepsScoredFailures ? this.usable.filter(isScoredFailure) : [];
    this.counts.failed = failed.length;
    if (this.keepsScoredFailures) this.counts.scoredFailures = scored.length;
    const kept = scored.length ? `${scored.length} failed with a reward (no output) and are kept: GRPO learns from them too` : '';
    this.add(
      {
        id: 'failed-rollouts',
        severity: 'warning',
        title: failed.length
          ? `${failed.length} of ${this.finished.length} rollouts${this.scope} failed or were cancelled; they are left out${kept ? `; ${kept}` : ''}`
          : kept
            ? `of ${this.finished.length} rollouts${this.scope}, ${kept}`
            : `no failed or cancelled rollouts among ${this.finished.length}${this.scope}`,
        count: failed.length,
        rollouts: failed.map((r) => r.id),
        fix: 'Open a failed rollout to see its error; fix the endpoint or the graph and re-run with `rollout-lab run --resume RUN`.',
      },
      failed.length === 0,
    );

    const noReward = this.finished.filter((r) => r.status === 'succeeded' && r.finalReward === null);
    const needsReward = this.opts.phase === 'grpo' || this.opts.phase === 'bandit';
    this.counts.noReward = noReward.length;
    this.add(
      {
        id: 'missing-rewards',
        severity: needsReward ? 'error' : 'warning',
        title: noReward.length
          ? `${noReward.length} succeeded rollouts have no final reward${needsReward ? `; ${this.opts.phase} learns from rewards` : ''}`
          : 'every succeeded rollout has a final reward',
        count: noReward.length,
        rollouts: noReward.map((r) => r.id),
        fix: 'Score them again with `rollout-lab rescore` (needs stored criterion scores), or re-run those tasks.',
      },
      noReward.length === 0,
    );

    const judgeFailed = this.usable.filter((r) => r.judgeFailed);
    this.counts.judgeFailed = judgeFailed.length;
    // A rollout the judge ran on has criterion scores; with a custom reward in mode "replace" it may never run.
    const judged = this.usable.filter((r) => r.criteria !== null).length;
    this.counts.judged = judged;
    this.add(
      {
        id: 'judge-failures',
        severity: 'warning',
        title: judgeFailed.length
          ? `the judge failed on ${judgeFailed.length} rollouts; their reward is the penalty ${this.config.reward.judgeFailurePenalty}, not a score`
          : this.scoredBy(judged),
        count: judgeFailed.length,
        rollouts: judgeFailed.map((r) => r.id),
        fix: 'Check the judge model (reward.judge.model) and its answers in these traces, then re-run them, or leave them out with a minimum reward.',
      },
      judgeFailed.length === 0,
    );

    if (this.agents.length === 0) {
      this.add(
        {
          id: 'agents-without-rollouts',
          severity: 'error',
          title: `no agent made model calls in the usable rollouts${this.scope}, so there is nothing to train`,
          count: 1,
          fix: `Run rollouts first (\`rollout-lab run --samples N\`), or name the agents (--agents), or mark them "trainable": true in lab.json: ${Object.keys(this.config.agents).join(', ') || '(none)'}.`,
        },
        false,
      );
      return;
    }
    const missing = this.agents.filter((agent) => !this.usable.some((r) => r.agents.some((a) => a.agent === agent && ran(a))));
    this.add(
      {
        id: 'agents-without-rollouts',
        severity: 'error',
        title: missing.length
          ? `no usable rollout${this.scope} in which ${missing.join(', ')} ran`
          : `usable rollouts${this.scope} for ${this.agents.join(', ')}: ${this.withAgents.length}`,
        count: missing.length,
        fix: `Run rollouts first (\`rollout-lab run --samples N\`), or choose agents of lab.json: ${Object.keys(this.config.agents).join(', ') || '(none)'}.`,
      },
      missing.length === 0,
    );
  }

  /** What scored the usable rollouts, when the judge never failed: said from lab.json's reward and the stored judge scores. */
  private scoredBy(judged: number): string {
    const n = this.usable.length;
    const { module, mode } = this.config.reward;
    if (module) {
      if (mode === 'combine') return `the custom reward ${module} and the judge scored the rollouts (mode "combine"); the judge scored ${judged} of ${n}`;
      return `the custom reward ${module} scored the ${n} rollouts (mode "replace"); ${judged ? `the judge ran on ${judged} of them, when the module asked for it` : 'the judge never ran'}`;
    }
    if (judged === n) return n ? 'the judge scored every rollout' : 'no usable rollout to be scored yet';
    return `the judge scored ${judged} of ${n} rollouts; the other ${n - judged} have no judge scores (no final output to judge: reward.noOutputReward)`;
  }

  sftChecks(): void {
    const minReward = this.opts.minReward ?? DEFAULT_SFT_MIN_REWARD;
    const pass = this.withAgents.filter((r) => r.finalReward! >= minReward);
    const below = this.withAgents.filter((r) => r.finalReward! < minReward);
    this.counts.passMinReward = pass.length;
    this.counts.belowMinReward = below.length;
    this.checks.push({
      id: 'min-reward',
      severity: pass.length === 0 ? 'error' : 'info',
      title: `${pass.length} of ${this.withAgents.length} rollouts reach the minimum reward ${minReward}${below.length ? `; ${below.length} below it left out` : ''}`,
      count: below.length,
      rollouts: (pass.length === 0 ? below : []).map((r) => r.id).slice(0, MAX_LISTED),
      fix: 'Lower the minimum reward (--min-reward, or the phase\'s minReward), or gather more rollouts so that enough score well.',
    });
    this.promptLengthCheck(pass);
  }

  grpoChecks(): void {
    const groupSize = this.config.training.groupSize;
    const groups = new Map<string, RolloutRecord[]>();
    for (const r of this.withAgents) {
      const key = this.groupKey(r);
      const g = groups.get(key);
      if (g) g.push(r);
      else groups.set(key, [r]);
    }
    const all = [...groups.values()];
    const small = all.filter((g) => g.length < groupSize);
    const complete = all.length - small.length;
    this.counts.groups = all.length;
    this.counts.completeGroups = complete;
    this.counts.smallGroups = small.length;
    const sizes = new Map<number, number>();
    for (const g of small) sizes.set(g.length, (sizes.get(g.length) ?? 0) + 1);
    const sizeText = [...sizes.entries()]
      .sort((a, b) => b[0] - a[0])
      .map(([size, n]) => `${n} of size ${size}`)
      .join(', ');
    this.add(
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
      all.length > 0 && small.length === 0,
    );

    // A group whose rewards are all equal has zero advantages: GRPO learns nothing from it.
    const flat = all.filter((g) => g.length >= 2 && g.every((r) => Math.abs(r.finalReward! - g[0]!.finalReward!) < 1e-12));
    this.counts.zeroVarianceGroups = flat.length;
    this.add(
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

    const calls = this.llmCalls(this.withAgents);
    const missingLp = calls.filter((c) => !c.call.hasLogprobs);
    const withLp = calls.length - missingLp.length;
    this.counts.llmCalls = calls.length;
    this.counts.callsWithLogprobs = withLp;
    const models = [...new Set(missingLp.map((c) => c.call.logicalModel ?? this.config.agents[c.call.agent]?.model ?? '<name>'))];
    this.add(
      {
        id: 'missing-logprobs',
        severity: calls.length > 0 && withLp === 0 ? 'error' : 'warning',
        title: missingLp.length
          ? `${missingLp.length} of ${calls.length} model calls of ${this.agents.join(', ')} have no token logprobs; GRPO's clipped ratio needs the behaviour policy's logprobs`
          : `all ${calls.length} model calls carry token logprobs`,
        count: missingLp.length,
        rollouts: uniqueIds(missingLp),
        fix: `Set ${models.map((m) => `models.${m}.logprobs: true`).join(' and ') || 'models.<name>.logprobs: true'} in .rollout-lab/lab.json (the server must support logprobs) and gather the rollouts again.`,
      },
      missingLp.length === 0,
    );

    const missingIds = calls.filter((c) => !c.call.hasTokenIds);
    this.counts.callsWithTokenIds = calls.length - missingIds.length;
    // The trainer can re-tokenise the recorded text, so this only informs.
    this.checks.push({
      id: 'missing-token-ids',
      severity: 'info',
      title: missingIds.length
        ? `${missingIds.length} of ${calls.length} model calls have no completion token ids; the trainer re-tokenises their text`
        : `all ${calls.length} model calls carry completion token ids`,
      count: missingIds.length,
      rollouts: uniqueIds(missingIds).slice(0, MAX_LISTED),
      fix: 'For exact token-level training, serve the model with a server that returns completion token ids.',
    });

    this.promptLengthCheck(this.withAgents, calls);
  }

  banditChecks(): void {
    let decisions = 0;
    let complete = 0;
    const broken: string[] = [];
    for (const r of this.withAgents) {
      const found = supervisorDecisions(this.store.getSpans(r.id), this.agents);
      decisions += found.length;
      const ok = found.filter((d) => d.candidates > 0 && d.chosen !== null && d.chosen < d.candidates).length;
      complete += ok;
      if (ok < found.length) broken.push(r.id);
    }
    this.counts.decisions = decisions;
    this.counts.completeDecisions = complete;
    this.add(
      {
        id: 'incomplete-decisions',
        severity: 'warning',
        title: decisions - complete
          ? `${decisions - complete} of ${decisions} ${this.agents.join(', ')} decisions have no candidates or no valid chosen index; they are left out`
          : `all ${decisions} ${this.agents.join(', ')} decisions have candidates and a chosen index`,
        count: decisions - complete,
        rollouts: broken,
        fix: 'Open these traces: the candidate agents failed or the decision could not be parsed; fix the prompt or the model and gather again.',
      },
      decisions === complete,
    );
    this.add(
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

  apoChecks(): void {
    const want = this.config.optimize.lowRewardRollouts;
    const short: string[] = [];
    for (const agent of this.agents) {
      const n = this.usable.filter((r) => r.agents.some((a) => a.agent === agent && ran(a))).length;
      if (n < want) short.push(`${agent} (${n})`);
    }
    this.add(
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

    const fromStore = this.opts.valTasks === undefined;
    const valTasks = fromStore
      ? new Set(this.store.listRollouts({ split: 'val' }).rollouts.map((r) => r.taskId)).size
      : this.opts.valTasks!;
    const wantVal = this.config.optimize.validationTasks;
    this.counts.valTasks = valTasks;
    this.add(
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
  private groupKey(r: RolloutRecord): string {
    const versions = r.agents
      .filter((a) => this.agents.includes(a.agent) && ran(a))
      .map((a) => `${a.agent}=${a.promptVersion ?? '-'}/${a.model ?? '-'}@${a.modelVersion ?? '-'}`)
      .sort();
    return JSON.stringify([r.taskId, versions]);
  }

  /** The chosen agents' successful model calls, read one rollout at a time. */
  private llmCalls(rollouts: RolloutRecord[]): Array<{ rolloutId: string; call: LlmCall }> {
    const calls: Array<{ rolloutId: string; call: LlmCall }> = [];
    for (const r of rollouts) {
      for (const s of this.store.getSpans(r.id)) {
        const call = llmCallOf(s, this.agents);
        if (call) calls.push({ rolloutId: r.id, call });
      }
    }
    return calls;
  }

  private promptLengthCheck(rollouts: RolloutRecord[], known?: Array<{ rolloutId: string; call: LlmCall }>): void {
    const max = this.config.training.maxPromptTokens;
    const calls = known ?? this.llmCalls(rollouts);
    const long = calls.filter((c) => c.call.promptTokens > max);
    this.counts.longPrompts = long.length;
    this.add(
      {
        id: 'long-prompts',
        severity: 'warning',
        title: long.length
          ? `${long.length} of ${calls.length} model calls have prompts longer than training.maxPromptTokens ${max} (estimated at ${CHARS_PER_TOKEN} characters a token); the trainer truncates or drops them`
          : `all ${calls.length} prompts fit in training.maxPromptTokens ${max} (estimated at ${CHARS_PER_TOKEN} characters a token)`,
        count: long.length,
        rollouts: uniqueIds(long),
        fix: 'Raise training.maxPromptTokens if the model takes longer inputs, or shorten the prompts and tool results (tools.searchTopK).',
      },
      long.length === 0,
    );
  }
}

/** Whether an agent did something in a rollout: a visit of its node, or a model call (a module graph's node may be named otherwise). */
function ran(a: RolloutRecord['agents'][number]): boolean {
  return a.visits > 0 || a.llmCalls > 0;
}

function uniqueIds(calls: Array<{ rolloutId: string }>): string[] {
  return [...new Set(calls.map((c) => c.rolloutId))];
}

function llmCallOf(s: SpanRecord, agents: string[]): LlmCall | null {
  if (s.kind !== 'llm' || s.status === 'error') return null;
  const agent = s.attributes[Attr.agentName];
  if (typeof agent !== 'string' || !agents.includes(agent)) return null;
  const lp = s.attributes[Attr.logprobs];
  const ids = s.attributes[Attr.tokenIds];
  const logical = s.attributes[Attr.logicalModel];
  return {
    agent,
    logicalModel: typeof logical === 'string' ? logical : null,
    promptTokens: Math.ceil(promptChars(s.attributes[Attr.inputMessages]) / CHARS_PER_TOKEN),
    hasLogprobs: Array.isArray(lp) && lp.length > 0,
    hasTokenIds: Array.isArray(ids) && ids.length > 0,
  };
}

/** Characters of the text a model call was sent: message contents and earlier tool calls. */
function promptChars(raw: unknown): number {
  if (typeof raw !== 'string') return 0;
  let messages: unknown;
  try {
    messages = JSON.parse(raw);
  } catch {
    return raw.length;
  }
  if (!Array.isArray(messages)) return raw.length;
  let n = 0;
  for (const m of messages as Array<{ content?: unknown; tool_calls?: unknown }>) {
    n += typeof m?.content === 'string' ? m.content.length : m?.content === undefined ? 0 : JSON.stringify(m.content).length;
    if (m?.tool_calls !== undefined) n += JSON.stringify(m.tool_calls).length;
  }
  return n;
}

/**
 * The decisions a rollout's spans record for the decision agents: each node
 * span of the agent, with the hypotheses proposed before it (the candidates)
 * and the index it chose.
 */
function supervisorDecisions(spans: SpanRecord[], agents: string[]): Array<{ candidates: number; chosen: number | null }> {
  const out: Array<{ candidates: number; chosen: number | null }> = [];
  let candidates = 0;
  for (const s of [...spans].sort((a, b) => a.endTime - b.endTime)) {
    if (s.kind !== 'node') continue;
    const agent = s.attributes[Attr.agentName];
    const value = parseOutput(s.attributes[Attr.output]);
    if (typeof agent === 'string' && agents.includes(agent) && s.attributes[Attr.nodeName] === agent) {
      const idx = value?.selected_hypothesis_index;
      out.push({ candidates, chosen: typeof idx === 'number' && Number.isInteger(idx) && idx >= 0 ? idx : null });
    } else if (typeof value?.hypothesis === 'string') {
      candidates++;
    }
  }
  return out;
}

function parseOutput(raw: unknown): Record<string, unknown> | null {
  if (typeof raw !== 'string') return null;
  try {
    const v: unknown = JSON.parse(raw);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * The validation tasks of the dataset the lab runs by default (runner.dataset,
 * or the only one); undefined when lab.json names none or it cannot be read —
 * the checks then count the val tasks seen in the store.
 */
export async function configuredValTasks(workspaceDir: string, config: LabConfig): Promise<number | undefined> {
  const key = config.runner.dataset ?? Object.keys(config.datasets)[0];
  const ds = key === undefined ? undefined : config.datasets[key];
  if (!ds) return undefined;
  try {
    const tasks = await loadDataset(resolve(workspaceDir, ds.path), ds.format);
    return splitTasks(tasks, ds.trainFraction).val.length;
  } catch {
    return undefined;
  }
}

const ICON: Record<PreflightSeverity, string> = { error: '✗', warning: '⚠', info: 'ℹ' };
/** Rollout ids shown per check in the text report. */
const IDS_SHOWN = 3;

/** Icon of a check: ✓ passed, ℹ for information, ⚠ warning, ✗ error. */
export function checkIcon(check: PreflightCheck): string {
  return check.severity === 'info' && check.count === 0 ? '✓' : ICON[check.severity];
}

/** The report as text, for a terminal or an output channel. */
export function preflightReportText(report: PreflightReport): string {
  const errors = report.checks.filter((c) => c.severity === 'error').length;
  const warnings = report.checks.filter((c) => c.severity === 'warning').length;
  const plural = (n: number, w: string): string => `${n} ${w}${n === 1 ? '' : 's'}`;
  const lines = [
    `pre-flight for ${report.phase}: ${plural(errors, 'error')}, ${plural(warnings, 'warning')} — ${
      report.ok ? 'ready to run' : 'the phase would fail: fix the errors first'
    }`,
  ];
  for (const c of report.checks) {
    lines.push(`${checkIcon(c)} ${c.title}`);
    if (c.severity === 'info') continue;
    if (c.rollouts.length) {
      const more = c.rollouts.length > IDS_SHOWN ? ` (+${c.rollouts.length - IDS_SHOWN} more)` : '';
      lines.push(`    rollouts: ${c.rollouts.slice(0, IDS_SHOWN).join(', ')}${more}`);
    }
    lines.push(`    fix: ${c.fix}`);
  }
  lines.push(`counts: ${Object.entries(report.counts).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  return lines.join('\n');
}
