import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const REPO = resolve(__dirname, '../..');
export const CODE_SERVER = join(REPO, '.cache/code-server/node_modules/.bin/code-server');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** The flags ENVIRONMENT.md lists for Debian's Chromium in a headless container. */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/**
 * Why the real-VS-Code tests cannot run here, or null when they can. Outside CI
 * a missing code-server or Chromium is a loud skip; in CI it is a failure, so a
 * broken install can never turn into a green build.
 */
export function missingPrerequisite(): string | null {
  const missing: string[] = [];
  if (!existsSync(CODE_SERVER)) missing.push(`code-server (run: bash test/extension/installCodeServer.sh → ${CODE_SERVER})`);
  if (!existsSync(CHROMIUM)) missing.push(`Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`);
  return missing.length ? `missing ${missing.join(' and ')}` : null;
}

/** Exits 0 with a loud banner when the prerequisites are missing outside CI; returns in CI or when all is there. */
export function skipUnlessRunnable(what: string): boolean {
  const reason = missingPrerequisite();
  if (!reason) return false;
  if (process.env.CI) throw new Error(`${what} cannot run in CI: ${reason}`);
  const bar = '!'.repeat(78);
  console.log(`${bar}\n!! SKIPPED ${what}: ${reason}\n!! (CI is unset, so this is a skip; in CI it fails.)\n${bar}`);
  return true;
}

export interface ScratchDirs {
  root: string;
  home: string;
  tmp: string;
  userData: string;
  extensions: string;
}

/** A throwaway HOME/XDG/TMPDIR, user-data and extensions folder, so code-server never touches the real home. */
export function makeScratch(prefix: string): ScratchDirs {
  const root = mkdtempSync(join(tmpdir(), prefix));
  const dirs = { root, home: join(root, 'home'), tmp: join(root, 'tmp'), userData: join(root, 'user-data'), extensions: join(root, 'extensions') };
  for (const d of [dirs.home, dirs.tmp, dirs.userData, dirs.extensions, join(dirs.userData, 'User')]) mkdirSync(d, { recursive: true });
  return dirs;
}

/** Writes the user settings.json code-server reads from its user-data-dir. */
export function writeUserSettings(scratch: ScratchDirs, settings: Record<string, unknown>): void {
  writeFileSync(join(scratch.userData, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
}

/** The environment a child that must stay inside the scratch folder runs with. */
export function scratchEnv(scratch: ScratchDirs, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // Inside a VS Code terminal these make code-server hand the folder to that VS Code instead of serving.
  for (const k of Object.keys(env)) if (k.startsWith('VSCODE_') || k === 'ELECTRON_RUN_AS_NODE') delete env[k];
  return {
    ...env,
    HOME: scratch.home,
    XDG_CONFIG_HOME: join(scratch.home, '.config'),
    XDG_DATA_HOME: join(scratch.home, '.local/share'),
    XDG_CACHE_HOME: join(scratch.home, '.cache'),
    XDG_STATE_HOME: join(scratch.home, '.local/state'),
    TMPDIR: scratch.tmp,
    ...extra,
  };
}

export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

export interface CodeServer {
  port: number;
  origin: string;
  /** The authority the workbench uses for files on this server: vscode-remote://127.0.0.1:PORT */
  remoteAuthority: string;
  logFile: string;
  /** The last lines code-server and its extension host wrote, for error messages. */
  logTail(lines?: number): string;
  stop(): Promise<void>;
}

export interface CodeServerOptions {
  scratch: ScratchDirs;
  /** Extra environment for the server (the extension host inherits it). */
  env?: Record<string, string>;
}

/** Starts code-server on a free port and waits until /healthz answers. */
export async function startCodeServer(opts: CodeServerOptions): Promise<CodeServer> {
  const { scratch } = opts;
  const port = await freePort();
  const logFile = join(scratch.root, 'code-server.log');
  const configFile = join(scratch.root, 'code-server.yaml');
  writeFileSync(configFile, 'auth: none\ncert: false\n');
  const args = [
    '--config', configFile,
    '--bind-addr', `127.0.0.1:${port}`,
    '--auth', 'none',
    '--user-data-dir', scratch.userData,
    '--extensions-dir', scratch.extensions,
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-workspace-trust',
    '--disable-getting-started-override',
  ];
  const log: string[] = [];
  // Its own process group, so stop() ends code-server and every helper it spawned (extension hosts, pty host, watchers).
  const child: ChildProcess = spawn(CODE_SERVER, args, { env: scratchEnv(scratch, opts.env), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const collect = (b: Buffer): void => {
    log.push(b.toString());
    writeFileSync(logFile, log.join(''));
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  let exited: number | null = null;
  child.on('exit', (code) => {
    exited = code ?? -1;
  });
  const logTail = (lines = 40): string => {
    const own = log.join('').split('\n');
    // The extension host logs into the user-data-dir; its last lines are usually what explains a failure.
    return own.slice(-lines).join('\n');
  };
  const stop = async (): Promise<void> => {
    if (exited !== null || child.pid === undefined) return;
    const group = -child.pid;
    try {
      process.kill(group, 'SIGTERM');
    } catch {
      return;
    }
    for (let i = 0; i < 50 && exited === null; i++) await sleep(100);
    try {
      process.kill(group, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  const origin = `http://127.0.0.1:${port}`;
  // Start-up is a few seconds when warm; the bound is for a cold, busy CI machine.
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (exited !== null) throw new Error(`code-server exited with ${exited} before it was healthy:\n${logTail()}`);
    try {
      const r = await fetch(`${origin}/healthz`);
      if (r.ok) return { port, origin, remoteAuthority: `vscode-remote://127.0.0.1:${port}`, logFile, logTail, stop };
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  await stop();
  throw new Error(`code-server did not answer ${origin}/healthz within 60 s:\n${logTail()}`);
}

/** The workbench URL that opens `folder`, with an optional payload (extension development/tests paths). */
export function workbenchUrl(cs: CodeServer, folder: string, payload?: Array<[string, string]>): string {
  const q = new URLSearchParams({ folder });
  if (payload) q.set('payload', JSON.stringify(payload));
  return `${cs.origin}/?${q.toString()}`;
}

/** Extension-host log lines written under the user-data-dir (exthost*.log, remoteexthost.log), newest last. */
export function extensionHostLogTail(scratch: ScratchDirs, lines = 40): string {
  const found: string[] = [];
  const walk = (dir: string, depth: number): void => {
    if (depth > 6 || !existsSync(dir)) return;
    for (const name of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, name.name);
      if (name.isDirectory()) walk(p, depth + 1);
      else if (/exthost.*\.log$|remoteexthost\.log$/i.test(name.name)) found.push(p);
    }
  };
  walk(join(scratch.userData, 'logs'), 0);
  return found
    .map((f) => `--- ${f.slice(scratch.root.length + 1)}\n${readFileSync(f, 'utf8').split('\n').slice(-lines).join('\n')}`)
    .join('\n');
}

export function removeScratch(scratch: ScratchDirs): void {
  rmSync(scratch.root, { recursive: true, force: true, maxRetries: 3 });
}

/** Runs a test driver's main and exits with its code; a crash counts as one failed test in the closing line. */
export function runDriver(main: () => Promise<number>): void {
  main().then(
    (code) => process.exit(code),
    (err) => {
      console.error(err instanceof Error ? err.message : err);
      console.log('0 passed, 1 failed');
      process.exit(1);
    },
  );
}
