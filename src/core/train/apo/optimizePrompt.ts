import type { BaseMessage } from '@langchain/core/messages';
import { HumanMessage } from '@langchain/core/messages';
import { z } from 'zod';
import { promptHash, readAgentPrompt } from '../../config/loader';
import { OptimizeSchema } from '../../config/trainingSchema';
import { ConfigError, RuntimeFailure, UsageError, errorMessage } from '../../errors';
import { repairRequest } from '../../llm/repairRequest';
import { contentText } from '../../llm/messageConversion';
import { RoutedChatModel } from '../../llm/routedChatModel';
import { parseStructured } from '../../llm/structuredOutput';
import type { Lab } from '../../lab/lab';
import { runRollouts, type PlannedTask } from '../../rollout/runner';
import type { RolloutRecord } from '../../store/types';
import { criticMessages, editorMessages } from './apoMessages';
import type { ApoCandidate, ApoOptions, ApoResult, ApoRound } from './apoTypes';
import { lowRewardExamples } from './lowRewardExamples';
import { promptPlaceholders, screenCandidates } from './placeholders';

const EditorAnswer = z.object({ prompts: z.array(z.string()).min(1) });

/** A prompt in the beam: scored, and remembered with the round that produced it. */
interface BeamEntry {
  text: string;
  version: string;
  score: number | null;
  round: number;
}

/**
 * APO-style prompt optimisation of one agent, without a GPU. Each round, for
 * every prompt in the beam: the critic reads the prompt and its lowest-reward
 * rollouts and says what is wrong; the editor writes rewrites that keep the
 * prompt's placeholders; each new rewrite runs the lab on the same validation
 * tasks with the same seed as the baseline, and its mean final reward is its
 * score. The `beam` best prompts so far (the baseline competes too) go on to
 * the next round. Every scoring run is stored like any other run, with
 * params.command "optimize". Cancelling stops after the rollouts in flight and
 * returns what was scored.
 */
export async function optimizePrompt(lab: Lab, opts: ApoOptions): Promise<ApoResult> {
  const { config } = lab.loaded;
  const { agent, signal } = opts;
  if (!config.agents[agent]) {
    throw new ConfigError(`agent "${agent}" is not under "agents" in ${lab.loaded.file} (agents: ${Object.keys(config.agents).join(', ') || 'none'})`, lab.loaded.file);
  }
  const rounds = setting('rounds', opts.rounds ?? config.optimize.rounds);
  const beamSize = setting('beam', opts.beam ?? config.optimize.beam);
  const perPrompt = setting('candidates', opts.candidates ?? config.optimize.candidates);
  const validationTasks = setting('validationTasks', opts.validationTasks ?? config.optimize.validationTasks);

  const { text: baselineText } = await readAgentPrompt(lab.loaded, agent);
  const ds = await lab.loadDataset();
  const tasks = lab.selectTasks(ds, { split: 'val', limit: validationTasks, seed: config.runner.seed });
  if (tasks.length === 0) throw new UsageError(`the dataset ${ds.file} has no val tasks to score prompts on — lower datasets.*.trainFraction so some tasks are held out`);
  const critic = chatModel(lab, config.optimize.criticModel ?? config.reward.judge.model, 'PromptCritic');
  const editor = chatModel(lab, config.optimize.editorModel ?? config.reward.judge.model, 'PromptEditor', 0.7);
  const id = `apo-${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '')}-${promptHash(`${agent}:${Date.now()}:${Math.random()}`).slice(0, 6)}`;

  const score = async (text: string, round: number, candidate: number, of: number): Promise<{ runId: string; score: number | null; cancelled: boolean }> => {
    const env = await lab.environment(ds.tasks, { label: round === 0 ? `${agent} baseline` : `${agent} round ${round} candidate ${candidate + 1}`, prompts: { [agent]: { text } } });
    const run = await withChildSignal(signal, (child) => runRollouts(env, {
      tasks,
      samples: 1,
      concurrency: config.runner.concurrency,
      seed: config.runner.seed,
      params: { command: 'optimize', agent, round, candidate, optimization: id, promptVersion: promptHash(text), split: 'val', limit: validationTasks, seed: config.runner.seed },
      signal: child,
      onStart: ({ runId }) => opts.onScoring?.({ round, candidate, of, runId }),
    }));
    return { runId: run.runId, score: meanScore(run.rollouts, tasks), cancelled: run.cancelled };
  };

  const baseVersion = promptHash(baselineText);
  const base = await score(baselineText, 0, 0, 1);
  const baseline = { text: baselineText, version: baseVersion, score: base.score };
  const result: ApoResult = { agent, baseline, rounds: [], best: { ...baseline, round: 0 } };
  if (base.cancelled) return result;
  if (base.score === null) {
    throw new RuntimeFailure(`every validation rollout of ${agent}'s current prompt failed (run ${base.runId}); fix that first — see \`rollout-lab traces --run ${base.runId}\``);
  }

  let beam: BeamEntry[] = [{ ...baseline, round: 0 }];
  const seen = new Set<string>([baseVersion]);
  const placeholders = promptPlaceholders(baselineText);
  let stopped = false;
  for (let round = 1; round <= rounds && !stopped; round++) {
    const critiques: string[] = [];
    const candidates: ApoCandidate[] = [];
    const fresh: BeamEntry[] = [];
    for (const [i, entry] of beam.entries()) {
      if (signal?.aborted) break;
      const examples = lowRewardExamples(lab.store, agent, { promptVersion: entry.version, limit: config.optimize.lowRewardRollouts, includeSimulated: opts.includeSimulated === true });
      const critique = (await ask(critic, criticMessages(agent, entry.text, entry.score, examples), signal, 'critic')).trim();
      critiques.push(beam.length > 1 ? `[prompt ${i + 1} of ${beam.length}, score ${entry.score?.toFixed(3) ?? 'n/a'}] ${critique}` : critique);
      const rewrites = await editRewrites(editor, editorMessages(agent, entry.text, critique, perPrompt, placeholders, { round, rounds }), signal);
      const screened = 'error' in rewrites ? [{ text: '', version: '', error: rewrites.error }] : screenCandidates(baselineText, rewrites.prompts, seen);
      for (const c of screened) {
        if (c.error !== undefined) {
          candidates.push({ text: c.text, version: c.version, score: null, runId: null, kept: false, error: c.error });
          continue;
        }
        if (signal?.aborted) break;
        const s = await score(c.text, round, candidates.length, perPrompt * beam.length);
        const cand: ApoCandidate = { text: c.text, version: c.version, score: s.cancelled ? null : s.score, runId: s.runId, kept: false };
        if (s.cancelled) cand.error = 'cancelled before every validation task ran';
        else if (s.score === null) cand.error = 'every validation rollout failed';
        else fresh.push({ text: c.text, version: c.version, score: s.score, round });
        candidates.push(cand);
      }
    }
    stopped = Boolean(signal?.aborted);
    beam = [...beam, ...fresh].sort((a, b) => (b.score ?? -Infinity) - (a.score ?? -Infinity)).slice(0, beamSize);
    const kept = new Set(beam.map((b) => b.version));
    for (const c of candidates) c.kept = c.runId !== null && c.error === undefined && kept.has(c.version);
    const done: ApoRound = { round, critique: critiques.join('\n\n'), candidates, beam: beam.map((b) => ({ version: b.version, score: b.score, round: b.round })) };
    result.rounds.push(done);
    for (const f of fresh) {
      if ((f.score ?? -Infinity) > (result.best.score ?? -Infinity)) result.best = { text: f.text, version: f.version, score: f.score, round: f.round };
    }
    opts.onRound?.(done);
  }
  return result;
}

