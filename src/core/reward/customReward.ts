import { existsSync } from 'node:fs';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { dirname, resolve } from 'node:path';
import { loadUserModuleWithCode } from '../graph/userModule';
import { ConfigError, errorMessage } from '../errors';
import type { SpanRecord } from '../trace/span';

/** What the judge gives a custom reward that asks for it (at most one judge call per rollout). */
export interface CustomJudgeResult {
  /** Per-criterion scores, 0..1 (the penalty on every criterion when the judge failed). */
  scores: Record<string, number>;
  failed: boolean;
  /** The configured weighted reward of those scores. */
  reward: number;
  error?: string;
}

/** The argument of a custom reward function. */
export interface CustomRewardInput {
  /** The whole task: `expected` is the gold answer (fields.expected), else the yes/no/maybe decision, else null. */
  task: { id: string; goal: string; context: string; expected: unknown; expectedDecision: string | null; meta: Record<string, unknown> };
  outcome: { finalOutput: string | null; decision: string | null; turns: number; failures: Array<{ agent: string; error: string }> };
  /** Spans of the rollout so far (graph, model and tool calls), read-only. */
  spans: readonly SpanRecord[];
  /** Runs the LLM judge on the final output; called any number of times, the judge runs once. */
  judge(): Promise<CustomJudgeResult>;
}

export type CustomRewardValue = number | { reward: number; breakdown?: Record<string, number>; info?: string };
export type CustomRewardFunction = (input: CustomRewardInput) => CustomRewardValue | Promise<CustomRewardValue>;

export type CustomRewardResult =
  | { ok: true; reward: number; breakdown: Record<string, number>; info?: string }
  | { ok: false; error: string };

export interface CustomReward {
  /** Absolute path of the user's module. */
  file: string;
  /** The time limit of one call, in ms. */
  timeoutMs: number;
  /**
   * Calls the function: a throw or a bad value comes back as `{ ok: false,
   * error }` naming the file. Run isolated (the lab's way), a call still
   * running after `timeoutMs` or a module that ends its worker throws, and
   * aborting `signal` stops it; in-process, a late call is `{ ok: false }`.
   */
  evaluate(input: CustomRewardInput, opts?: { signal?: AbortSignal }): Promise<CustomRewardResult>;
}

export interface CustomRewardOptions {
  /** Time limit of one call in ms (config `reward.customTimeoutMs`). Default 30 000. */
  timeoutMs?: number;
}

const WHAT = 'custom reward module';

/** The checked time limit of one call: a whole number of ms, 1 or more. */
export function customTimeoutOf(file: string, opts: CustomRewardOptions): number {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_CUSTOM_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1) {
    throw new ConfigError(`"reward.customTimeoutMs" is ${timeoutMs}; give a whole number of milliseconds, 1 or more (default ${DEFAULT_CUSTOM_TIMEOUT_MS})`, file);
  }
  return timeoutMs;
}
export const DEFAULT_CUSTOM_TIMEOUT_MS = 30_000;

/**
 * Loads a custom reward (config `reward.module`): a TS or JS module whose
 * default export, or export `reward`, is `(input) => number | { reward,
 * breakdown?, info? }` (or a Promise of one). Bundled with esbuild once, at
 * load time; a missing file, a compile error (file:line:col) or a module with
 * no function is a ConfigError that says how to fix it.
 */
export async function loadCustomReward(file: string, opts: CustomRewardOptions = {}): Promise<CustomReward> {
  const timeoutMs = customTimeoutOf(file, opts);
  if (!existsSync(file)) {
    throw new ConfigError(`${WHAT} ${file} does not exist; create it or fix "reward.module" in .rollout-lab/lab.json (a path relative to the workspace)`, file);
  }
  const { exports, code } = await loadUserModuleWithCode(file, WHAT);
  const fn = [exports.reward, exports.default, (exports.default as Record<string, unknown> | undefined)?.default].find((v) => typeof v === 'function') as
    | CustomRewardFunction
    | undefined;
  if (!fn) {
    const found = Object.keys(exports).join(', ') || 'nothing';
    throw new ConfigError(
      `${WHAT} ${file} must export a function, as default or "reward": export default function reward(input) { return 1; } (it exports: ${found})`,
      file,
    );
  }
  const locate = sourceLocator(file, code);
  return {
    file,
    timeoutMs,
    async evaluate(input) {
      let value: unknown;
      try {
        const call = withTimeout(Promise.resolve().then(() => fn(input)), timeoutMs);
        value = await call;
        if (value === TIMED_OUT) {
          return {
            ok: false,
            error: `custom reward in ${file} did not return within ${timeoutMs} ms; make it return sooner, or raise "reward.customTimeoutMs" in .rollout-lab/lab.json`,
          };
        }
      } catch (err) {
        const where = await locate(err);
        return { ok: false, error: `custom reward threw: ${errorMessage(err)} (${where})` };
      }
      return checkValue(value, file);
    },
  };
}

