// Lints python-trainer and python-agent: ruff (its WebAssembly build, so no Python packages are needed) with the
// settings of each package's pyproject.toml [tool.ruff], then pyright with its [tool.pyright]: the trainer's
// against the trainer's venv (.venv-trainer, scripts/setupTrainerVenv.sh; ROLLOUT_LAB_PYTHON
// overrides it), python-agent's against the agents' venv (scripts/setupAgentVenv.sh). Prints `file:line:col CODE message` per ruff finding and pyright's own report;
// exits 1 when either finds anything. `--fix` first applies the fixes ruff offers to the files (review them with git diff).
// Outside CI a machine without that Python skips pyright with the reason; in CI it fails.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PositionEncoding, Workspace } from '@astral-sh/ruff-wasm-nodejs';
import { parse as parseToml } from 'smol-toml';
import { agentVenvPython, trainerVenvPython } from '../test/python/venvs.mjs';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const trainer = path.join(root, 'python-trainer');
const fix = process.argv.includes('--fix');

/** The .py files under dir, skipping caches and hidden folders, in a stable order. */
function pythonFiles(dir) {
  return readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((entry) => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return entry.name.startsWith('.') || entry.name === '__pycache__' ? [] : pythonFiles(full);
      return entry.name.endsWith('.py') ? [full] : [];
    });
}

/** Offset in `text` of a ruff location (1-based row, 1-based column in UTF-16 code units). */
function offsetOf(lineStarts, { row, column }) {
  return lineStarts[row - 1] + column - 1;
}

/** The text with one round of ruff's fixes applied, last first; a fix that overlaps one applied already waits for the next round. */
function applyFixes(text, diagnostics) {
  const lineStarts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') lineStarts.push(i + 1);
  lineStarts.push(text.length + 1);
  const fixes = diagnostics
    .filter((d) => d.fix && d.fix.edits.length)
    .map((d) => {
      const edits = d.fix.edits.map((e) => ({ start: offsetOf(lineStarts, e.location), end: offsetOf(lineStarts, e.end_location), content: e.content ?? '' }));
      return { edits: edits.sort((a, b) => b.start - a.start), start: Math.min(...edits.map((e) => e.start)), end: Math.max(...edits.map((e) => e.end)) };
    })
    .sort((a, b) => b.start - a.start);
  let out = text;
  let floor = Infinity;
  for (const fix of fixes) {
    if (fix.end > floor) continue;
    for (const e of fix.edits) out = out.slice(0, e.start) + e.content + out.slice(e.end);
    floor = fix.start;
  }
  return out;
}

/** A per-file-ignores pattern as a RegExp over trainer-relative paths (`*` within a folder, `**` across folders). */
function globRegExp(glob) {
  const pieces = { '**/': '(?:.*/)?', '**': '.*', '*': '[^/]*' };
  const body = glob.split(/(\*\*\/|\*\*|\*)/).map((part) => pieces[part] ?? part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${body.join('')}$`);
}

/**
 * ruff's WebAssembly Workspace checks a text, not a file, so it cannot apply per-file-ignores itself:
 * each file gets a workspace whose `ignore` adds the codes of the patterns its path matches.
 */
function workspaceFor(settings) {
  const { 'per-file-ignores': perFile = {}, ...lint } = settings.lint ?? {};
  const patterns = Object.entries(perFile).map(([glob, codes]) => ({ re: globRegExp(glob), codes }));
  const cache = new Map();
  return (relative) => {
    const extra = patterns.filter((p) => p.re.test(relative)).flatMap((p) => p.codes);
    const key = extra.join(',');
    if (!cache.has(key)) cache.set(key, new Workspace({ ...settings, lint: { ...lint, ignore: [...(lint.ignore ?? []), ...extra] } }, PositionEncoding.Utf16));
    return cache.get(key);
  };
}

function ruff(dir, settings) {
  const workspaces = workspaceFor(settings);
  let findings = 0;
  for (const file of pythonFiles(dir)) {
    const workspace = workspaces(path.relative(dir, file).split(path.sep).join('/'));
    let text = readFileSync(file, 'utf8');
    let diagnostics = workspace.check(text);
    if (fix) {
      for (let round = 0; round < 10 && diagnostics.some((d) => d.fix); round++) {
        const fixed = applyFixes(text, diagnostics);
        if (fixed === text) break;
        text = fixed;
        diagnostics = workspace.check(text);
      }
      if (text !== readFileSync(file, 'utf8')) writeFileSync(file, text);
    }
    diagnostics.sort((a, b) => a.start_location.row - b.start_location.row || a.start_location.column - b.start_location.column);
    for (const d of diagnostics) {
      console.log(`${path.relative(root, file)}:${d.start_location.row}:${d.start_location.column} ${d.code ?? 'syntax'} ${d.message}`);
      findings++;
    }
  }
  console.log(`ruff ${Workspace.version()} on ${path.relative(root, dir)}: ${findings === 0 ? 'no findings' : `${findings} finding(s)`}`);
  return findings === 0;
}

function pyright() {
  const python = trainerVenvPython();
  const probe = spawnSync(python, ['-c', 'import torch, yaml, jsonschema'], { encoding: 'utf8' });
  if (probe.status !== 0) {
    const why = `pyright checks python-trainer against the trainer venv ${python} (bash scripts/setupTrainerVenv.sh): ${(probe.stderr || probe.error?.message || '').trim().split('\n').pop()}`;
    if (process.env.CI) {
      console.error(`FAIL: ${why}`);
      return false;
    }
    console.log(`SKIP: ${why}`);
    return true;
  }
  const cli = path.join(path.dirname(require.resolve('pyright/package.json')), 'index.js');
  const r = spawnSync(process.execPath, [cli, '--project', path.join(trainer, 'pyproject.toml'), '--pythonpath', python], { stdio: 'inherit', cwd: trainer });
  return r.status === 0;
}

/** pyright on python-agent with the agents' venv's python (it has the optional OpenTelemetry SDK and httpx the helper imports). */
function agentPyright() {
  const python = agentVenvPython();
  if (!existsSync(python)) {
    const why = `pyright checks python-agent against the agents' venv (${python}): run bash scripts/setupAgentVenv.sh`;
    if (process.env.CI) {
      console.error(`FAIL: ${why}`);
      return false;
    }
    console.log(`SKIP: ${why}`);
    return true;
  }
  const agent = path.join(root, 'python-agent');
  const cli = path.join(path.dirname(require.resolve('pyright/package.json')), 'index.js');
  return spawnSync(process.execPath, [cli, '--project', path.join(agent, 'pyproject.toml'), '--pythonpath', python], { stdio: 'inherit', cwd: agent }).status === 0;
}

// python-agent (the helper for agent authors) is linted by ruff with its own settings too.
const ruffSettings = (dir) => parseToml(readFileSync(path.join(dir, 'pyproject.toml'), 'utf8')).tool?.ruff ?? {};
const ruffOk = [trainer, path.join(root, 'python-agent')].map((dir) => ruff(dir, ruffSettings(dir))).every(Boolean);
const pyrightOk = pyright();
const agentPyrightOk = agentPyright();
process.exit(ruffOk && pyrightOk && agentPyrightOk ? 0 : 1);
