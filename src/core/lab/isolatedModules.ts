import { relative } from 'node:path';
import { IsolatePool } from '../graph/moduleIsolate';
import type { SearchHit, SearchProvider } from '../graph/tools/search';
import { customTimeoutOf, type CustomReward, type CustomRewardResult } from '../reward/customReward';
import type { CannedAnswers, CannedReply } from '../sim/cannedAnswers';

/*
 * The lab's side of a user's reward, simulator answers and search provider
 * modules, each run in worker threads of its own (graph/moduleIsolate.ts):
 * the same interfaces as the in-process loaders give, with each call's time
 * limit kept here, where a busy loop in the module cannot stop the clock.
 */

/** A module's path as messages show it: relative to the workspace when inside it. */
export function moduleLabel(what: string, file: string, workspaceDir: string): string {
  const rel = relative(workspaceDir, file);
  return `${what} ${rel && !rel.startsWith('..') ? rel : file}`;
}

/** Something that holds workers, to be closed with the lab. */
export interface Closeable {
  close(): Promise<void>;
}

export async function isolatedCustomReward(file: string, workspaceDir: string, timeoutMs: number | undefined): Promise<CustomReward & Closeable> {
  const limit = customTimeoutOf(file, { timeoutMs });
  const label = moduleLabel('reward module', file, workspaceDir);
  const pool = new IsolatePool({ role: 'reward', file, label });
  await pool.start();
  return {
    file,
    timeoutMs: limit,
    async evaluate(input, opts) {
      const { judge, ...rest } = input;
      return (await pool.call('evaluate', rest, {
        timeoutMs: limit,
        timeoutMessage: () => `${label} did not answer within reward.customTimeoutMs = ${limit} ms; make it return sooner, or raise "reward.customTimeoutMs" in .rollout-lab/lab.json`,
        signal: opts?.signal,
        onRequest: (method) => (method === 'judge' ? judge() : Promise.reject(new Error(`no request "${method}"`))),
      })) as CustomRewardResult;
    },
    close: () => pool.close(),
  };
}

export async function isolatedCannedAnswers(file: string, workspaceDir: string, timeoutMs: number, pools: Closeable[]): Promise<CannedAnswers> {
  const label = moduleLabel('simulator answers module', file, workspaceDir);
  const pool = new IsolatePool({ role: 'answers', file, label });
  await pool.start();
  pools.push(pool);
  return {
    agents: null,
    async answer(agent, request) {
      return (await pool.call(
        'answer',
        { agent, request },
        { timeoutMs, timeoutMessage: () => `${label} did not answer within simulator.moduleTimeoutMs = ${timeoutMs} ms; make it answer sooner, or raise "simulator.moduleTimeoutMs" in .rollout-lab/lab.json` },
      )) as CannedReply | undefined;
    },
  };
}

export async function isolatedSearchProvider(file: string, workspaceDir: string, timeoutMs: number): Promise<SearchProvider & Closeable> {
  const label = moduleLabel('search provider module', file, workspaceDir);
  const pool = new IsolatePool({ role: 'search', file, label });
  const info = (await pool.start()) as { name: string };
  return {
    name: info.name,
    async search(query, opts) {
      return (await pool.call(
        'search',
        { query, opts },
        { timeoutMs, timeoutMessage: () => `${label} did not answer within tools.searchProviderTimeoutMs = ${timeoutMs} ms; make it answer sooner, or raise "tools.searchProviderTimeoutMs" in .rollout-lab/lab.json` },
      )) as SearchHit[];
    },
    close: () => pool.close(),
  };
}
