import { HumanMessage, SystemMessage, type BaseMessage } from '@langchain/core/messages';
import { PROMPT_CRITIC_MARKER, PROMPT_EDITOR_MARKER, promptBlock, rewriteCountLine } from './apoWire';
import type { ApoExample } from './lowRewardExamples';

const CRITIC_INSTRUCTIONS = `You review the system prompt of one agent in a multi-agent LLM system.
You are shown the prompt and rollouts in which the agent, running it, earned a low reward (from a judge, the lab's own reward function, or both).
Say what in the prompt leads to those results and what it should ask for instead: concrete, at most 150 words, plain prose.
Do not rewrite the prompt yourself.`;

const EDITOR_INSTRUCTIONS = `You rewrite the system prompt of one agent in a multi-agent LLM system, following a critique of it.
Each rewrite is a complete prompt that replaces the current one.
Keep the output format the current prompt asks for (keys, JSON rules) and keep every placeholder in braces ({name} or {{name}}) exactly as written.
Reply with JSON only: {"prompts": ["first rewrite", "second rewrite"]}`;

const num = (x: number): string => x.toFixed(2);

/** How an example was scored: the judge's criteria and rationale, the custom reward's breakdown and note, or both. */
function scoreLines(e: ApoExample): string[] {
  const lines: string[] = [];
  if (e.criteria) lines.push(`scores: ${Object.entries(e.criteria).map(([k, v]) => `${k} ${num(v)}`).join(', ')}`);
  if (e.custom) {
    const { reward, breakdown, info } = e.custom;
    const parts = [`custom reward ${reward === null ? 'failed' : num(reward)}`];
    if (breakdown) parts.push(`breakdown: ${Object.entries(breakdown).map(([k, v]) => `${k} ${num(v)}`).join(', ')}`);
    if (info) parts.push(`note: ${info}`);
    lines.push(parts.join('; '));
  }
  if (!e.criteria && !e.custom) lines.push('scores: none recorded');
  // Without the judge's scores, a "none given" rationale would only suggest a judge that never ran.
  if (e.criteria || !e.custom) lines.push(`Judge rationale: ${e.rationale ?? 'none given'}`);
  return lines;
}

/** Asks the critic what in `prompt` explains the low-reward `examples`. */
export function criticMessages(agent: string, prompt: string, score: number | null, examples: readonly ApoExample[]): BaseMessage[] {
  const blocks = examples.map((e, i) =>
    [
      `### Rollout ${i + 1}: task ${e.taskId}, reward ${num(e.reward)}`,
      ...scoreLines(e),
      `What the agent saw:\n${e.saw || '(not recorded)'}`,
      `What it answered:\n${e.answered || '(not recorded)'}`,
    ].join('\n'),
  );
  return [
    new SystemMessage(`${PROMPT_CRITIC_MARKER}\n${CRITIC_INSTRUCTIONS}`),
    new HumanMessage(
      [
        `Agent: ${agent}`,
        `Its system prompt:\n${promptBlock(prompt)}`,
        `Mean reward of this prompt on the validation tasks: ${score === null ? 'unknown' : num(score)}.`,
        examples.length ? `Low-reward rollouts (${examples.length}):\n\n${blocks.join('\n\n')}` : 'No low-reward rollout is stored for this prompt; critique it on its own.',
      ].join('\n\n'),
    ),
  ];
}

/** Asks the editor for `n` rewrites of `prompt` that answer `critique`. */
export function editorMessages(
  agent: string,
  prompt: string,
  critique: string,
  n: number,
  placeholders: readonly string[],
  round: { round: number; rounds: number },
): BaseMessage[] {
  return [
    new SystemMessage(`${PROMPT_EDITOR_MARKER}\n${EDITOR_INSTRUCTIONS}`),
    new HumanMessage(
      [
        `Agent: ${agent}`,
        `Current prompt:\n${promptBlock(prompt)}`,
        `Critique:\n${critique.trim()}`,
        `Placeholders to keep: ${placeholders.length ? placeholders.join(', ') : 'none'}.`,
        `Round ${round.round} of ${round.rounds}. ${rewriteCountLine(n)} Make each one different from the current prompt and from the others.`,
      ].join('\n\n'),
    ),
  ];
}
