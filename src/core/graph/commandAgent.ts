import { spawn } from 'node:child_process';
import { z } from 'zod';
import { onAbort } from '../onAbort';
import { failureText, outputText, type GraphOutcome } from './outcome';

/** How long a stopped program gets between SIGTERM and SIGKILL. */
const KILL_GRACE_MS = 2_000;
/** What of the program's standard error a failure quotes. */
const STDERR_TAIL_CHARS = 2_000;
/** Standard output kept: the final JSON object is at its end. */
const STDOUT_LIMIT_CHARS = 4 * 1024 * 1024;

export const DEFAULT_COMMAND_TIMEOUT_MS = 300_000;

export interface CommandAgentRun {
  /** The program and its arguments; never run through a shell. */
  argv: readonly string[];
  cwd: string;
  /** The whole environment the program gets. */
  env: NodeJS.ProcessEnv;
  /** Written to its standard input, which is then closed. */
  input: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

export type CommandFailureKind = 'timeout' | 'crashed' | 'not_started' | 'invalid_output' | 'cancelled';

/** A rollout of a command agent that did not give its final output; the message ends with the program's stderr tail. */
export class CommandAgentError extends Error {
  constructor(
    message: string,
    readonly kind: CommandFailureKind,
    readonly stderrTail: string,
    readonly exitCode: number | null,
  ) {
    super(stderrTail ? `${message}\n--- stderr (last lines) ---\n${stderrTail}` : message);
    // The failure classifier reads the name: a cancelled run is an AbortError, output that is not JSON a SyntaxError.
    this.name = kind === 'cancelled' ? 'AbortError' : kind === 'invalid_output' ? 'SyntaxError' : 'CommandAgentError';
  }
}

/** The final output a command agent prints: the names genericOutcome reads from a graph's state. */
const FinalOutputSchema = z.looseObject({
  final_output: z.unknown().optional(),
  finalOutput: z.unknown().optional(),
  output: z.unknown().optional(),
  decision: z.string().nullable().optional(),
  final_decision: z.string().nullable().optional(),
  turns: z.number().int().nonnegative().optional(),
  failures: z.array(z.looseObject({ agent: z.unknown().optional(), error: z.unknown().optional() })).optional(),
});

/**
 * Reads the program's final output from its standard output: the last line
 * that is a JSON object (the program may log before it), else the whole
 * output. What it may hold: `final_output` (or `output`), `decision`, `turns`,
 * `failures`; an object with none of them is itself the final output.
 */
export function parseCommandOutput(stdout: string): Omit<GraphOutcome, 'turns'> & { turns: number | null } {
  const lines = stdout.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
  let value: unknown;
  for (const candidate of [...lines.reverse().filter((l) => l.startsWith('{')), stdout.trim()]) {
    try {
      value = JSON.parse(candidate);
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) break;
    } catch {
      // Not this one.
    }
    value = undefined;
  }
  if (value === undefined) {
    const seen = stdout.trim() ? `it printed: ${JSON.stringify(stdout.trim().slice(-200))}` : 'it printed nothing';
    throw new CommandAgentError(
      `the agent's standard output has no JSON object (${seen}) — print the final output as one JSON object, e.g. {"final_output": "..."}, on the last line`,
      'invalid_output',
      '',
      0,
    );
  }
  const parsed = FinalOutputSchema.safeParse(value);
  if (!parsed.success) {
    const problem = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new CommandAgentError(`the agent's final JSON object is not usable (${problem}) — {"final_output": ..., "decision": string, "turns": number, "failures": [{"agent", "error"}]}`, 'invalid_output', '', 0);
  }
  const o = parsed.data;
  const named = ['final_output', 'finalOutput', 'output'].some((k) => k in o);
  const output = named ? (o.final_output ?? o.finalOutput ?? o.output) : value;
  const decision = o.decision ?? o.final_decision ?? null;
  return {
    finalOutput: outputText(output),
    decision: decision || null,
    turns: o.turns ?? null,
    failures: (o.failures ?? []).map((f) => ({ agent: String(f.agent ?? 'unknown'), error: failureText(f.error) })),
  };
}

/** The last lines of what the program wrote to standard error. */
function tail(text: string): string {
  const t = text.trimEnd();
  return t.length > STDERR_TAIL_CHARS ? `…${t.slice(-STDERR_TAIL_CHARS)}` : t;
}

/**
 * Runs a command agent for one rollout: starts the program (no shell), writes
 * the task to its standard input, and reads its final output from standard
 * output. A program that runs past its time limit, is cancelled, exits with
 * an error or prints no JSON object throws a CommandAgentError that quotes the
 * end of its standard error. `turns` is null when the program does not say.
 */
export function runCommandAgent(run: CommandAgentRun): Promise<ReturnType<typeof parseCommandOutput>> {
  return new Promise((resolve, reject) => {
    if (run.signal?.aborted) return reject(new CommandAgentError('cancelled before the agent started', 'cancelled', '', null));
    const [program, ...args] = run.argv;
    const child = spawn(program!, args, { cwd: run.cwd, env: run.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let stopped: { kind: CommandFailureKind; why: string } | null = null;
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      if (stdout.length > STDOUT_LIMIT_CHARS) stdout = stdout.slice(-STDOUT_LIMIT_CHARS);
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      if (stderr.length > 4 * STDERR_TAIL_CHARS) stderr = stderr.slice(-2 * STDERR_TAIL_CHARS);
    });
    // A program that exits without reading its input closes the pipe under us: that is its business, not an error.
    child.stdin.on('error', () => undefined);
    child.stdin.end(run.input);

    let killTimer: NodeJS.Timeout | undefined;
    const stop = (kind: CommandFailureKind, why: string): void => {
      if (stopped || child.exitCode !== null) return;
      stopped = { kind, why };
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
    };
    const timer = setTimeout(() => stop('timeout', `the agent timed out after ${run.timeoutMs} ms — raise graph.timeoutMs in .rollout-lab/lab.json, or make the agent finish sooner`), run.timeoutMs);
    const unfollow = onAbort(run.signal, () => stop('cancelled', 'the rollout was cancelled'));
    const finish = (): void => {
      clearTimeout(timer);
      clearTimeout(killTimer);
      unfollow();
    };

    child.on('error', (err: NodeJS.ErrnoException) => {
      finish();
      const fix = err.code === 'ENOENT' ? ` — check graph.command in .rollout-lab/lab.json: "${program}" is not a program on PATH or a file relative to ${run.cwd}` : '';
      reject(new CommandAgentError(`the agent could not be started (${err.code ?? err.message})${fix}`, 'not_started', tail(stderr), null));
    });
    child.on('close', (code, sig) => {
      finish();
      if (stopped) return reject(new CommandAgentError(stopped.why, stopped.kind, tail(stderr), code));
      if (code !== 0) {
        const how = code === null ? `was killed by ${sig}` : `exited with code ${code}`;
        return reject(new CommandAgentError(`the agent ${how} before printing its final output`, 'crashed', tail(stderr), code));
      }
      try {
        resolve(parseCommandOutput(stdout));
      } catch (err) {
        const e = err as CommandAgentError;
        reject(new CommandAgentError(e.message, e.kind, tail(stderr), code));
      }
    });
  });
}
