// Packages the extension as one .vsix per platform (`npm run package`: this machine's platform;
// `npm run package -- --target darwin-arm64 --target win32-x64`: those). The package carries esbuild's
// native binary, because a lab bundles the user's graph and reward modules with esbuild when it loads
// them (src/core/graph/userModule.ts): a .vsix holds the binary of one platform and says which with
// `vsce package --target`, so VS Code installs it only there.
//
// vsce walks every file under the folder it packages before it applies .vscodeignore, and a working
// checkout holds the venvs (hundreds of thousands of files) and the benches' stores: that walk took
// minutes. So each target is packaged from a staging folder that holds only the top-level entries the
// "!" lines of .vscodeignore name, with a package.json whose one dependency is esbuild (the rest is
// bundled into dist/, so `npm list --production` there finds exactly what ships).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** vsce's targets, each with the @esbuild package whose binary runs there (esbuild's Linux binaries are static, so Alpine takes them too). */
const ESBUILD_PACKAGE = {
  'linux-x64': 'linux-x64',
  'linux-arm64': 'linux-arm64',
  'linux-armhf': 'linux-arm',
  'alpine-x64': 'linux-x64',
  'alpine-arm64': 'linux-arm64',
  'darwin-x64': 'darwin-x64',
  'darwin-arm64': 'darwin-arm64',
  'win32-x64': 'win32-x64',
  'win32-arm64': 'win32-arm64',
};

/** The vsce target of this machine; Alpine (musl) is told apart from glibc Linux by the runtime's report. */
function currentTarget() {
  const arch = { x64: 'x64', arm64: 'arm64', arm: process.platform === 'linux' ? 'armhf' : 'arm' }[process.arch] ?? process.arch;
  if (process.platform === 'linux') {
    const glibc = process.report?.getReport?.().header?.glibcVersionRuntime;
    return `${glibc ? 'linux' : 'alpine'}-${arch}`;
  }
  return `${process.platform}-${arch}`;
}

function fail(message) {
  console.error(`npm run package: ${message}`);
  process.exit(2);
}

const argv = process.argv.slice(2);
const targets = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--target' && argv[i + 1]) targets.push(argv[++i]);
  else if (argv[i].startsWith('--target=')) targets.push(argv[i].slice('--target='.length));
  else fail(`unknown argument "${argv[i]}" — use --target <${Object.keys(ESBUILD_PACKAGE).join('|')}> (repeatable; default: this machine's)`);
}
if (targets.length === 0) targets.push(currentTarget());

const root = new URL('..', import.meta.url).pathname;
const { version: esbuildVersion } = JSON.parse(readFileSync(join(root, 'node_modules/esbuild/package.json'), 'utf8'));
const manifestText = readFileSync(join(root, 'package.json'), 'utf8');
const { name, version } = JSON.parse(manifestText);
const ignore = readFileSync(join(root, '.vscodeignore'), 'utf8');
if (!ignore.includes('node_modules/@esbuild/*/')) fail('.vscodeignore no longer lets node_modules/@esbuild/*/ in: this script narrows those lines to one platform');
const vsce = join(root, 'node_modules/@vscode/vsce/vsce');
const scratch = mkdtempSync(join(tmpdir(), 'rollout-lab-package-'));

/** The top-level files and folders (a package folder under node_modules) that some "!" line of the ignore text lets in. */
function shippedEntries(ignoreText) {
  const entries = new Set();
  for (const line of ignoreText.split('\n').map((l) => l.trim())) {
    if (!line.startsWith('!')) continue;
    const parts = line.slice(1).split('/');
    const depth = parts[0] !== 'node_modules' ? 1 : parts[1].startsWith('@') ? 3 : 2;
    entries.add(parts.slice(0, depth).join('/'));
  }
  return [...entries];
}

/** A folder holding only what the ignore text can let in, and the manifest with esbuild as its one dependency. */
function stage(target, ignoreText) {
  const dir = join(scratch, target);
  for (const entry of shippedEntries(ignoreText)) {
    if (entry === 'package.json' || !existsSync(join(root, entry))) continue;
    mkdirSync(join(dir, entry, '..'), { recursive: true });
    cpSync(join(root, entry), join(dir, entry), { recursive: true });
  }
  const manifest = JSON.parse(manifestText);
  manifest.dependencies = { esbuild: manifest.dependencies.esbuild };
  delete manifest.devDependencies;
  delete manifest.scripts;
  writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
  return dir;
}

try {
  // vsce runs vscode:prepublish in the folder it packages; the staging folder has no sources, so it runs here first.
  const built = spawnSync('npm', ['run', 'vscode:prepublish'], { cwd: root, stdio: 'inherit' });
  if (built.status !== 0) process.exit(built.status ?? 1);
  for (const target of targets) {
    const pkg = ESBUILD_PACKAGE[target];
    if (!pkg) fail(`"${target}" is not a platform this extension packages for — one of ${Object.keys(ESBUILD_PACKAGE).join(', ')}`);
    const manifest = join(root, 'node_modules/@esbuild', pkg, 'package.json');
    const installed = existsSync(manifest) ? JSON.parse(readFileSync(manifest, 'utf8')).version : null;
    if (installed !== esbuildVersion) {
      // npm installs only this machine's binary package; another platform's is unpacked beside it, the lock file untouched.
      const dir = `node_modules/@esbuild/${pkg}`;
      fail(
        `${target} needs esbuild's @esbuild/${pkg} ${esbuildVersion} binary in ${dir} (${installed ? `found ${installed}` : 'not installed'}): ` +
          `npm pack @esbuild/${pkg}@${esbuildVersion} && rm -rf ${dir} && mkdir -p ${dir} && tar -xzf esbuild-${pkg}-${esbuildVersion}.tgz -C ${dir} --strip-components=1, then package again`,
      );
    }
    // Only this platform's binary goes in, whatever other @esbuild packages node_modules holds.
    const narrowed = ignore.replaceAll('node_modules/@esbuild/*/', `node_modules/@esbuild/${pkg}/`);
    const ignoreFile = join(scratch, `${target}.vscodeignore`);
    writeFileSync(ignoreFile, narrowed);
    const out = `${name}-${version}-${target}.vsix`;
    const r = spawnSync(process.execPath, [vsce, 'package', '--target', target, '--ignoreFile', ignoreFile, '-o', join(root, out)], {
      cwd: stage(target, narrowed),
      stdio: 'inherit',
    });
    if (r.status !== 0) process.exit(r.status ?? 1);
    console.log(`${out}: for ${target}, with esbuild's @esbuild/${pkg} binary`);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
