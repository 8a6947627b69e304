/** One benchmark figure, printed beside a baseline measured in the same run. */
export interface BenchResult {
  name: string;
  unit: string;
  value: number;
  /** The same measure taken on the baseline in this run (null when the figure has none, e.g. rss). */
  baseline: number | null;
  /** value / baseline (null without a baseline). */
  ratio: number | null;
  /** What the baseline is and what ratio the issue asks for, for the human-readable table. */
  note?: string;
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
