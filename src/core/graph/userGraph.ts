import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import * as langgraph from '@langchain/langgraph';
import * as lcMessages from '@langchain/core/messages';
import * as zod from 'zod';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { StructuredToolInterface } from '@langchain/core/tools';
import type { VisibleTask } from '../data/visibleTask';
import { ConfigError, LabError, errorMessage } from '../errors';
import { genericOutcome, type GraphOutcome } from './outcome';
import { loadUserModule } from './userModule';

/** What a graph factory `(ctx) => graph` receives. */
export interface UserGraphContext {
  /** A routed, traced chat model for an agent name or a logical model name from lab.json. */
  model(agentOrLogicalName: string): BaseChatModel;
  tools: Record<string, StructuredToolInterface>;
  /** The agent's prompt text from lab.json (file or inline). */
  prompt(agent: string): string;
  maxTurns: number;
}

export type UserGraph = langgraph.Pregel<any, any>;

export interface LoadedUserGraph {
  graph: UserGraph;
  /** The module's `outcome(state)` export, or genericOutcome. */
  outcome(state: unknown): GraphOutcome;
  /** The module's `input(task)` export, or defaultGraphInput; `task` holds only what the agents may see. */
  input(task: VisibleTask): unknown;
  /** The module's `prompts` export: the prompt text per agent it falls back to when lab.json gives none (`init --graph` writes them). */
  prompts: Record<string, string>;
}

const PromptsSchema = zod.record(zod.string(), zod.string());

const GraphOutcomeSchema = zod.object({
  finalOutput: zod.string().nullable(),
  decision: zod.string().nullable().default(null),
  turns: zod.number().int().nonnegative().default(0),
  failures: zod.array(zod.object({ agent: zod.string(), error: zod.string() })).default([]),
});

/**
 * Default graph input: the visible task, and the question plus its context
 * and any other visible field (`db_id: concert_singer`) as the first human
 * message, which fits MessagesAnnotation graphs. LangGraph drops input keys
 * the state does not declare, so `task` costs nothing when unused.
 */
export function defaultGraphInput(task: VisibleTask): Record<string, unknown> {
  const { id: _id, goal, context, ...extra } = task;
  const parts = [goal];
  if (context) parts.push(`Context:\n${context}`);
  const lines = Object.entries(extra).map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
  if (lines.length) parts.push(lines.join('\n'));
  return { task, messages: [new lcMessages.HumanMessage(parts.join('\n\n'))] };
}

/**
 * LangGraph exports CompiledStateGraph but not its Pregel base, so a compiled
 * plain Graph (or a functional-API entrypoint) is recognised by its methods.
 */
function isCompiled(x: unknown): x is UserGraph {
  if (x instanceof langgraph.CompiledStateGraph) return true;
  const g = x as Partial<Record<'invoke' | 'stream' | 'getGraphAsync', unknown>> | null;
  return typeof g === 'object' && g !== null && [g.invoke, g.stream, g.getGraphAsync].every((f) => typeof f === 'function');
}

function isBuilder(x: unknown): x is { compile(): UserGraph } {
  return x instanceof langgraph.StateGraph || x instanceof langgraph.Graph;
}

function describeValue(x: unknown): string {
  if (x === null) return 'null';
  if (typeof x === 'object') return `an object (${(x as object).constructor?.name ?? 'Object'})`;
  return `a ${typeof x}`;
}

/**
 * Loads a LangGraph.js graph from a TS or JS file: bundled with esbuild at
 * load time, with LangGraph, LangChain core and zod provided by us. The export
 * may be a compiled graph, a StateGraph (compiled here), or a factory
 * `(ctx) => graph | Promise<graph>`. The module may also export
 * `outcome(state) => GraphOutcome`, `input(task) => graph input` and
 * `prompts` (its fallback prompt per agent).
 * Every problem with the file is a ConfigError that names the fix.
 */
export async function loadUserGraph(file: string, exportName: string, ctx: UserGraphContext): Promise<LoadedUserGraph> {
  const path = resolve(file);
  if (!existsSync(path)) {
    throw new ConfigError(`graph module ${path} does not exist; set "graph.module" in .rollout-lab/lab.json to a TS or JS file (relative to the workspace)`, path);
  }
  const exports = await loadUserModule(path, 'graph module');
  // `module.exports = graph` in a CommonJS file is its default export.
  const whole = exportName === 'default' && (typeof exports === 'function' || isCompiled(exports) || isBuilder(exports));
  const named = whole ? exports : exportName in exports ? exports[exportName] : undefined;
  if (named === undefined) {
    const found = Object.keys(exports).filter((k) => k !== '__esModule');
    throw new ConfigError(
      `graph module ${path} has no export "${exportName}"; exports found: ${found.join(', ') || '(none)'}. Set "graph.export" in lab.json to one of them, or export the graph as "${exportName}"`,
      path,
    );
  }

  let value: unknown = named;
  if (typeof value === 'function' && !isCompiled(value)) {
    try {
      value = await (value as (c: UserGraphContext) => unknown)(ctx);
    } catch (err) {
      if (err instanceof LabError) throw err;
      throw new ConfigError(`the graph factory "${exportName}" in ${path} threw: ${errorMessage(err)}`, path);
    }
  }
  if (isBuilder(value)) value = value.compile();
  if (!isCompiled(value)) {
    throw new ConfigError(
      `export "${exportName}" of ${path} is ${describeValue(value)}, not a LangGraph graph; export a compiled graph (builder.compile()), a StateGraph, or a function (ctx) => graph`,
      path,
    );
  }

  const input = typeof exports.input === 'function' ? (exports.input as (t: VisibleTask) => unknown) : defaultGraphInput;
  const prompts = PromptsSchema.safeParse(exports.prompts ?? {});
  if (!prompts.success) {
    throw new ConfigError(`export "prompts" of ${path} must be an object of prompt texts by agent name, e.g. export const prompts = { SqlWriter: 'You write SQL...' }`, path);
  }
  if (typeof exports.outcome !== 'function') return { graph: value, outcome: genericOutcome, input: (task) => input(task), prompts: prompts.data };
  const userOutcome = exports.outcome as (s: unknown) => unknown;
  const outcome = (state: unknown): GraphOutcome => {
    const r = GraphOutcomeSchema.safeParse(userOutcome(state));
    if (r.success) return r.data;
    const problem = r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new ConfigError(
      `outcome(state) in ${path} returned an invalid outcome (${problem}); return { finalOutput: string | null, decision: string | null, turns: number, failures: [] }`,
      path,
    );
  };
  return { graph: value, outcome, input: (task) => input(task), prompts: prompts.data };
}