const TIMED_OUT: unique symbol = Symbol('timed out');

/**
 * The call's outcome, or TIMED_OUT once `ms` have passed. A call that never
 * settles is abandoned, not cancelled (JavaScript cannot stop it), but the
 * rollout goes on; the timer is cleared so it never keeps the process alive.
 */
async function withTimeout<T>(call: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), ms);
  });
  try {
    return await Promise.race([call, expired]);
  } finally {
    clearTimeout(timer);
  }
}

function checkValue(value: unknown, file: string): CustomRewardResult {
  const bad = (what: string): CustomRewardResult => ({
    ok: false,
    error: `custom reward in ${file} returned ${what}; return a number in 0..1 or { reward, breakdown?, info? }`,
  });
  let reward: unknown = value;
  let breakdown: Record<string, number> = {};
  let info: string | undefined;
  if (typeof value === 'object' && value !== null) {
    const v = value as { reward?: unknown; breakdown?: unknown; info?: unknown };
    reward = v.reward;
    if (v.breakdown !== undefined) {
      if (typeof v.breakdown !== 'object' || v.breakdown === null) return bad(`a breakdown that is not an object (${describe(v.breakdown)})`);
      for (const [k, x] of Object.entries(v.breakdown)) {
        if (typeof x !== 'number' || !Number.isFinite(x)) return bad(`breakdown.${k} = ${describe(x)}, not a finite number`);
        breakdown[k] = x;
      }
    }
    if (v.info !== undefined) info = String(v.info);
  }
  if (typeof reward !== 'number') return bad(describe(reward));
  if (Number.isNaN(reward)) return bad('NaN');
  if (reward < 0 || reward > 1) return bad(`${reward}, outside 0..1`);
  return info === undefined ? { ok: true, reward, breakdown } : { ok: true, reward, breakdown, info };
}

function describe(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.slice(0, 40))}`;
  try {
    return JSON.stringify(v)?.slice(0, 60) ?? String(v);
  } catch {
    return String(v);
  }
}

/**
 * Maps an error thrown inside the bundled module back to the user's source:
 * the bundle is evaluated under the module's own file name, so its stack
 * frames carry bundle lines; the bundle's inline source map (parsed on the
 * first error) turns them into the user's file:line:col. Falls back to the bundled position and function name.
 */
function sourceLocator(file: string, code: string): (err: unknown) => Promise<string> {
  let map: SourceMap | null | undefined;
  return async (err) => {
    const frame = firstFrameIn(err, file);
    if (!frame) return `in ${file}`;
    if (map === undefined) map = inlineSourceMap(code);
    const sm = map;
    const entry = sm?.findEntry(frame.line - 1, frame.column - 1) as { originalSource?: string; originalLine?: number; originalColumn?: number } | undefined;
    const fnName = frame.fn ? ` in ${frame.fn}` : '';
    if (entry?.originalSource !== undefined && entry.originalLine !== undefined) {
      const src = entry.originalSource.startsWith('file://') ? new URL(entry.originalSource).pathname : resolve(dirname(file), entry.originalSource);
      return `at ${src}:${entry.originalLine + 1}:${(entry.originalColumn ?? 0) + 1}${fnName}`;
    }
    return `at ${file}${fnName}, line ${frame.line} of the bundled module`;
  };
}

function firstFrameIn(err: unknown, file: string): { fn: string | null; line: number; column: number } | null {
  const stack = err instanceof Error && typeof err.stack === 'string' ? err.stack : '';
  for (const raw of stack.split('\n')) {
    const m = /^\s*at (?:async )?(?:(.*?) \()?(.+):(\d+):(\d+)\)?$/.exec(raw);
    if (!m || m[2] !== file) continue;
    const fn = m[1] ? m[1].replace(/^Object\./, '') : null;
    return { fn, line: Number(m[3]), column: Number(m[4]) };
  }
  return null;
}

/** The source map esbuild put inline at the end of the evaluated bundle. */
function inlineSourceMap(code: string): SourceMap | null {
  const m = /\/\/# sourceMappingURL=data:application\/json;(?:charset=utf-8;)?base64,([A-Za-z0-9+/=]+)\s*$/.exec(code);
  if (!m) return null;
  try {
    return new SourceMap(JSON.parse(Buffer.from(m[1]!, 'base64').toString('utf8')) as SourceMapPayload);
  } catch {
    return null;
  }
}
