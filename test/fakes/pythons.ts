import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** A fake python's version when a test does not say. */
export const FAKE_PYTHON_VERSION = '3.11.7';

/**
 * A folder for PATH with fake pythons that answer the local launcher's probe
 * (src/core/train/jobs/launchers/localPython.ts) as a real one does: its own
 * path, its version, then torch's version, or "!" and the import error of a
 * python without torch (null).
 */
export function fakePythons(dir: string, pythons: Record<string, { torch: string; version?: string } | null>): string {
  mkdirSync(dir, { recursive: true });
  for (const [exe, has] of Object.entries(pythons)) {
    const file = path.join(dir, exe);
    const torch = has ? has.torch : "!ModuleNotFoundError: No module named 'torch'";
    writeFileSync(file, `#!/bin/sh\nprintf '%s\\n%s\\n%s\\n' "${file}" "${has?.version ?? FAKE_PYTHON_VERSION}" "${torch}"\n`);
    chmodSync(file, 0o755);
  }
  return dir;
}
