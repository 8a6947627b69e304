import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { Callbacks } from '@langchain/core/callbacks/manager';
import type { LabConfig } from '../config/schema';
import type { Task } from '../data/tasks';
import type { GraphOutcome } from '../graph/outcome';
import { newTraceId } from '../trace/ids';
import { Attr, type SpanRecord } from '../trace/span';
import { RolloutTracer, type OpenSpan } from '../trace/tracer';
import { LangChainTracer } from '../trace/langchainTracer';
import type { AgentVersions } from '../trace/llmSpanAttributes';
import type { TraceStore } from '../store/traceStore';
import type { RolloutRecord, RunRecord, Split } from '../store/types';
import type { CustomReward } from '../reward/customReward';
import { classifyThrown, noOutputFailure, truncationCounts } from '../reward/failureClassification';
import { errorMessage } from '../errors';
import { summariseAgents } from '../store/agentSummary';
import { onAbort } from '../onAbort';
import { clip } from '../clip';
import { forEachBounded } from './pool';
import { TRUNCATED_AT_MAX_TOKENS } from '../llm/maxTokensCut';
import { guardStore, RunStoreFailure } from './storeGuard';
import { RunWarnings, maxTokensKey, type RunWarning } from './runWarnings';
import { scoreRollout } from './rolloutScoring';
import { rewardDefinitionKey } from '../reward/rewardDefinition';
import { resumePlan, type ResumePlan, type ResumeSummary } from './resumePlan';
import { shardSlice, type Shard } from './shards';

export type PlannedTask = Task & { split: Split };

export interface RunGraphOptions {
  callbacks: Callbacks;
  signal?: AbortSignal;
  seed: number;
  /** The rollout being run: its tracer and root span (spans recorded outside LangChain hang under it), run and sample. */
  rollout: { tracer: RolloutTracer; root: OpenSpan; runId: string; sample: number };
}

/** What a rollout needs from the lab: how to run the graph on a task, and who judges. */
export interface RolloutEnvironment {
  config: LabConfig;
  store: TraceStore;
  /** `seed` is derived from the run seed, the task and the sample, so samples differ and replay exactly. */
  runGraph(task: PlannedTask, opts: RunGraphOptions): Promise<GraphOutcome>;
  judgeModel: BaseChatModel;
  versions: AgentVersions;
  simulated: boolean;
  /** The user's reward function (config reward.module), loaded once per run. */
  customReward?: CustomReward | null;
  /** Stops what the environment started for its batch (the workers running the user's modules). */
  close?(): Promise<void>;
}

export interface RunProgress {
  runId: string;
  done: number;
  total: number;
  succeeded: number;
  failed: number;
  /** Mean final reward of the rollouts finished so far in this invocation. */
  meanReward: number | null;
  /** Estimated milliseconds left, from the mean pace so far. */
  etaMs: number | null;
  last?: RolloutRecord;
}

export interface RunRequest {
  tasks: readonly PlannedTask[];
  samples: number;
  concurrency: number;
  /** Options the run was started with, stored for resume. */
  params: Record<string, unknown>;
  /** Run seed; each rollout's model calls get a seed derived from it, the task and the sample. */
  seed?: number;
  /** Continue this run: what it finished stands; what failed on transport, was interrupted or never ran is redone (resumePlan). */
  resumeRunId?: string;
  /** With resumeRunId: redo the rollouts that failed for the agent's own reasons too. */
  retryFailed?: boolean;
  /**
   * Run only this slice of the plan (shards.ts): a worker of a run split into
   * `shard.count` slices. The run's planned count stays the whole plan's; see
   * shardedRunStatus for who writes the run's status.
   */
  shard?: Shard;
  /** With shard: a coordinator follows the run and writes its status, so the slice's end does not catch up with the others' (runDone null). */
  coordinated?: boolean;
  signal?: AbortSignal;
  onProgress?: (p: RunProgress) => void;
  /** Called once the run id is known, before the first rollout starts. */
  onStart?: (info: { runId: string; total: number; skipped: number; resume?: ResumeSummary }) => void;
  /** Called once per kind, when a finished rollout first shows it (a prompt the server cut, a custom reward that failed...). */
  onWarning?: (w: RunWarning) => void;
  /** Called with each finished rollout and its spans (in memory: nothing is read back from the store). */
  onRolloutEnded?: (rollout: RolloutRecord, spans: readonly SpanRecord[]) => void;
  /** Off only to measure tracing overhead: rollouts are still stored, spans are not. */
  tracing?: boolean;
}

