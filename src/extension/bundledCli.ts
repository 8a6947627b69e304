import * as path from 'node:path';

/**
 * The CLI bundled beside this extension (dist/cli.js), as worker processes
 * start it: VS Code's own runtime runs it as node (ELECTRON_RUN_AS_NODE; the
 * variable is harmless where the runtime is node already, as in code-server).
 */
export function bundledCli(): { cli: string[]; env: Record<string, string> } {
  return { cli: [process.execPath, path.join(__dirname, 'cli.js')], env: { ELECTRON_RUN_AS_NODE: '1' } };
}
