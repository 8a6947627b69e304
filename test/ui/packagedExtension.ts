import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CODE_SERVER, REPO, scratchEnv, type ScratchDirs } from '../extension/codeServer';

/**
 * The extension the way a user gets it: the .vsix that `npm run package`
 * builds for this platform (production bundles, .vscodeignore applied),
 * installed with code-server's own --install-extension.
 */

/** Runs `npm run package` and returns the path of the .vsix it made. */
export function packageVsix(): string {
  const started = Date.now();
  const r = spawnSync('npm', ['run', 'package'], { cwd: REPO, encoding: 'utf8', timeout: 300_000 });
  if (r.status !== 0) throw new Error(`npm run package failed:\n${r.stdout}\n${r.stderr}`);
  const vsix = readdirSync(REPO)
    .filter((f) => f.endsWith('.vsix'))
    .map((f) => ({ f, t: statSync(join(REPO, f)).mtimeMs }))
    .filter((x) => x.t >= started - 1000)
    .sort((a, b) => b.t - a.t)[0]?.f;
  if (!vsix) throw new Error('npm run package made no .vsix in the repository folder');
  return join(REPO, vsix);
}

/** Installs a .vsix into the scratch extensions folder with code-server --install-extension; returns a line saying what. */
export function installVsix(scratch: ScratchDirs, vsix: string): string {
  const inst = spawnSync(CODE_SERVER, ['--extensions-dir', scratch.extensions, '--user-data-dir', scratch.userData, '--install-extension', vsix], {
    env: scratchEnv(scratch),
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (inst.status !== 0) throw new Error(`code-server --install-extension ${vsix} failed:\n${inst.stdout}\n${inst.stderr}`);
  return `installed ${vsix} (${Math.round(statSync(vsix).size / 1024)} KiB) with code-server --install-extension`;
}

/** Packages the extension and installs it into the scratch folders. */
export function installPackagedExtension(scratch: ScratchDirs): string {
  return installVsix(scratch, packageVsix());
}
