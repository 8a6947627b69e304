// Runs python-trainer's tests (pytest) with Debian's python3, which has torch (python3-torch), PyYAML,
// jsonschema and pytest from apt (.ci/run installs them). Outside CI, a machine without them skips with
// the reason; in CI a missing package fails. The transformers/peft tests skip themselves where those
// libraries are not installed (they are not, here) and say so. First it lints the package (ruff and
// pyright, scripts/lintPython.mjs); a finding fails the run after the tests have run too.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const lint = spawnSync(process.execPath, [fileURLToPath(new URL('../../scripts/lintPython.mjs', import.meta.url))], { stdio: 'inherit' });
const linted = lint.status === 0;

const python = process.env.ROLLOUT_LAB_PYTHON ?? (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');
const probe = spawnSync(python, ['-c', 'import torch, yaml, jsonschema, pytest'], { encoding: 'utf8' });
if (probe.status !== 0) {
  const why = `python-trainer tests need ${python} with torch, yaml, jsonschema and pytest (apt-get install python3-torch python3-yaml python3-jsonschema python3-pytest): ${(probe.stderr || probe.error?.message || '').trim().split('\n').pop()}`;
  if (process.env.CI) {
    console.error(`FAIL: ${why}`);
    process.exit(1);
  }
  console.log(`SKIP: ${why}`);
  process.exit(linted ? 0 : 1);
}
const r = spawnSync(python, ['-m', 'pytest', '-q', '-rs', '-p', 'no:cacheprovider', 'python-trainer/tests'], {
  stdio: 'inherit',
  env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1' },
});
process.exit(linted ? (r.status ?? 1) : 1);
