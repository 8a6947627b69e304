import { createRequire, isBuiltin } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, extname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { runInThisContext } from 'node:vm';
import { build, type BuildFailure, type Loader, type Message, type Plugin } from 'esbuild';
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

const isShared = (spec: string): boolean => Object.hasOwn(SHARED_MODULES, spec);
const SHARED_FAMILY = /^(@langchain\/langgraph|@langchain\/core|zod)(\/|$)/;

/*
 * Names the bundle uses for what Node gives each file of a module: esbuild's
 * `define` points `import.meta`, `__dirname` and `__filename` at them, and each
 * source file declares its own (a top-level var esbuild renames per file).
 */
const META_FN = '__rollout_lab_import_meta';
const META = '__rollout_lab_meta';
const DIRNAME = '__rollout_lab_dirname';
const FILENAME = '__rollout_lab_filename';
const USES_FILE_INFO = /import\.meta|__dirname|__filename/;
const LOADERS: Record<string, Loader> = { '.ts': 'ts', '.mts': 'ts', '.cts': 'ts', '.tsx': 'tsx', '.jsx': 'jsx' };

/** Marks esbuild's own resolution, asked from inside our resolver. */
const PLAIN_RESOLVE = Symbol('plain resolve');

/** `@scope/pkg/sub/path` → `@scope/pkg`; `pkg/sub` → `pkg`. */
function packageName(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** Whether Node loads this file as an ES module: .mjs, or .js under a package.json with "type": "module". */
function isEsmFile(file: string): boolean {
  const ext = extname(file);
  if (ext === '.mjs') return true;
  if (ext !== '.js') return false;
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        return (JSON.parse(readFileSync(pkg, 'utf8')) as { type?: unknown }).type === 'module';
      } catch {
        return false;
      }
    }
    if (dirname(dir) === dir) return false;
  }
}

function notInstalled(spec: string, importer: string, moduleDir: string): string {
  const pkg = packageName(spec);
  const shown = relative(moduleDir, importer) || importer;
  if (SHARED_FAMILY.test(spec)) {
    return `"${spec}" (imported by ${shown}) is not one of the entry points Rollout Lab shares (${Object.keys(SHARED_MODULES).join(', ')}); import from one of those, or install ${pkg} in ${moduleDir} (npm install ${pkg})`;
  }
  return `package "${pkg}" (imported by ${shown}) is not installed where the module can find it; run \`npm install ${pkg}\` in ${moduleDir} — packages are resolved from the module's own folder, as Node does`;
}

/**
 * Keeps packages out of the bundle: a bare import is resolved now from the
 * importing file's folder (Node's rules), and loaded at run time from where it
 * is installed, so a package finds its own files (sql.js its wasm) beside
 * itself. LangGraph, LangChain core and zod stay ours. A package that exists
 * only as an ES module is recorded in `esm`, to be loaded with import().
 * Every user source file gets its own import.meta, __dirname and __filename.
 */
function userModulePlugin(moduleDir: string, esm: Set<string>): Plugin {
  return {
    name: 'rollout-lab-user-module',
    setup(b) {
      b.onResolve({ filter: /.*/ }, async (args) => {
        const spec = args.path;
        if (args.pluginData === PLAIN_RESOLVE || args.kind === 'entry-point' || spec.startsWith('.') || isAbsolute(spec)) return undefined;
        if (isBuiltin(spec) || isShared(spec)) return { path: spec, external: true };
        try {
          const found = createRequire(join(args.resolveDir, 'noop.js')).resolve(spec);
          if (isEsmFile(found)) esm.add(found);
          return { path: found, external: true };
        } catch {
          // Not there for require(): an ESM-only package (import conditions), or a tsconfig path alias to the user's own files.
        }
        const plain = await b.resolve(spec, { kind: 'import-statement', resolveDir: args.resolveDir, importer: args.importer, pluginData: PLAIN_RESOLVE });
        if (plain.errors.length === 0 && plain.path && !plain.external) {
          if (!plain.path.split(sep).includes('node_modules')) return undefined;
          esm.add(plain.path);
          return { path: plain.path, external: true };
        }
        return { errors: [{ text: notInstalled(spec, args.importer, moduleDir) }] };
      });
      b.onLoad({ filter: /\.[cm]?[jt]sx?$/ }, async (args) => {
        let text = await readFile(args.path, 'utf8');
        if (USES_FILE_INFO.test(text)) {
          // On the first line, so the user's line numbers (errors, source maps) stay as written.
          const decl = `var ${META} = ${META_FN}(${JSON.stringify(args.path)}), ${DIRNAME} = ${META}.dirname, ${FILENAME} = ${META}.filename;`;
          const shebang = text.startsWith('#!') ? text.indexOf('\n') + 1 : 0;
          text = shebang > 0 ? `${text.slice(0, shebang)}${decl}${text.slice(shebang)}` : `${decl}${text}`;
        }
        return { contents: text, loader: LOADERS[extname(args.path)] ?? 'js' };
      });
    },
  };
}

