import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError, errorMessage } from '../core/errors';
import { terminalSafe } from '../core/analysis/terminalText';

/** Option parsing and output shared by the CLI's commands. */

export const COMMON = {
  workspace: { type: 'string' },
  'base-url': { type: 'string' },
  model: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];

/** What a command that runs rollouts on a dataset takes. */
export const BATCH_OPTIONS = {
  dataset: { type: 'string' },
  split: { type: 'string' },
  limit: { type: 'string' },
  samples: { type: 'string' },
  concurrency: { type: 'string' },
  seed: { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

export type Values = Record<string, string | boolean | undefined>;

export function parse(command: string, argv: string[], options: ParseArgsConfig['options']): Values {
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values as Values;
  } catch (err) {
    throw new UsageError(`${command}: ${errorMessage(err).replace(/\.$/, '')} — run \`rollout-lab ${command} --help\` for the options`);
  }
}

export function intOption(v: Values, name: string, min: number): number | undefined {
  const raw = v[name];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`--${name} must be an integer ≥ ${min}, got "${String(raw)}"`);
  return n;
}

export function splitOption(v: Values, fallback: 'train' | 'val' | 'all'): 'train' | 'val' | 'all' {
  return givenSplit(v, '') ?? fallback;
}

/** --split when it is given; undefined leaves the choice to the command's own default. */
export function givenSplit(v: Values, command: string): 'train' | 'val' | 'all' | undefined {
  const s = v.split as string | undefined;
  if (s !== undefined && s !== 'train' && s !== 'val' && s !== 'all') throw new UsageError(`${command ? `${command}: ` : ''}--split must be train, val or all, got "${s}"`);
  return s;
}

/** One block of output: whatever it quotes from traces, datasets or models, no control character reaches the terminal raw. */
export const out = (s: string): void => void process.stdout.write(terminalSafe(s, { multiline: true }) + '\n');
export const err = (s: string): void => void process.stderr.write(terminalSafe(s, { multiline: true }) + '\n');
