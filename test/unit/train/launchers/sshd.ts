import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { accepts, freePort } from '../../../../src/core/train/jobs/launchers/net';

export const SSHD = '/usr/sbin/sshd';

export interface Sshd {
  child: ChildProcess;
  port: number;
  /** The client's private key (its public half is the only authorised one). */
  key: string;
}

/**
 * A real sshd on 127.0.0.1 with its own host key, client key and config in `dir`: key
 * logins only, for this user; `env` is set in every session (SetEnv), as a host's own
 * profile would. Resolves once it accepts connections.
 */
export async function startSshd(dir: string, env: Record<string, string> = {}): Promise<Sshd> {
  mkdirSync(dir, { recursive: true });
  for (const k of ['host_key', 'id']) {
    const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path.join(dir, k)], { encoding: 'utf8' });
    assert.equal(r.status, 0, `ssh-keygen: ${r.stderr}`);
  }
  writeFileSync(path.join(dir, 'authorized_keys'), readFileSync(path.join(dir, 'id.pub')));
  const port = await freePort();
  const config = path.join(dir, 'sshd_config');
  const setEnv = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${path.join(dir, 'host_key')}`,
      `AuthorizedKeysFile ${path.join(dir, 'authorized_keys')}`,
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'StrictModes no',
      `PidFile ${path.join(dir, 'sshd.pid')}`,
      'UsePAM no',
      ...(setEnv.length ? [`SetEnv ${setEnv.join(' ')}`] : []),
      '',
    ].join('\n'),
  );
  // sshd wants its privilege separation folder, which a container may lack.
  if (process.getuid?.() === 0) mkdirSync('/run/sshd', { recursive: true });
  const child = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  for (let i = 0; i < 200 && !(await accepts(port)); i++) {
    if (child.exitCode !== null) throw new Error(`sshd exited with ${child.exitCode}: ${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, port, key: path.join(dir, 'id') };
}
