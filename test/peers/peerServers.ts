import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../../src/core/train/jobs/launchers/net';

export { freePort };

/*
 * The real peers the export and the benches are checked against, started from
 * their venvs (scripts/setupPeerVenvs.sh) on free ports, each with its data in
 * a temp folder of its own that goes when it stops.
 */

const REPO = resolve(__dirname, '../..');

/** A peer that cannot run on this machine (its venv is missing, it does not start): says why and how to fix it. */
export class PeerUnavailable extends Error {
  override name = 'PeerUnavailable';
  /** bench/harness.ts's missingPrerequisite reads this. */
  readonly missingPrerequisite = true;
}

export interface PeerServer {
  /** http://127.0.0.1:PORT */
  url: string;
  /** The peer's package version, as its venv has it installed. */
  version: string;
  /** The server's log so far (stdout and stderr), for a failing test's message. */
  log(): string;
  stop(): Promise<void>;
}

/** The venv's bin/NAME, or PeerUnavailable naming the setup command. */
function venvTool(venv: string, tool: string, peer: string): string {
  const bin = join(REPO, venv, 'bin', tool);
  if (!existsSync(bin)) throw new PeerUnavailable(`${peer} is not installed: ${venv}/bin/${tool} is missing; run \`bash scripts/setupPeerVenvs.sh ${peer}\``);
  return bin;
}

function installedVersion(venv: string, pkg: string): string {
  const r = spawnSync(join(REPO, venv, 'bin/python'), ['-c', `from importlib.metadata import version; print(version(${JSON.stringify(pkg)}))`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : 'unknown';
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Spawns a server and waits until GET url+readyPath answers 200: PeerUnavailable with its log's tail if it exits
 * first or is not up within startMs (a server that does not start is a broken setup, not a slow test).
 */
async function startServer(peer: string, command: string, args: string[], env: NodeJS.ProcessEnv, url: string, readyPath: string, dir: string, version: string, startMs = 240_000): Promise<PeerServer> {
  const child: ChildProcess = spawn(command, args, { cwd: dir, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const keep = (d: Buffer): void => {
    log = (log + d.toString()).slice(-200_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let exited: string | null = null;
  const gone = new Promise<void>((r) => child.once('exit', (code, signal) => ((exited = `exited with ${signal ?? code}`), r())));
  child.once('error', (e) => (exited = `could not start: ${e.message}`));
  const stop = async (): Promise<void> => {
    if (exited === null) {
      child.kill('SIGTERM');
      const killed = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(killed);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + startMs;
  for (;;) {
    if (exited !== null) {
      await stop();
      throw new PeerUnavailable(`${peer} ${version} ${exited} before it answered on ${url}${readyPath}:\n${log.slice(-4000)}`);
    }
    try {
      const res = await fetch(url + readyPath);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new PeerUnavailable(`${peer} ${version} did not answer on ${url}${readyPath} within ${startMs / 1000} s:\n${log.slice(-4000)}`);
    }
    await sleep(250);
  }
  return { url, version, log: () => log, stop };
}

/** Arize Phoenix (`phoenix serve`) with a SQLite database in a temp folder; OTLP/HTTP at url/v1/traces. */
export async function startPhoenix(): Promise<PeerServer & { grpcPort: number }> {
  const bin = venvTool('.venv-phoenix', 'phoenix', 'phoenix');
  const [port, grpcPort] = [await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'rl-phoenix-'));
  const env = {
    PHOENIX_WORKING_DIR: dir,
    PHOENIX_SQL_DATABASE_URL: `sqlite:///${join(dir, 'phoenix.db')}`,
    PHOENIX_HOST: '127.0.0.1',
    PHOENIX_PORT: String(port),
    PHOENIX_GRPC_PORT: String(grpcPort),
    PHOENIX_TELEMETRY_ENABLED: 'false',
  };
  const server = await startServer('phoenix', bin, ['serve'], env, `http://127.0.0.1:${port}`, '/healthz', dir, installedVersion('.venv-phoenix', 'arize-phoenix'));
  return { ...server, grpcPort };
}

/** Phoenix's projects with the spans its GraphQL API counts in each (what its UI shows as a project's span count). */
export async function phoenixProjects(url: string): Promise<Array<{ id: string; recordCount: number }>> {
  const res = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ projects { edges { node { id recordCount } } } }' }) });
  const doc = (await res.json().catch(() => ({}))) as { data?: { projects: { edges: Array<{ node: { id: string; recordCount: number } }> } }; errors?: unknown };
  if (!res.ok || !doc.data) throw new Error(`Phoenix's GraphQL API answered ${res.status}: ${JSON.stringify(doc.errors ?? doc).slice(0, 300)}`);
  return doc.data.projects.edges.map((e) => e.node);
}

/** MLflow's tracking server with a SQLite backend in a temp folder; OTLP/HTTP at url/v1/traces with an x-mlflow-experiment-id header. */
export async function startMlflow(): Promise<PeerServer> {
  const bin = venvTool('.venv-mlflow', 'mlflow', 'mlflow');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'rl-mlflow-'));
  const args = ['server', '--host', '127.0.0.1', '--port', String(port), '--workers', '1', '--backend-store-uri', `sqlite:///${join(dir, 'mlflow.db')}`, '--default-artifact-root', join(dir, 'artifacts')];
  return startServer('mlflow', bin, args, { MLFLOW_DISABLE_TELEMETRY: 'true', DO_NOT_TRACK: 'true' }, `http://127.0.0.1:${port}`, '/health', dir, installedVersion('.venv-mlflow', 'mlflow'));
}

/**
 * Agent Lightning's server (`agl-server` from .venv-agentlightning, its LLM
 * proxy inside) on a free port, its proxy's default model named `model`, its
 * Hydra run folder in a temp folder.
 */
export async function startAgentLightning(model: string): Promise<PeerServer> {
  const bin = venvTool('.venv-agentlightning', 'agl-server', 'agentlightning');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'rl-agl-'));
  const args = ['host=127.0.0.1', `port=${port}`, `default_proxy.model_name=${model}`, `hydra.run.dir=${dir}`];
  return startServer('agentlightning', bin, args, {}, `http://127.0.0.1:${port}`, '/healthz', dir, installedVersion('.venv-agentlightning', 'agentlightning'), 60_000);
}
