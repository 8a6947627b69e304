/** What the suite inside the extension host hands the driver outside it. */
export interface TestResult {
  title: string;
  state: 'passed' | 'failed' | 'pending';
  durationMs: number | null;
  error?: string;
}

export interface SuiteResults {
  mode: 'fresh' | 'initialized';
  workspace: string | null;
  vscodeVersion: string;
  files: string[];
  tests: TestResult[];
  passed: number;
  failed: number;
  pending: number;
  /** Figures the tests measured (activationMs...): reported, never asserted on. */
  metrics: Record<string, number | string | boolean>;
  done: boolean;
  /** Set when mocha itself could not start (a test file failed to load). */
  error?: string;
}

/** The driver names the results file in this variable; the extension host inherits code-server's environment. */
export const RESULTS_ENV = 'ROLLOUT_LAB_TEST_RESULTS';
/** Test files whose name starts with this run in an empty workspace; the rest in an initialized one. */
export const SUITE_MODE_FRESH = 'fresh.';

const METRICS_KEY = '__rolloutLabTestMetrics';

/**
 * Each test file is its own bundle, so module state is not shared between
 * them; the metrics live on globalThis, which the extension host shares.
 */
export function recordMetric(name: string, value: number | string | boolean): void {
  const g = globalThis as unknown as Record<string, Record<string, number | string | boolean>>;
  g[METRICS_KEY] ??= {};
  g[METRICS_KEY][name] = value;
  console.log(`[rollout-lab tests] ${name} = ${value}`);
}

export function collectedMetrics(): Record<string, number | string | boolean> {
  return { ...((globalThis as unknown as Record<string, Record<string, number | string | boolean>>)[METRICS_KEY] ?? {}) };
}