export interface RunResult {
  runId: string;
  /** Every finished rollout of the run, including those of an earlier invocation it resumed. */
  rollouts: RolloutRecord[];
  ranNow: number;
  skipped: number;
  cancelled: boolean;
  /** Per kind, the totals over the rollouts this invocation ran. */
  warnings: RunWarning[];
  /** The simulated endpoint answered some of its rollouts (not merely: it was started for a model of lab.json). */
  simulated: boolean;
  /** A worker's slice: `rollouts` are its slice's; `runDone` says whether the whole run stands now (null: not checked, its coordinator does). */
  shard?: Shard & { planned: number; runDone: boolean | null };
}

/** A 31-bit seed from the run seed, the task and the sample (FNV-1a). */
export function rolloutSeed(runSeed: number, taskId: string, sample: number): number {
  let h = 0x811c9dc5;
  for (const ch of `${runSeed}:${taskId}:${sample}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193);
  return (h >>> 0) & 0x7fffffff;
}

export function rolloutKey(taskId: string, sample: number): string {
  return `${taskId}#${sample}`;
}

/**
 * Runs tasks × samples rollouts with bounded concurrency. Each rollout is one
 * trace: graph steps, model and tool calls, then the judge and the rewards.
 * A rollout's failure (endpoint down, graph error) is recorded on it and never
 * stops the batch; cancellation stops new rollouts and marks running ones.
 */
export async function runRollouts(labEnv: RolloutEnvironment, req: RunRequest): Promise<RunResult> {
  // A store that cannot write (a full disk) stops the batch with its own error, resumable once fixed.
  const stop = new AbortController();
  const guard = guardStore(labEnv.store, (err) => stop.abort(err));
  const env: RolloutEnvironment = { ...labEnv, store: guard.store };
  const { store } = env;
  const whole: Array<{ task: PlannedTask; sample: number }> = [];
  for (const task of req.tasks) for (let s = 0; s < req.samples; s++) whole.push({ task, sample: s });
  const { shard } = req;
  const plan = shard ? shardSlice(whole, (p) => rolloutKey(p.task.id, p.sample), shard) : whole;

  let runId: string;
  let skip = new Set<string>();
  let resumed: ResumePlan | null = null;
  if (req.resumeRunId) {
    const run = store.getRun(req.resumeRunId);
    if (!run) throw new Error(`run ${req.resumeRunId} is not in this workspace's store — list runs with \`rollout-lab traces\``);
    runId = run.id;
    resumed = resumePlan(plan.map((p) => rolloutKey(p.task.id, p.sample)), store.currentAttempts(runId), { retryFailed: req.retryFailed });
    skip = resumed.skip;
    // A worker of a sharded run leaves the run's status to its coordinator (shardedRunStatus).
    if (!shard) store.updateRun(runId, { status: 'running', endTime: null });
  } else {
    runId = newRunId();
    const run: RunRecord = { id: runId, startTime: Date.now(), endTime: null, status: 'running', params: req.params, simulated: env.simulated, planned: whole.length };
    store.startRun(run);
  }
  const todo = plan.filter((p) => !skip.has(rolloutKey(p.task.id, p.sample)));
  req.onStart?.({ runId, total: todo.length, skipped: plan.length - todo.length, ...(resumed ? { resume: resumed.summary } : {}) });

  let done = 0;
  let succeeded = 0;
  let failed = 0;
  let rewardSum = 0;
  let rewardN = 0;
  const started = Date.now();
  const warnings = new RunWarnings();
  const noticeWarnings = (spans: readonly SpanRecord[]): void => {
    for (const w of warnings.add(spans[0]?.traceId ?? '', spans)) req.onWarning?.(w);
  };
  const followCancel = onAbort(req.signal, () => stop.abort(req.signal!.reason));
  await forEachBounded(
    todo,
    req.concurrency,
    // Each rollout gets its own signal that follows the run's, so what a rollout leaves on its signal goes with it.
    async ({ task, sample }, _index, signal) => {
      let ended: readonly SpanRecord[] = [];
      const supersedes = resumed?.supersedes.get(rolloutKey(task.id, sample));
      const rec = await runOneRollout(env, runId, task, sample, signal, req.tracing !== false, rolloutSeed(req.seed ?? 0, task.id, sample), (spans) => {
        ended = spans;
        noticeWarnings(spans);
      }, supersedes);
      req.onRolloutEnded?.(rec, ended);
      done++;
      if (rec.status === 'succeeded') succeeded++;
      else if (rec.status === 'failed') failed++;
      if (rec.finalReward !== null) {
        rewardSum += rec.finalReward;
        rewardN++;
      }
      const pace = (Date.now() - started) / done;
      req.onProgress?.({
        runId,
        done,
        total: todo.length,
        succeeded,
        failed,
        meanReward: rewardN ? rewardSum / rewardN : null,
        etaMs: Math.round(pace * (todo.length - done)),
        last: rec,
      });
    },
    stop.signal,
  ).finally(followCancel);
  const storeFailure = guard.failure();
  if (storeFailure) throw new RunStoreFailure(runId, storeFailure);
  const cancelled = Boolean(req.signal?.aborted);
  // Other workers' rollouts of the run (and a copy of this slice run at once elsewhere) count in what follows;
  // a coordinated worker's own slice is all it reports, and reading every other segment costs each worker as
  // much as the coordinator's end does.
  if (shard && !req.coordinated) await store.refresh();
  const inPlan = new Set(plan.map((p) => rolloutKey(p.task.id, p.sample)));
  // Each task's current attempt: the ones a resume redid are kept in the store, superseded, and count no more.
  const rollouts = store
    .listRollouts({ runId, superseded: false, limit: Number.MAX_SAFE_INTEGER })
    .rollouts.filter((r: RolloutRecord) => (r.status === 'succeeded' || r.status === 'failed') && inPlan.has(rolloutKey(r.taskId, r.sample)));
  const simulated = simulatedOf(rollouts, env.simulated);
  const result: RunResult = { runId, rollouts, ranNow: done, skipped: plan.length - todo.length, cancelled, warnings: warnings.list(), simulated };
  if (!shard) {
    store.updateRun(runId, { status: cancelled ? 'cancelled' : 'done', endTime: Date.now(), simulated });
    return result;
  }
  if (req.coordinated) return { ...result, shard: { ...shard, planned: plan.length, runDone: null } };
  const runDone = everyKeyStands(whole.map((p) => rolloutKey(p.task.id, p.sample)), store, runId);
  const status = shardedRunStatus({ runDone, cancelled, createdHere: !req.resumeRunId });
  const wholeRunSimulated = (): boolean => simulatedOf(store.listRollouts({ runId, superseded: false, limit: Number.MAX_SAFE_INTEGER }).rollouts, env.simulated);
  if (status) store.updateRun(runId, { status, endTime: status === 'done' || status === 'cancelled' ? Date.now() : null, ...(status === 'done' ? { simulated: wholeRunSimulated() } : {}) });
  return { ...result, shard: { ...shard, planned: plan.length, runDone } };
}

/** `run-20261202T143901-1a2b3c`: the time it started, and a random tail. */
export function newRunId(): string {
  return `run-${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '')}-${newTraceId().slice(0, 6)}`;
}

/** Whether every planned key of a run has a current attempt that stands (the resume rules) and none is still running. */
export function everyKeyStands(keys: readonly string[], store: Pick<TraceStore, 'currentAttempts'>, runId: string): boolean {
  const attempts = store.currentAttempts(runId);
  if (attempts.some((a) => a.status === 'running')) return false;
  return resumePlan(keys, attempts).skip.size === new Set(keys).size;
}

/** A run is simulated when its rollouts are, not merely because the simulator was started for a model it never called; with none, `fallback`. */
export function simulatedOf(rollouts: readonly Pick<RolloutRecord, 'simulated'>[], fallback: boolean): boolean {
  return rollouts.length ? rollouts.some((r) => r.simulated) : fallback;
}

/**
 * The status a worker of a sharded run writes when its slice ends, or null to
 * leave the run's record alone. A run split over workers is kept honest this
 * way: it is done only when every planned key of the WHOLE run stands — each
 * worker checks that against the store when it ends (after catching up with
 * the other workers), so whichever finishes last marks it done, and a slice
 * rerun by hand after its coordinator gave up finishes the run too. Short of
 * that, a worker never writes the run's status: the coordinator that created
 * the run owns it ('running' while it follows its workers; 'failed' or
 * 'cancelled' when one failed or it was stopped; the store marks it
 * interrupted if the coordinator itself dies), so a worker that ends, fails or
 * is cancelled says nothing for the slices still running. A run created by a
 * worker itself (`run --shard K/N` with no --resume) has that worker for its
 * coordinator: it marks the run cancelled when it was stopped, and otherwise
 * leaves 'running', which the store turns into interrupted once it exits —
 * nothing follows that run any more — until a later worker marks it done.
 */
export function shardedRunStatus(s: { runDone: boolean; cancelled: boolean; createdHere: boolean }): RunRecord['status'] | null {
  if (s.runDone) return 'done';
  if (s.createdHere && s.cancelled) return 'cancelled';
  return null;
}

/** Runs one rollout end to end; never throws (its failure is recorded on the rollout). */
export async function runOneRollout(
  env: RolloutEnvironment,
  runId: string,
  task: PlannedTask,
  sample: number,
  signal: AbortSignal | undefined,
  tracing = true,
  seed = rolloutSeed(0, task.id, sample),
  /** Gets the rollout's spans (in memory, also without tracing) once it has ended. */
  onEnded?: (spans: readonly SpanRecord[]) => void,
  /** The earlier attempts of this task and sample that this one redoes (a resumed run). */
  supersedes?: readonly string[],
): Promise<RolloutRecord> {
  const { store } = env;
  const id = newTraceId();
  const tracer = new RolloutTracer(id, tracing ? store : null);
  const record: RolloutRecord = {
    id,
    runId,
    taskId: task.id,
    split: task.split,
    sample,
    status: 'running',
    failure: null,
    finalReward: null,
    criteria: null,
    rewardBreakdown: null,
    judgeFailed: false,
    decision: null,
    expectedDecision: task.expectedDecision,
    turns: null,
    error: null,
    simulated: env.simulated,
    startTime: Date.now(),
    endTime: null,
    spanCount: 0,
    agents: [],
    truncatedAnswers: null,
    truncatedPrompts: null,
    rewardDefinition: rewardDefinitionKey(env.config.reward),
    ...(supersedes?.length ? { supersedes: [...supersedes] } : {}),
  };
  store.startRollout(record);
  const root = tracer.start('rollout', 'rollout', null, {
    [Attr.runId]: runId,
    [Attr.taskId]: task.id,
    [Attr.split]: task.split,
    [Attr.sample]: sample,
    [Attr.expectedDecision]: task.expectedDecision,
    [Attr.taskGoal]: task.goal,
    [Attr.simulated]: env.simulated,
  }, record.startTime);
  const handler = tracing ? new LangChainTracer(tracer, root, env.versions, Object.keys(env.config.agents)) : null;
  try {
    const outcome = await env.runGraph(task, { callbacks: handler ? [handler] : [], signal, seed, rollout: { tracer, root, runId, sample } });
    record.decision = outcome.decision;
    record.turns = outcome.turns;
    // A user graph may ignore ctx.maxTurns: recorded so the run warns and the report counts it under max turns.
    root.attributes[Attr.turnLimit] = env.config.runner.maxTurns;
    if (outcome.turns > env.config.runner.maxTurns) root.attributes[Attr.turnLimitExceeded] = true;
    // Kept on the root so views (the comparison) can show what was scored without digging into the judge's messages.
    root.attributes[Attr.finalOutput] = outcome.finalOutput;
    const score = await scoreRollout(env, { tracer, root, tracing, signal }, task, outcome);
    record.finalReward = score.finalReward;
    record.criteria = score.criteria;
    record.judgeFailed = score.judgeFailed;
    record.rewardBreakdown = score.rewardBreakdown;
    if (outcome.failures.length) root.attributes['rollout_lab.failures'] = JSON.stringify(outcome.failures);
    if (outcome.finalOutput) {
      record.status = 'succeeded';
    } else {
      // The graph ran to its end with nothing to show for it: not a success, though it keeps the reward it was scored with.
      const why = noOutputFailure(tracer.spans(), outcome.failures.map((f) => f.agent));
      record.status = 'failed';
      record.failure = why.kind;
      record.error = noOutputMessage(why, outcome, tracer.spans());
    }
  } catch (err) {
    handler?.closeOpen(signal?.aborted ? 'cancelled' : errorMessage(err));
    record.status = signal?.aborted ? 'cancelled' : 'failed';
    record.error = signal?.aborted ? 'cancelled' : errorMessage(err);
    record.failure = signal?.aborted ? 'cancelled' : classifyThrown(err, record.error);
    // A rollout that threw has no reward, whatever was scored before the throw: averages count it apart.
    record.finalReward = null;
  }
  record.endTime = Date.now();
  // Simulated when the simulated endpoint answered one of its calls: a lab whose unused judge has no endpoint still runs real rollouts.
  if (tracing) record.simulated = env.simulated && tracer.spans().some((s) => s.kind === 'llm' && s.attributes[Attr.simulated] === true);
  root.attributes[Attr.simulated] = record.simulated;
  root.attributes[Attr.decision] = record.decision;
  root.attributes[Attr.rewardValue] = record.finalReward;
  root.attributes[Attr.turn] = record.turns;
  root.attributes[Attr.failure] = record.failure ?? null;
  tracer.end(root, record.status === 'succeeded' ? 'ok' : 'error', record.error ?? undefined, record.endTime);
  record.agents = summariseAgents(tracer.spans(), env.versions);
  record.spanCount = tracing ? tracer.spans().length : 0;
  if (tracing) {
    const cut = truncationCounts(tracer.spans());
    record.truncatedAnswers = cut.answers;
    record.truncatedPrompts = cut.prompts;
  }
  store.finishRollout(record);
  onEnded?.(tracer.spans());
  return record;
}

/** An agent's own words quoted on one line, so they never read as the lab's. */
function quoted(s: string): string {
  return `“${clip(s)}”`;
}

/** The error of a rollout whose graph gave no final output: what happened, and what to change when an answer was cut off. */
function noOutputMessage(why: ReturnType<typeof noOutputFailure>, outcome: GraphOutcome, spans: readonly SpanRecord[]): string {
  if (why.kind === 'truncated') {
    // The research lab's own record names the limit and the setting; any other graph's (a command agent's) is its own
    // words, quoted after what the lab saw rather than read as the answer.
    const recorded = outcome.failures.find((f) => f.agent === why.agent);
    if (recorded?.error.startsWith(TRUNCATED_AT_MAX_TOKENS)) return `the graph gave no final output: ${recorded.agent}'s answer was ${clip(recorded.error)}`;
    const call = spans.filter((s) => s.kind === 'llm' && s.attributes[Attr.agentName] === why.agent).at(-1);
    const fix = `raise ${call ? maxTokensKey(call) : 'maxTokens of its model'} in .rollout-lab/lab.json`;
    const said = recorded?.error ? `; ${recorded.agent} reported: ${quoted(recorded.error)}` : '';
    return `the graph gave no final output: ${why.agent ?? 'an agent'}'s answer was truncated at max_tokens — ${fix}, or ask for a shorter answer${said}`;
  }
  const first = outcome.failures[0];
  return `the graph finished without a final output${first ? ` (${first.agent}: ${clip(first.error)})` : ''}`;
}
