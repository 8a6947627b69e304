import { test, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { checkLocalPython, findLocalPython, forgetPythonProbes, PYTHON_CANDIDATES, withLocalPython } from '../../../../src/core/train/jobs/launchers/localPython';
import { UsageError } from '../../../../src/core/errors';
import { FAKE_PYTHON_VERSION, fakePythons as writePythons } from '../../../fakes/pythons';
import { tempDir } from './helpers';

const root = tempDir('local-python');
after(() => rmSync(root, { recursive: true, force: true }));
beforeEach(() => forgetPythonProbes());

/** Fake pythons in a folder of this test's own. */
const fakePythons = (name: string, pythons: Record<string, { torch: string; version?: string } | null>): string => writePythons(path.join(root, name), pythons);

const envWith = (dir: string): NodeJS.ProcessEnv => ({ ...process.env, PATH: `${dir}:/bin` });

test('local python: the first candidate that imports torch runs the job, and the note says which and how to choose another', async () => {
  const dir = fakePythons('picks', { python3: null, python: { torch: '2.1.0' } });
  const found = await findLocalPython('local', undefined, envWith(dir), ['python3', 'python']);
  assert.equal(found.python, 'python');
  assert.equal(found.note, `python: ${path.join(dir, 'python')} (torch 2.1.0); set training.targets.local.python in .rollout-lab/lab.json to choose another`);
});

test('local python: training.targets.<name>.python wins over the candidates; set to one without torch, it is an error naming the key', async () => {
  const dir = fakePythons('set', { python3: { torch: '2.0.0' }, mine: { torch: '1.13.0' }, broken: null });
  const found = await findLocalPython('cpu', path.join(dir, 'mine'), envWith(dir), ['python3']);
  assert.equal(found.python, path.join(dir, 'mine'));
  assert.match(found.note, /\(torch 1\.13\.0\), from training\.targets\.cpu\.python in \.rollout-lab\/lab\.json$/);
  await assert.rejects(findLocalPython('cpu', path.join(dir, 'broken'), envWith(dir), ['python3']), (err: Error) => {
    assert.ok(err instanceof UsageError);
    assert.match(err.message, /training\.targets\.cpu\.python is .*broken, which cannot import torch \(ModuleNotFoundError: No module named 'torch'\)/);
    return true;
  });
});

test('local python: none with torch is an error listing each python tried and why, and both fixes', async () => {
  const dir = fakePythons('none', { python3: null });
  await assert.rejects(findLocalPython('local', undefined, envWith(dir), ['python3', 'python']), (err: Error) => {
    assert.ok(err instanceof UsageError);
    assert.match(err.message, /tried python3: ModuleNotFoundError: No module named 'torch'; python: not found\./);
    assert.match(err.message, /Install python-trainer's stack \(bash scripts\/setupTrainerVenv\.sh in a clone of Rollout Lab makes \.venv-trainer, which the local target uses first; or python3 -m pip install -r python-trainer\/requirements\.txt\), or set training\.targets\.local\.python in \.rollout-lab\/lab\.json/);
    return true;
  });
});

test('local python checked without torch: the python a job would run, its version, and that only Dry Run works here', async () => {
  const dir = fakePythons('check', { python3: null, python: null });
  const c = await checkLocalPython('local', undefined, envWith(dir), ['python3', 'nowhere-python', 'python']);
  assert.equal(c.python, 'python3', 'the first python that runs, though it has no torch');
  assert.equal(c.exe, path.join(dir, 'python3'));
  assert.equal(c.version, FAKE_PYTHON_VERSION);
  assert.equal(c.torch, null);
  assert.equal(c.summary, `python3 ${FAKE_PYTHON_VERSION} without torch: only Dry Run works here; install python-trainer's stack (python3 -m pip install -r python-trainer/requirements.txt; or bash scripts/setupTrainerVenv.sh in a clone of Rollout Lab makes .venv-trainer, which the local target uses first) or pick a remote target`);
  assert.deepEqual(c.tried, ["python3: ModuleNotFoundError: No module named 'torch'", 'nowhere-python: not found', "python: ModuleNotFoundError: No module named 'torch'"]);

  const torch = await checkLocalPython('local', undefined, envWith(fakePythons('check-torch', { python3: null, python: { torch: '2.4.1', version: '3.12.1' } })), ['python3', 'python']);
  assert.equal(torch.python, 'python');
  assert.equal(torch.summary, 'python 3.12.1 with torch 2.4.1');

  // (/bin on PATH holds the system python3: these names are nowhere.)
  const none = await checkLocalPython('local', undefined, envWith(fakePythons('check-none', {})), ['no-python3', 'no-python']);
  assert.equal(none.python, null);
  assert.equal(none.summary, 'no python found (tried no-python3, no-python): only Dry Run works here; install Python 3 with torch or pick a remote target');

  const configured = await checkLocalPython('cpu', path.join(dir, 'python'), envWith(dir), ['python3']);
  assert.equal(configured.configured, true);
  assert.equal(configured.summary, `${path.join(dir, 'python')} ${FAKE_PYTHON_VERSION} (training.targets.cpu.python) without torch: only Dry Run works here; install python-trainer's stack (${path.join(dir, 'python')} -m pip install -r python-trainer/requirements.txt; or bash scripts/setupTrainerVenv.sh in a clone of Rollout Lab makes .venv-trainer, which the local target uses first) or pick a remote target`);
});

test('local python for a dry run: a target without torch is taken as it is, with the check; a launch still refuses it', async () => {
  const dir = fakePythons('dry', { mine: null });
  const target = { name: 'cpu', target: { kind: 'local' as const, python: path.join(dir, 'mine'), gpus: 0 } };
  const lines: string[] = [];
  const dry = await withLocalPython(target, (l) => lines.push(l), { requireTorch: false });
  assert.equal(dry.target.kind === 'local' && dry.target.python, path.join(dir, 'mine'));
  assert.equal(dry.python?.torch, null);
  assert.match(lines.join('\n'), /^python: .*mine 3\.11\.7 \(training\.targets\.cpu\.python\) without torch: only Dry Run works here/);
  await assert.rejects(withLocalPython(target, () => undefined), /training\.targets\.cpu\.python is .*mine, which cannot import torch \(ModuleNotFoundError: No module named 'torch'\)/);
});

test('local python: the probe reads a real interpreter (the python3 on PATH), torch or not', async () => {
  const real = spawnSync('python3', ['-c', 'import sys; print(".".join(map(str, sys.version_info[:3])))'], { encoding: 'utf8' });
  assert.equal(real.status, 0, 'python3 runs on this machine');
  const c = await checkLocalPython('local', undefined, process.env, ['python3']);
  assert.equal(c.python, 'python3');
  assert.equal(c.version, real.stdout.trim());
  const hasTorch = spawnSync('python3', ['-c', 'import torch'], { stdio: 'ignore' }).status === 0;
  assert.equal(c.torch !== null, hasTorch);
  assert.match(c.summary, hasTorch ? /^python3 \S+ with torch \S+$/ : /^python3 \S+ without torch: only Dry Run works here/);
});

test('local python: on this machine the default candidates find a python that really imports torch', async (t) => {
  const anyTorch = PYTHON_CANDIDATES.some((p) => spawnSync(p, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0);
  if (!anyTorch) return t.skip('no python with torch on this machine');
  const found = await findLocalPython('local', undefined);
  assert.equal(spawnSync(found.python, ['-c', 'import torch'], { stdio: 'ignore' }).status, 0, `${found.python} imports torch`);
});
