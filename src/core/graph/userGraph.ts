import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { runInThisContext } from 'node:vm';
import { build, type BuildFailure, type Message } from 'esbuild';
import * as langgraph from '@langchain/langgraph';
import * as langgraphPrebuilt from '@langchain/langgraph/prebuilt';
import * as lcCallbacksBase from '@langchain/core/callbacks/base';
import * as lcCallbacksManager from '@langchain/core/callbacks/manager';
import * as lcLanguageModelsBase from '@langchain/core/language_models/base';
import * as lcChatModels from '@langchain/core/language_models/chat_models';
import * as lcMessages from '@langchain/core/messages';
import * as lcOutputParsers from '@langchain/core/output_parsers';
import * as lcOutputs from '@langchain/core/outputs';
import * as lcPrompts from '@langchain/core/prompts';
import * as lcRunnables from '@langchain/core/runnables';
import * as lcTools from '@langchain/core/tools';
import * as zod from 'zod';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { ConfigError, LabError, errorMessage } from '../errors';
import { genericOutcome, type GraphOutcome } from './outcome';

/** What a graph factory `(ctx) => graph` receives. */
export interface UserGraphContext {
  /** A routed, traced chat model for an agent name or a logical model name from lab.json. */
  model(agentOrLogicalName: string): BaseChatModel;
  tools: Record<string, StructuredToolInterface>;
  /** The agent's prompt text from lab.json (file or inline). */
  prompt(agent: string): string;
  maxTurns: number;
}

/** The task fields a graph input is built from. */
export interface GraphTask {
  id: string;
  goal: string;
  context: string;
}

export type UserGraph = langgraph.Pregel<any, any>;

export interface LoadedUserGraph {
  graph: UserGraph;
  /** The module's `outcome(state)` export, or genericOutcome. */
  outcome(state: unknown): GraphOutcome;
  /** The module's `input(task)` export, or defaultGraphInput. */
  input(task: GraphTask): unknown;
}

/**
 * Our own instances of the packages a graph is written against. The user's
 * bundle gets these instead of its own copies, so LangChain callbacks (the
 * tracer) reach its model calls and `instanceof` checks hold on both sides.
 */
const SHARED_MODULES: Record<string, unknown> = {
  '@langchain/langgraph': langgraph,
  '@langchain/langgraph/prebuilt': langgraphPrebuilt,
  '@langchain/core/callbacks/base': lcCallbacksBase,
  '@langchain/core/callbacks/manager': lcCallbacksManager,
  '@langchain/core/language_models/base': lcLanguageModelsBase,
  '@langchain/core/language_models/chat_models': lcChatModels,
  '@langchain/core/messages': lcMessages,
  '@langchain/core/output_parsers': lcOutputParsers,
  '@langchain/core/outputs': lcOutputs,
  '@langchain/core/prompts': lcPrompts,
  '@langchain/core/runnables': lcRunnables,
  '@langchain/core/tools': lcTools,
  zod,
  // zod 4 serves the same classes under both names.
  'zod/v4': zod,
};
const GraphOutcomeSchema = zod.object({
  finalOutput: zod.string().nullable(),
  decision: zod.string().nullable().default(null),
  turns: zod.number().int().nonnegative().default(0),
  failures: zod.array(zod.object({ agent: zod.string(), error: zod.string() })).default([]),
});

const EXTERNAL = ['@langchain/langgraph', '@langchain/langgraph/*', '@langchain/core', '@langchain/core/*', 'zod', 'zod/*'];

/**
 * Default graph input: the task, and the question plus its context as the
 * first human message, which fits MessagesAnnotation graphs. LangGraph drops
 * input keys the state does not declare, so `task` costs nothing when unused.
 */
export function defaultGraphInput(task: GraphTask): Record<string, unknown> {
  const text = task.context ? `${task.goal}\n\nContext:\n${task.context}` : task.goal;
  return { task, messages: [new lcMessages.HumanMessage(text)] };
}

function location(m: Message, cwd: string): string {
  const loc = m.location;
  return loc ? `${resolve(cwd, loc.file)}:${loc.line}:${loc.column + 1}: ` : '';
}

async function bundle(file: string): Promise<string> {
  try {
    const out = await build({
      entryPoints: [file],
      absWorkingDir: dirname(file),
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      write: false,
      sourcemap: 'inline',
      logLevel: 'silent',
      external: EXTERNAL,
    });
    return out.outputFiles[0]!.text;
  } catch (err) {
    const errors = (err as Partial<BuildFailure>).errors;
    if (!errors?.length) throw new ConfigError(`graph module ${file} could not be bundled: ${errorMessage(err)}`, file);
    const first = errors[0]!;
    const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
    throw new ConfigError(`graph module does not compile: ${location(first, dirname(file))}${first.text}${more}; fix the file and run again`, file);
  }
}

/** `@scope/pkg/sub/path` → `@scope/pkg`; `pkg/sub` → `pkg`. */
function packageName(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** Runs the CommonJS bundle in this realm, with our packages behind `require`. */
function evaluate(code: string, file: string): Record<string, unknown> {
  const fallback = createRequire(file);
  const requireShared = (spec: string): unknown => {
    if (spec in SHARED_MODULES) return SHARED_MODULES[spec];
    try {
      return fallback(spec);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw err;
      throw new ConfigError(
        `graph module ${file} imports "${spec}", which Rollout Lab does not provide; install it next to the module (npm install ${packageName(spec)}) or import from: ${Object.keys(SHARED_MODULES).join(', ')}`,
        file,
      );
    }
  };
  const module = { exports: {} as Record<string, unknown> };
  const wrapper = runInThisContext(`(function (exports, require, module, __filename, __dirname) {${code}\n})`, { filename: file });
  try {
    wrapper.call(module.exports, module.exports, requireShared, module, file, dirname(file));
  } catch (err) {
    if (err instanceof LabError) throw err;
    throw new ConfigError(`graph module ${file} failed while loading: ${errorMessage(err)}`, file);
  }
  return module.exports;
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
 * `outcome(state) => GraphOutcome` and `input(task) => graph input`.
 * Every problem with the file is a ConfigError that names the fix.
 */
export async function loadUserGraph(file: string, exportName: string, ctx: UserGraphContext): Promise<LoadedUserGraph> {
  const path = resolve(file);
  if (!existsSync(path)) {
    throw new ConfigError(`graph module ${path} does not exist; set "graph.module" in .rollout-lab/lab.json to a TS or JS file (relative to the workspace)`, path);
  }
  const exports = evaluate(await bundle(path), path);
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

  const input = typeof exports.input === 'function' ? (exports.input as (t: GraphTask) => unknown) : defaultGraphInput;
  if (typeof exports.outcome !== 'function') return { graph: value, outcome: genericOutcome, input: (task) => input(task) };
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
  return { graph: value, outcome, input: (task) => input(task) };
}
