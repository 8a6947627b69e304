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
import { ConfigError, LabError, errorMessage } from '../errors';

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
const EXTERNAL = ['@langchain/langgraph', '@langchain/langgraph/*', '@langchain/core', '@langchain/core/*', 'zod', 'zod/*'];

function location(m: Message, cwd: string): string {
  const loc = m.location;
  return loc ? `${resolve(cwd, loc.file)}:${loc.line}:${loc.column + 1}: ` : '';
}

async function bundle(file: string, what: string): Promise<string> {
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
    if (!errors?.length) throw new ConfigError(`${what} ${file} could not be bundled: ${errorMessage(err)}`, file);
    const first = errors[0]!;
    const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
    throw new ConfigError(`${what} does not compile: ${location(first, dirname(file))}${first.text}${more}; fix the file and run again`, file);
  }
}

/** `@scope/pkg/sub/path` → `@scope/pkg`; `pkg/sub` → `pkg`. */
function packageName(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** Runs the CommonJS bundle in this realm, with our packages behind `require`. */
function evaluate(code: string, file: string, what: string): Record<string, unknown> {
  const fallback = createRequire(file);
  const requireShared = (spec: string): unknown => {
    if (spec in SHARED_MODULES) return SHARED_MODULES[spec];
    try {
      return fallback(spec);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw err;
      throw new ConfigError(
        `${what} ${file} imports "${spec}", which Rollout Lab does not provide; install it next to the module (npm install ${packageName(spec)}) or import from: ${Object.keys(SHARED_MODULES).join(', ')}`,
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
    throw new ConfigError(`${what} ${file} failed while loading: ${errorMessage(err)}`, file);
  }
  return module.exports;
}

/**
 * Loads a user's TS or JS module (a graph, a search provider): bundled with
 * esbuild at load time, evaluated with LangGraph, LangChain core and zod
 * provided by us. `what` names the module in error messages.
 */
export async function loadUserModule(file: string, what: string): Promise<Record<string, unknown>> {
  return (await loadUserModuleWithCode(file, what)).exports;
}

/** The same, also returning the evaluated bundle (with its inline source map), to map errors back to the user's lines. */
export async function loadUserModuleWithCode(file: string, what: string): Promise<{ exports: Record<string, unknown>; code: string }> {
  const code = await bundle(file, what);
  return { exports: evaluate(code, file, what), code };
}
