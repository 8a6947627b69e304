import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import initSqlJs, { type SqlJsStatic } from 'sql.js';
import { RuntimeFailure } from '../errors';

const WASM = 'sql-wasm.wasm';

/**
 * Finds sql.js's wasm file. Bundled into dist/cli.js or dist/extension.js,
 * sql.js can no longer find it next to its own JS, so look where a build or an
 * install puts it: an explicit path, the env override, module resolution, a
 * copy beside the bundle (dist/), and node_modules above the bundle or source.
 */
export function locateSqlWasm(explicit?: string): string {
  if (explicit) {
    if (existsSync(explicit)) return explicit;
    throw new RuntimeFailure(`sql.js wasm not found at ${explicit}; pass the path of sql-wasm.wasm from the sql.js package`);
  }
  const candidates: string[] = [];
  const fromEnv = process.env['ROLLOUT_LAB_SQL_WASM'];
  if (fromEnv) candidates.push(fromEnv);
  try {
    candidates.push(require.resolve(`sql.js/dist/${WASM}`));
  } catch {
    // not resolvable from here (bundled without node_modules); try the paths below
  }
  candidates.push(
    join(__dirname, WASM),
    join(__dirname, '..', 'node_modules', 'sql.js', 'dist', WASM),
    join(__dirname, '..', '..', '..', 'node_modules', 'sql.js', 'dist', WASM),
  );
  const found = candidates.find((p) => existsSync(p));
  if (!found) {
    throw new RuntimeFailure(`sql.js wasm (${WASM}) not found; looked in ${candidates.join(', ')}; reinstall with npm install or set ROLLOUT_LAB_SQL_WASM`);
  }
  return found;
}

const loaded = new Map<string, Promise<SqlJsStatic>>();

/** sql.js compiled once per process and wasm file. */
export function loadSqlJs(wasmPath?: string): Promise<SqlJsStatic> {
  const path = locateSqlWasm(wasmPath);
  let p = loaded.get(path);
  if (!p) {
    const bytes = readFileSync(path);
    // The file's own buffer when the bytes fill it (no second copy of the wasm in memory).
    const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
    p = initSqlJs({ wasmBinary: (whole ? bytes.buffer : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)) as ArrayBuffer });
    loaded.set(path, p);
    p.catch(() => loaded.delete(path));
  }
  return p;
}
