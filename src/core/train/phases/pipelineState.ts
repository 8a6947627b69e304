import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { LoadedConfig } from '../../config/loader';
import { ConfigError } from '../../errors';
import { writeFileAtomic } from '../../store/atomicFile';
import { HOST, isProcessAlive } from '../../store/processLiveness';

/**
 * The state of each pipeline phase, kept in `<outputDir>/pipeline.json` so
 * the CLI and the editor see the same thing. Each update re-reads the file and
 * replaces one phase, so two processes running different phases keep each
 * other's records.
 */

/** cancelled: stopped by the user (Cancel on its progress, or its job cancelled) — not a failure. */
export const PHASE_STATES = ['pending', 'running', 'done', 'failed', 'cancelled'] as const;
export type PhaseState = (typeof PHASE_STATES)[number];

const CheckSchema = z.object({
  id: z.string(),
  severity: z.enum(['error', 'warning', 'info']),
  title: z.string(),
  count: z.number(),
  rollouts: z.array(z.string()),
  fix: z.string(),
});

const PhaseRecordSchema = z.object({
  name: z.string(),
  kind: z.enum(['gather', 'sft', 'grpo', 'bandit', 'apo']),
  state: z.enum(PHASE_STATES),
  startedAt: z.number().nullable(),
  endedAt: z.number().nullable(),
  error: z.string().nullable(),
  counts: z.record(z.string(), z.number()),
  /** Data files the phase wrote, relative to .rollout-lab/. */
  files: z.array(z.string()),
  /** The GPU job that trains on the phase's data (set by a launcher). */
  job: z.string().nullable(),
  /** The rollout run a gather phase made. */
  runId: z.string().nullable(),
  produced: z.object({ kind: z.enum(['model', 'policy', 'prompt', 'data']), id: z.string() }).nullable(),
  /** What to do next, in words (an exported data set waits for training). */
  note: z.string().nullable(),
  /** Pre-flight checks that failed or warned. */
  checks: z.array(CheckSchema),
  pid: z.number().nullable(),
  host: z.string().nullable(),
});

const PipelineFileSchema = z.object({
  version: z.literal(1),
  phases: z.record(z.string(), PhaseRecordSchema),
});

export type PhaseRecord = z.output<typeof PhaseRecordSchema>;
export type PipelineFile = z.output<typeof PipelineFileSchema>;
export type PhaseKind = PhaseRecord['kind'];

export const PIPELINE_FILE_NAME = 'pipeline.json';

/** What a phase's run gives its record; an error says it failed. */
export type PhaseResult = Partial<PhaseRecord> & { error?: string | null };

export function pipelineDir(loaded: Pick<LoadedConfig, 'labDir' | 'config'>): string {
  return path.resolve(loaded.labDir, loaded.config.training.outputDir);
}

export function pipelineStateFile(loaded: Pick<LoadedConfig, 'labDir' | 'config'>): string {
  return path.join(pipelineDir(loaded), PIPELINE_FILE_NAME);
}

export function emptyPhaseRecord(name: string, kind: PhaseKind): PhaseRecord {
  return {
    name,
    kind,
    state: 'pending',
    startedAt: null,
    endedAt: null,
    error: null,
    counts: {},
    files: [],
    job: null,
    runId: null,
    produced: null,
    note: null,
    checks: [],
    pid: null,
    host: null,
  };
}

/**
 * Reads pipeline.json (empty when it does not exist). A phase recorded as
 * running whose process is gone is reported as failed ("interrupted"); the
 * file is not rewritten for that, so reading never races a writer.
 */
export function readPipelineState(file: string): PipelineFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, phases: {} };
    throw new ConfigError(`cannot read the pipeline state ${file}: ${(err as Error).message} — check its permissions`, file);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`the pipeline state ${file} is not valid JSON (${(err as Error).message}) — fix it by hand or move it aside to start the phases over`, file);
  }
  const parsed = PipelineFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`the pipeline state ${file} is invalid at ${issue.path.join('.') || '(top level)'}: ${issue.message} — fix it by hand or move it aside`, file);
  }
  for (const rec of Object.values(parsed.data.phases)) markIfInterrupted(file, rec);
  return parsed.data;
}

/** Replaces one phase's record (re-reading the file first, so other phases' updates are kept). */
export function writePhaseRecord(file: string, rec: PhaseRecord): void {
  const state = readPipelineState(file);
  state.phases[rec.name] = rec;
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileAtomic(file, Buffer.from(JSON.stringify(PipelineFileSchema.parse(state), null, 2) + '\n', 'utf8'));
}

/** The record of a running phase for this process. */
export function runningRecord(prev: PhaseRecord, now = Date.now()): PhaseRecord {
  return { ...emptyPhaseRecord(prev.name, prev.kind), state: 'running', startedAt: now, pid: process.pid, host: HOST };
}

export function finishedRecord(rec: PhaseRecord, state: 'done' | 'failed' | 'cancelled', extra: Partial<PhaseRecord> = {}): PhaseRecord {
  return { ...rec, ...extra, state, endedAt: Date.now(), pid: null, host: null };
}

/** Phases this process is running (its own pid says nothing about whether a phase still runs in it). */
const runningHere = new Set<string>();

export function setRunningHere(file: string, phase: string, running: boolean): void {
  const key = `${path.resolve(file)}\0${phase}`;
  if (running) runningHere.add(key);
  else runningHere.delete(key);
}

function markIfInterrupted(file: string, rec: PhaseRecord): void {
  if (rec.state !== 'running' || rec.pid === null) return;
  const host = rec.host ?? HOST;
  const alive = rec.pid === process.pid && host === HOST ? runningHere.has(`${path.resolve(file)}\0${rec.name}`) : isProcessAlive(rec.pid, host);
  if (alive) return;
  rec.state = 'failed';
  rec.error = 'interrupted: the process running it ended before it finished — run the phase again';
  rec.pid = null;
  rec.host = null;
}
