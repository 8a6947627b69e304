import { shortNumber } from '../../core/analysis/numberFormat';

/**
 * Hyper-parameters as a person types them in an input box:
 * `learning_rate=5e-7, max_steps=20, target_modules=q_proj,v_proj`. Names
 * and types are checked against the trainer's reference settings as the
 * user types, so a typo is caught before anything is exported or launched.
 */

export type HyperValue = number | string | boolean | string[];
export type Hyperparameters = Record<string, HyperValue>;

/** Short names accepted on input and used in summaries. */
export const HYPER_ALIASES: Readonly<Record<string, string>> = {
  lr: 'learning_rate',
  group: 'group_size',
  kl: 'kl_coef',
  clip: 'clip_eps',
  steps: 'max_steps',
  batch: 'batch_size',
};

/** The settings a summary names first, per kind (what someone tuning the reference runs looks at). */
const SUMMARY_KEYS: Record<string, string[]> = {
  sft: ['learning_rate', 'max_steps', 'epochs', 'batch_size', 'lora_r'],
  grpo: ['learning_rate', 'group_size', 'kl_coef', 'clip_eps', 'max_steps', 'lora_r'],
};

/** The settings a summary (and the edit box, before the user's own) shows for a kind. */
export function summaryKeys(kind: string): readonly string[] {
  return SUMMARY_KEYS[kind] ?? [];
}

function shortName(key: string): string {
  return Object.entries(HYPER_ALIASES).find(([, long]) => long === key)?.[0] ?? key;
}

/** A value as typed back in the edit box: exact, so an unchanged setting parses to the same value. */
export function valueText(v: HyperValue): string {
  return Array.isArray(v) ? v.join(',') : String(v);
}

/** "lr 1e-6, group 8, kl 0.001, clip 0.2, steps 10, …" */
export function hyperparameterSummary(kind: string, hp: Hyperparameters): string {
  const keys = (SUMMARY_KEYS[kind] ?? Object.keys(hp)).filter((k) => k in hp);
  const more = Object.keys(hp).length > keys.length ? ', …' : '';
  return keys.map((k) => `${shortName(k)} ${typeof hp[k] === 'number' ? shortNumber(hp[k] as number) : valueText(hp[k]!)}`).join(', ') + more;
}

/** `key=value, key=value` the way the input box shows the current settings. */
export function hyperparameterText(hp: Hyperparameters): string {
  return Object.entries(hp)
    .map(([k, v]) => `${k}=${valueText(v)}`)
    .join(', ');
}

export type ParseResult = { ok: true; values: Hyperparameters } | { ok: false; error: string };

/**
 * Parses `key=value, …` against the reference settings of the job's kind:
 * numbers, true/false, words, and lists (a list value runs on over commas
 * until the next `key=`). Only keys whose value differs from `base` (the
 * settings the job gets without overrides) are kept as overrides.
 */
export function parseHyperparameterText(text: string, reference: Hyperparameters, base: Hyperparameters = {}): ParseResult {
  const pairs: Array<[string, string[]]> = [];
  for (const raw of text.split(',')) {
    const part = raw.trim();
    if (!part) continue;
    const eq = part.indexOf('=');
    if (eq < 0) {
      const last = pairs.at(-1);
      if (!last || !Array.isArray(reference[last[0]])) return { ok: false, error: `"${part}" is not key=value` };
      last[1].push(part);
      continue;
    }
    const name = part.slice(0, eq).trim();
    const key = HYPER_ALIASES[name] ?? name;
    if (!(key in reference)) return { ok: false, error: `unknown hyper-parameter "${name}" — known: ${Object.keys(reference).join(', ')}` };
    if (pairs.some(([k]) => k === key)) return { ok: false, error: `"${key}" is given twice` };
    pairs.push([key, [part.slice(eq + 1).trim()]]);
  }
  const values: Hyperparameters = {};
  for (const [key, parts] of pairs) {
    const ref = reference[key]!;
    const v = convert(key, parts, ref);
    if (typeof v === 'object' && v !== null && 'error' in v) return { ok: false, error: v.error };
    // Passing what the job would get anyway adds nothing; only the changes become overrides.
    if (!sameValue(v as HyperValue, base[key] ?? ref)) values[key] = v as HyperValue;
  }
  return { ok: true, values };
}

function sameValue(a: HyperValue, b: HyperValue): boolean {
  if (Array.isArray(a) || Array.isArray(b)) return valueText(a) === valueText(b);
  return a === b;
}

function convert(key: string, parts: string[], ref: HyperValue): HyperValue | { error: string } {
  if (Array.isArray(ref)) {
    const list = parts.flatMap((p) => p.split(/[\s|]+/)).filter(Boolean);
    return list.length ? list : { error: `"${key}" needs at least one name, like ${ref.join(',')}` };
  }
  const text = parts.join(',');
  if (parts.length > 1) return { error: `"${key}" takes one value, got "${text}"` };
  if (typeof ref === 'number') {
    const n = text === '' ? Number.NaN : Number(text);
    return Number.isFinite(n) ? n : { error: `"${key}" must be a number like ${shortNumber(ref)}, got "${text}"` };
  }
  if (typeof ref === 'boolean') {
    if (text === 'true' || text === 'false') return text === 'true';
    return { error: `"${key}" must be true or false, got "${text}"` };
  }
  return text ? text : { error: `"${key}" needs a value, like ${ref}` };
}
