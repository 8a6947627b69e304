import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type OpenAI from 'openai';

/** A worker running a TypeScript file of bench/fixtures (the bench runs under tsx; a worker needs it loaded again). */
export function tsWorker(file: string, workerData?: unknown): Worker {
  return new Worker(`require('tsx/cjs'); require(${JSON.stringify(join(__dirname, 'fixtures', file))});`, { eval: true, workerData });
}

/** The worker's next message ("agent failed…" is an error). */
export function reply<T>(w: Worker): Promise<T> {
  return new Promise((done, fail) => {
    w.once('message', (m: T | string) => {
      w.off('error', fail);
      if (typeof m === 'string' && m.startsWith('agent failed')) fail(new Error(m));
      else done(m as T);
    });
    w.once('error', fail);
  });
}

/** What the bench agents ask the model, one call each. */
export const AGENT_MESSAGES: OpenAI.Chat.ChatCompletionMessageParam[] = [
  { role: 'system', content: 'You are the Geneticist. Answer briefly.' },
  { role: 'user', content: 'Does APOE4 raise amyloid-beta in plasma? Cite the cohort.' },
];