function location(m: Message, cwd: string): string {
  const loc = m.location;
  return loc ? `${resolve(cwd, loc.file)}:${loc.line}:${loc.column + 1}: ` : '';
}

async function bundle(file: string, what: string, esm: Set<string>): Promise<string> {
  const moduleDir = dirname(file);
  try {
    const out = await build({
      entryPoints: [file],
      absWorkingDir: moduleDir,
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      write: false,
      sourcemap: 'inline',
      logLevel: 'silent',
      define: { 'import.meta': META, __dirname: DIRNAME, __filename: FILENAME },
      plugins: [userModulePlugin(moduleDir, esm)],
    });
    return out.outputFiles[0]!.text;
  } catch (err) {
    const errors = (err as Partial<BuildFailure>).errors;
    if (!errors?.length) throw new ConfigError(`${what} ${file} could not be bundled: ${errorMessage(err)}`, file);
    const first = errors[0]!;
    const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
    if (first.pluginName) throw new ConfigError(`${what} ${file} cannot be loaded: ${location(first, moduleDir)}${first.text}${more}`, file);
    throw new ConfigError(`${what} does not compile: ${location(first, moduleDir)}${first.text}${more}; fix the file and run again`, file);
  }
}

/**
 * Node 20 cannot require() every ES module (not one with top-level await, and
 * not at all before 20.19), so ESM-only packages are imported up front. The
 * bundle's interop reads `__esModule` to find the default export.
 */
async function importEsm(files: Set<string>, file: string, what: string): Promise<Map<string, unknown>> {
  const loaded = new Map<string, unknown>();
  for (const f of files) {
    try {
      const ns = (await import(pathToFileURL(f).href)) as Record<string, unknown>;
      loaded.set(f, { __esModule: true, ...ns });
    } catch (err) {
      throw new ConfigError(`${what} ${file} imports ${f}, an ES module that failed to load: ${errorMessage(err)}`, file);
    }
  }
  return loaded;
}

/** import.meta of one of the module's files, as Node gives it. */
function importMeta(path: string): { url: string; filename: string; dirname: string } {
  return { url: pathToFileURL(path).href, filename: path, dirname: dirname(path) };
}

/**
 * Runs the CommonJS bundle in this realm. Its `require` gives our shared
 * packages, the ES modules imported up front, and everything else through
 * Node's own require from the module's file (so `require.resolve` works too).
 */
function evaluate(code: string, file: string, what: string, esm: Map<string, unknown>): Record<string, unknown> {
  const nodeRequire = createRequire(file);
  const moduleRequire = Object.assign(
    (spec: string): unknown => {
      if (isShared(spec)) return SHARED_MODULES[spec];
      if (esm.has(spec)) return esm.get(spec);
      try {
        return nodeRequire(spec);
      } catch (err) {
        const missing = (err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND' && errorMessage(err).includes(`'${spec}'`);
        if (!missing) throw err;
        throw new ConfigError(`${what} ${file}: ${notInstalled(spec, file, dirname(file))}`, file);
      }
    },
    { resolve: nodeRequire.resolve, cache: nodeRequire.cache, main: nodeRequire.main, extensions: nodeRequire.extensions },
  );
  const module = { exports: {} as Record<string, unknown> };
  const wrapper = runInThisContext(`(function (exports, require, module, __filename, __dirname, ${META_FN}) {${code}\n})`, { filename: file });
  try {
    wrapper.call(module.exports, module.exports, moduleRequire, module, file, dirname(file), importMeta);
  } catch (err) {
    if (err instanceof LabError) throw err;
    throw new ConfigError(`${what} ${file} failed while loading: ${errorMessage(err)}`, file);
  }
  return module.exports;
}

/**
 * Loads a user's TS or JS module (a graph, a custom reward, a search provider,
 * simulator answers): its own source files are bundled with esbuild at load
 * time; the packages it imports are loaded by Node from the module's own
 * folder, except LangGraph, LangChain core and zod, which are ours. `what`
 * names the module in error messages.
 */
export async function loadUserModule(file: string, what: string): Promise<Record<string, unknown>> {
  return (await loadUserModuleWithCode(file, what)).exports;
}

/** The same, also returning the evaluated bundle (with its inline source map), to map errors back to the user's lines. */
export async function loadUserModuleWithCode(file: string, what: string): Promise<{ exports: Record<string, unknown>; code: string }> {
  const esmFiles = new Set<string>();
  const code = await bundle(file, what, esmFiles);
  const esm = await importEsm(esmFiles, file, what);
  return { exports: evaluate(code, file, what, esm), code };
}
