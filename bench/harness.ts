/** One benchmark figure, printed beside a baseline measured in the same run. */
export interface BenchResult {
  name: string;
  unit: string;
  /** null when the figure was skipped. */
  value: number | null;
  /** The same measure taken on the baseline in this run (null when the figure has none, e.g. rss). */
  baseline: number | null;
  /** value / baseline (null without a baseline). */
  ratio: number | null;
  /** What the baseline is and what ratio the issue asks for, for the human-readable table. */
  note?: string;
  /** Why the figure was not measured (e.g. no Chromium on this machine); value, baseline and ratio are null. */
  skipped?: string;
}

export interface Bench {
  /** Names of the figures it reports; `npm run bench -- store` runs the benches whose name starts with it. */
  names: string[];
  run(): Promise<BenchResult[]>;
}

export function result(name: string, unit: string, value: number, baseline: number | null, note?: string): BenchResult {
  return { name, unit, value, baseline, ratio: baseline ? value / baseline : null, note };
}

/** Median of repeated timings, to steady a noisy machine. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** An error that means "this machine lacks what the bench needs" (Chromium, …): its figures are skipped, the others run. */
export function missingPrerequisite(err: unknown): string | null {
  if (err && typeof err === 'object' && (err as { missingPrerequisite?: unknown }).missingPrerequisite === true) return (err as Error).message;
  return null;
}

/** The rows of a bench whose figures could not be measured here. */
export function skippedResults(names: readonly string[], reason: string): BenchResult[] {
  return names.map((name) => ({ name, unit: '', value: null, baseline: null, ratio: null, skipped: reason }));
}
