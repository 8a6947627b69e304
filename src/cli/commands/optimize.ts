import type { ParseArgsConfig } from 'node:util';
import path from 'node:path';
import { UsageError } from '../../core/errors';
import type { ApoRound } from '../../core/train/apo/apoTypes';
import { COMMON, err, intOption, out, parse } from '../args';
import { num } from '../../core/analysis/numberFormat';
import { table } from '../../core/analysis/textTable';
import { withRunningLab } from '../labSession';

const OPTIONS = {
  ...COMMON,
  agent: { type: 'string' },
  rounds: { type: 'string' },
  beam: { type: 'string' },
  candidates: { type: 'string' },
  tasks: { type: 'string' },
  apply: { type: 'boolean' },
  'include-simulated': { type: 'boolean' },
} as const satisfies ParseArgsConfig['options'];

/**
 * rollout-lab optimize: APO-style prompt optimisation of one agent on the
 * validation split. Prints each round (critique, candidates with their
 * scores, what the beam kept), the winner against the baseline and a unified
 * diff of the winner against the current prompt; --apply writes it.
 * --candidates N (rewrites per kept prompt) and --tasks N (validation tasks)
 * override lab.json's "optimize" settings like --rounds and --beam. The
 * critic's low-reward examples leave out simulated rollouts unless
 * --include-simulated.
 */
export async function optimizeCommand(argv: string[], usage: string): Promise<number> {
  const v = parse('optimize', argv, OPTIONS);
  if (v.help) return out(usage), 0;
  const agent = typeof v.agent === 'string' ? v.agent.trim() : '';
  if (!agent) throw new UsageError('optimize: give the agent whose prompt to optimise with --agent NAME (e.g. --agent Supervisor)');
  const rounds = intOption(v, 'rounds', 1);
  const beam = intOption(v, 'beam', 1);
  const candidates = intOption(v, 'candidates', 1);
  const validationTasks = intOption(v, 'tasks', 1);
  const json = Boolean(v.json);
  const includeSimulated = v['include-simulated'] === true;
  const { optimizePrompt } = await import('../../core/train/apo/optimizePrompt');
  const { applyPrompt, promptTarget } = await import('../../core/train/apo/applyPrompt');
  const { promptPatch } = await import('../../core/train/apo/promptPatch');

  return withRunningLab(v, async (lab, signal) => {
    const target = promptTarget(lab.loaded, agent);
    const cfg = lab.loaded.config.optimize;
    err(
      `optimize ${agent}: ${rounds ?? cfg.rounds} round(s), beam ${beam ?? cfg.beam}, ${candidates ?? cfg.candidates} rewrite(s) per kept prompt, ` +
        `${validationTasks ?? cfg.validationTasks} val task(s)${lab.simulated ? ' — SIMULATED endpoint' : ''}`,
    );
    if (lab.simulated && !includeSimulated) err('the critic is shown no simulated rollouts as low-reward examples (pass --include-simulated to show it them)');
    const result = await optimizePrompt(lab, {
      agent,
      ...(rounds === undefined ? {} : { rounds }),
      ...(beam === undefined ? {} : { beam }),
      ...(candidates === undefined ? {} : { candidates }),
      ...(validationTasks === undefined ? {} : { validationTasks }),
      includeSimulated,
      signal,
      onScoring: ({ round, candidate, of, runId }) => err(round === 0 ? `scoring the current prompt (run ${runId})` : `round ${round}: scoring rewrite ${candidate + 1} of up to ${of} (run ${runId})`),
      onRound: (r) => err(`round ${r.round} done: best kept ${num(r.beam?.[0]?.score ?? null)}`),
    });
    if (signal.aborted) {
      if (json) out(JSON.stringify({ ...result, applied: null, cancelled: true }));
      err(`cancelled after ${result.rounds.length} round(s); every scoring run is stored (rollout-lab traces)`);
      return 1;
    }
    const improved = result.best.version !== result.baseline.version;
    const applied = v.apply && improved ? await applyPrompt(lab, agent, result.best.text) : null;
    if (json) {
      out(JSON.stringify({ ...result, applied }));
      return 0;
    }
    const label = target.inline ? `${rel(lab.loaded.workspaceDir, target.file)}#agents.${agent}.promptText` : rel(lab.loaded.workspaceDir, target.file);
    if (lab.simulated) out('SIMULATED endpoint: the critique, the rewrites and the scores below come from the built-in simulator, not a model.');
    out(`Prompt optimisation of ${agent} (${label})`);
    out(`baseline ${result.baseline.version}  score ${num(result.baseline.score)}`);
    for (const r of result.rounds) printRound(r);
    out('');
    if (!improved) {
      out(`No rewrite beat the current prompt (score ${num(result.baseline.score)}); nothing to apply.`);
      return 0;
    }
    const gain = result.best.score !== null && result.baseline.score !== null ? result.best.score - result.baseline.score : null;
    out(`Winner: ${result.best.version} from round ${result.best.round}, score ${num(result.best.score)} vs baseline ${num(result.baseline.score)} (${gain === null ? 'n/a' : `${gain >= 0 ? '+' : ''}${gain.toFixed(3)}`})`);
    out('');
    out(promptPatch(label, result.baseline.text, result.best.text, { before: `baseline ${result.baseline.version} score ${num(result.baseline.score)}`, after: `winner ${result.best.version} score ${num(result.best.score)}` }).trimEnd());
    out('');
    if (applied) out(`Applied: wrote ${applied.file}; the next rollout records prompt version ${applied.version}.`);
    else out(`Not applied: run again with --apply, or copy the winner into ${label}.`);
    return 0;
  });
}

function printRound(r: ApoRound): void {
  out('');
  out(`Round ${r.round}`);
  for (const line of r.critique.split('\n').filter(Boolean)) out(`  critique: ${line.length > 300 ? `${line.slice(0, 297)}...` : line}`);
  out(
    table(
      ['  #', 'version', 'score', 'kept', 'run / note'],
      r.candidates.map((c, i) => [`  ${i + 1}`, c.version || '-', num(c.score), c.kept ? 'yes' : '', c.error ?? c.runId ?? '']),
    ),
  );
  if (r.beam) out(`  beam: ${r.beam.map((b) => `${b.version} ${num(b.score)}${b.round === 0 ? ' (baseline)' : ` (round ${b.round})`}`).join(', ')}`);
}

function rel(from: string, file: string): string {
  return path.relative(from, file).split(path.sep).join('/');
}
