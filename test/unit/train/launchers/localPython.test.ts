import { test, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { findLocalPython, forgetPythonProbes, PYTHON_CANDIDATES } from '../../../../src/core/train/jobs/launchers/localPython';
import { UsageError } from '../../../../src/core/errors';
import { fakePythons as writePythons } from '../../../fakes/pythons';
import { tempDir } from './helpers';

const root = tempDir('local-python');
after(() => rmSync(root, { recursive: true, force: true }));
beforeEach(() => forgetPythonProbes());

/** Fake pythons in a folder of this test's own. */
const fakePythons = (name: string, pythons: Record<string, { torch: string } | null>): string => writePythons(path.join(root, name), pythons);

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
    assert.match(err.message, /Install torch \(python3 -m pip install torch\), or set training\.targets\.local\.python in \.rollout-lab\/lab\.json/);
    return true;
  });
});

test('local python: on this machine the default candidates find a python that really imports torch', async (t) => {
  const anyTorch = PYTHON_CANDIDATES.some((p) => spawnSync(p, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0);
  if (!anyTorch) return t.skip('no python with torch on this machine');
  const found = await findLocalPython('local', undefined);
  assert.equal(spawnSync(found.python, ['-c', 'import torch'], { stdio: 'ignore' }).status, 0, `${found.python} imports torch`);
});
