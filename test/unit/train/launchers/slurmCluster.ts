import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * A real one-node Slurm cluster for a test file (scripts/startSlurm.sh: its own munged, slurmctld and slurmd
 * under a temporary folder). Debian's slurm-wlm and munge and root are needed: outside CI a test without them
 * skips with the reason; with CI set their absence is a failure, with the command that fixes it.
 */

export const START_SLURM = path.resolve(__dirname, '../../../../scripts/startSlurm.sh');
const NEEDED = ['sbatch', 'squeue', 'scancel', 'scontrol', 'sacct', 'sinfo'];
const DAEMONS = ['/usr/sbin/munged', '/usr/sbin/slurmctld', '/usr/sbin/slurmd'];

function onPath(name: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((d) => d && existsSync(path.join(d, name)));
}

/** Why no cluster can start here (null: it can). */
export function slurmMissing(): string | null {
  const tools = NEEDED.filter((n) => !onPath(n));
  const daemons = DAEMONS.filter((d) => !existsSync(d));
  if (tools.length || daemons.length) return `${[...tools, ...daemons].join(', ')} missing — apt-get install -y slurm-wlm munge`;
  if (!asRoot()) return 'slurmd runs jobs as their users, so the test cluster needs root (or sudo without a password)';
  return null;
}

/** How to run the cluster's script as root: as it is (we are root), through `sudo -n`, or not at all. */
function asRoot(): string[] | null {
  if (process.getuid?.() === 0) return [];
  return spawnSync('sudo', ['-n', 'true']).status === 0 ? ['sudo', '-n'] : null;
}

function script(args: string[]): ReturnType<typeof spawnSync> {
  const [cmd, ...pre] = [...(asRoot() ?? []), 'bash'];
  return spawnSync(cmd!, [...pre, START_SLURM, ...args], { encoding: 'utf8' });
}

function removeDir(dir: string): void {
  // Its daemons' files are root's.
  if (process.getuid?.() === 0) rmSync(dir, { recursive: true, force: true });
  else spawnSync('sudo', ['-n', 'rm', '-rf', dir]);
}

/** `{ skip }` for the tests of a file: false when a cluster can start; outside CI the reason; with CI set, throws. */
export function slurmSkip(what: string): string | false {
  const missing = slurmMissing();
  if (missing && process.env.CI) throw new Error(`${what} needs a real Slurm: ${missing}`);
  if (missing) console.log(`# skipping ${what}: ${missing}`);
  return missing ?? false;
}

export interface SlurmCluster {
  dir: string;
  /** What the cluster's clients need in their environment (SLURM_CONF). */
  env: Record<string, string>;
  /** The node's name (this host's short name). */
  node: string;
  /** Sets env in this process (the launchers run sbatch and squeue with it). */
  use(): void;
  /** Cancels its jobs, stops its daemons and removes its folder. */
  stop(): void;
}

export function startSlurm(prefix = 'slurm'): SlurmCluster {
  const dir = mkdtempSync(path.join(tmpdir(), `rollout-lab-${prefix}-`));
  const r = script([dir]);
  if (r.status !== 0) {
    script([dir, 'stop']);
    removeDir(dir);
    throw new Error(`scripts/startSlurm.sh failed (${r.status}): ${String(r.stderr) || String(r.stdout)}`);
  }
  const env = Object.fromEntries(
    readFileSync(path.join(dir, 'env'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
  const node = spawnSync('hostname', ['-s'], { encoding: 'utf8' }).stdout.trim();
  const saved: Record<string, string | undefined> = {};
  return {
    dir,
    env,
    node,
    use: () => {
      for (const [k, v] of Object.entries(env)) {
        saved[k] = process.env[k];
        process.env[k] = v;
      }
    },
    stop: () => {
      script([dir, 'stop']);
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      removeDir(dir);
    },
  };
}

/** Every regular file under the folders (a cluster's folder also holds munged's socket). */
export function regularFiles(...dirs: string[]): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    if (!existsSync(d)) return;
    for (const name of readdirSync(d)) {
      const p = path.join(d, name);
      const st = lstatSync(p);
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) out.push(p);
    }
  };
  dirs.forEach(walk);
  return out;
}

export function assertNotInRegularFiles(secret: string, ...dirs: string[]): void {
  const files = regularFiles(...dirs);
  assert.ok(files.length > 0, `there are files under ${dirs.join(', ')}`);
  for (const f of files) assert.ok(!readFileSync(f).includes(secret), `the secret is in ${f}`);
}