/**
 * Mean final reward over the planned tasks: a rollout that failed or could
 * not be scored counts 0, so a prompt that breaks the agent cannot win by
 * having fewer results. null when no rollout has a reward at all.
 */
function meanScore(rollouts: readonly RolloutRecord[], tasks: readonly PlannedTask[]): number | null {
  if (!rollouts.some((r) => r.finalReward !== null)) return null;
  const sum = rollouts.reduce((s, r) => s + (r.finalReward ?? 0), 0);
  return sum / Math.max(tasks.length, rollouts.length);
}

/**
 * Runs `work` under a signal of its own that follows `signal`. Parts of a
 * run leave abort listeners on the signal they are given; a child signal per
 * run lets them go with it instead of piling up on the caller's.
 */
async function withChildSignal<T>(signal: AbortSignal | undefined, work: (child: AbortSignal | undefined) => Promise<T>): Promise<T> {
  if (!signal) return work(undefined);
  const child = new AbortController();
  const follow = (): void => child.abort(signal.reason);
  if (signal.aborted) follow();
  else signal.addEventListener('abort', follow, { once: true });
  try {
    return await work(child.signal);
  } finally {
    signal.removeEventListener('abort', follow);
  }
}

function setting(key: 'rounds' | 'beam' | 'candidates' | 'validationTasks', value: number): number {
  const r = OptimizeSchema.shape[key].safeParse(value);
  if (!r.success) throw new UsageError(`optimize ${key}: ${r.error.issues[0]?.message ?? 'invalid'} (got ${value})`);
  return r.data;
}

function chatModel(lab: Lab, logical: string, role: string, minTemperature?: number): RoutedChatModel {
  const resolved = lab.router.resolve(logical);
  // Rewrites asked for together should differ, which a model at temperature 0 makes unlikely.
  const temperature = minTemperature === undefined ? resolved.temperature : Math.max(resolved.temperature ?? 0, minTemperature);
  return new RoutedChatModel(temperature === undefined ? { resolved, agent: role } : { resolved, agent: role, temperature });
}

async function ask(model: RoutedChatModel, messages: BaseMessage[], signal: AbortSignal | undefined, role: string): Promise<string> {
  try {
    return contentText((await model.invoke(messages, { signal })).content);
  } catch (err) {
    if (signal?.aborted) throw err;
    throw new RuntimeFailure(`the prompt ${role} (model "${model.resolved.logical}" at ${model.resolved.baseUrl}) failed: ${errorMessage(err)}`);
  }
}

/** The editor's rewrites; an answer that is not the JSON asked for gets one repair round trip, then becomes an error. */
async function editRewrites(editor: RoutedChatModel, messages: BaseMessage[], signal: AbortSignal | undefined): Promise<{ prompts: string[] } | { error: string }> {
  const first = await ask(editor, messages, signal, 'editor');
  const parsed = await parseStructured(EditorAnswer, first, (problem) =>
    ask(editor, [...messages, new HumanMessage(repairRequest(problem, EditorAnswer))], signal, 'editor'),
    { policy: editor.repairPolicy },
  );
  return parsed.ok ? parsed.value : { error: `the editor's answer is not usable: ${parsed.error.split('\n')[0]}` };
}
