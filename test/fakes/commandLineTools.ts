import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Stand-ins for the command-line tools the launchers drive (sky, kubectl,
 * rsync; ssh and tar through a recording shim): each appends what it was
 * called with to $FAKE_RECORD, one JSON line per call.
 */
export const FAKE_TOOLS = path.resolve(__dirname, 'launchers');

export interface Recorded {
  tool: string;
  argv: string[];
  stdin?: string;
  envHashes?: Record<string, string | null>;
}

export function readRecord(file: string): Recorded[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Recorded);
}

/** A `name` on PATH that runs one of the fake tools of test/fakes/launchers. */
export function fakeTool(binDir: string, name: string, fixture: string): void {
  mkdirSync(binDir, { recursive: true });
  const file = path.join(binDir, name);
  writeFileSync(file, `#!/bin/sh\nexec '${process.execPath}' '${path.join(FAKE_TOOLS, fixture)}' "$@"\n`);
  chmodSync(file, 0o755);
}

/** A `name` on PATH that records its argv into $FAKE_RECORD, then runs the real tool with the same stdio and signals. */
export function recordingShim(binDir: string, name: string, real: string): void {
  mkdirSync(binDir, { recursive: true });
  const file = path.join(binDir, name);
  writeFileSync(
    file,
    [
      `#!${process.execPath}`,
      "const { appendFileSync } = require('node:fs');",
      "const { spawn } = require('node:child_process');",
      'const args = process.argv.slice(2);',
      `appendFileSync(process.env.FAKE_RECORD, JSON.stringify({ tool: ${JSON.stringify(name)}, argv: [${JSON.stringify(name)}, ...args] }) + '\\n');`,
      `const child = spawn(${JSON.stringify(real)}, args, { stdio: 'inherit' });`,
      "for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(s, () => child.kill(s));",
      "child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 + require('node:os').constants.signals[signal] : 1)));",
      '',
    ].join('\n'),
  );
  chmodSync(file, 0o755);
}
