import { seededRandom, type SeededRandom } from './seededRandom';
import { messageText, type SimChatRequest } from './simRequest';
import type { SimAnswer } from './simResponder';
import {
  PLACEHOLDER_RE,
  PROMPT_CRITIC_MARKER,
  PROMPT_EDITOR_MARKER,
  promptsInBlocks,
  rewriteCountOf,
} from '../train/apo/apoWire';

export interface PromptOptimizerSimOptions {
  seed: number;
  /** The first rewrite of a prompt with placeholders leaves one out: a careless editor, for tests of the filter. */
  dropPlaceholder?: boolean;
}

/**
 * The simulator's answer to a prompt critic or editor call, or null when the
 * request is neither. The critique names the weakest criteria and the judge's
 * words from the failures shown; the rewrites are the prompt with one added
 * instruction each (placeholders untouched), picked reproducibly per request.
 */
export function promptOptimizerAnswer(req: SimChatRequest, opts: PromptOptimizerSimOptions): SimAnswer | null {
  const system = req.messages
    .filter((m) => m.role === 'system' || m.role === 'developer')
    .map(messageText)
    .join('\n');
  const critic = system.includes(PROMPT_CRITIC_MARKER);
  const editor = system.includes(PROMPT_EDITOR_MARKER);
  if (!critic && !editor) return null;
  const user = req.messages
    .filter((m) => m.role === 'user')
    .map(messageText)
    .join('\n\n');
  const rng = seededRandom(opts.seed, critic ? 'critic' : 'editor', req.seed ?? '', user);
  const prompt = promptsInBlocks(user)[0] ?? '';
  const content = critic ? critique(prompt, user, rng) : JSON.stringify({ prompts: rewrites(prompt, user, rng, opts.dropPlaceholder ?? false) });
  return { agent: null, content, toolCalls: [], digest: rng.digest };
}

/** Instructions a rewrite may add: each addresses something judges of research protocols mark down. */
const INSTRUCTIONS = [
  'Name the control group and the primary endpoint explicitly.',
  'Give concrete numbers: sample sizes, doses, durations and thresholds.',
  'Tie every claim to the context you were given; say plainly when the context does not support one.',
  'List the steps in the order they are carried out, one per item.',
  'State the expected direction and size of the effect before describing the method.',
  'Keep the answer short: leave out anything that does not change the decision.',
  'Mention how bias is avoided (randomisation, blinding, pre-registration).',
  'Say which measurement would show the hypothesis is wrong.',
  'Prefer standard, affordable lab methods and say what they cost.',
  'Check that the output has every required key before you answer.',
  'Use the exact terms of the research question in the answer.',
  'Point out the main risk to feasibility and how to reduce it.',
];

const CRITERION_RE = /^\s*scores?:\s*(.+)$/gim;

function critique(prompt: string, user: string, rng: SeededRandom): string {
  // Sum each criterion's scores over the failures shown, to name the weakest.
  const totals = new Map<string, { sum: number; n: number }>();
  for (const m of user.matchAll(CRITERION_RE)) {
    for (const part of m[1]!.split(',')) {
      const [name, value] = part.trim().split(/\s+/);
      const x = Number(value);
      if (!name || !Number.isFinite(x)) continue;
      const t = totals.get(name) ?? { sum: 0, n: 0 };
      totals.set(name, { sum: t.sum + x, n: t.n + 1 });
    }
  }
  const weakest = [...totals.entries()]
    .map(([name, t]) => ({ name, mean: t.sum / t.n }))
    .sort((a, b) => a.mean - b.mean || a.name.localeCompare(b.name))
    .slice(0, 2);
  const rationale = /^\s*judge rationale:\s*(.+)$/im.exec(user)?.[1]?.trim();
  const lines = [
    weakest.length
      ? `The low-reward rollouts score worst on ${weakest.map((w) => `${w.name} (mean ${w.mean.toFixed(2)})`).join(' and ')}.`
      : 'The low-reward rollouts show no clear pattern in the scores.',
    rationale ? `The judge's words on one of them: "${rationale}"` : 'The judge gave no rationale for them.',
    `The prompt (${prompt.split(/\s+/).filter(Boolean).length} words) does not ask for what those criteria reward: ${rng.pick(INSTRUCTIONS).toLowerCase().replace(/\.$/, '')}.`,
    'It should also say more precisely what a good answer contains, without losing the required output format.',
  ];
  return lines.join(' ');
}

function rewrites(prompt: string, user: string, rng: SeededRandom, dropPlaceholder: boolean): string[] {
  const n = Math.min(10, Math.max(1, rewriteCountOf(user) ?? 1));
  const unused = INSTRUCTIONS.filter((s) => !prompt.includes(s));
  // A seeded shuffle of the instructions the prompt does not have yet.
  for (let i = unused.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [unused[i], unused[j]] = [unused[j]!, unused[i]!];
  }
  const base = prompt.replace(/\s+$/, '');
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const added = unused[i] ?? `${rng.pick(INSTRUCTIONS)} (Check ${i + 1}.)`;
    out.push(`${base}\n${added}`);
  }
  const token = prompt.match(PLACEHOLDER_RE)?.[0];
  if (dropPlaceholder && token && out[0]) out[0] = out[0].split(token).join(token.replace(/[{}\s]/g, ''));
  return out;
}
