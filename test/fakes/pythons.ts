import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * A folder for PATH with fake pythons: those given a torch version answer the
 * launcher's probe like a python that imports torch; the others fail like one
 * without it.
 */
export function fakePythons(dir: string, pythons: Record<string, { torch: string } | null>): string {
  mkdirSync(dir, { recursive: true });
  for (const [exe, has] of Object.entries(pythons)) {
    const file = path.join(dir, exe);
    const body = has
      ? `printf '%s\\n%s\\n' "${file}" "${has.torch}"`
      : `echo "Traceback (most recent call last):" >&2; echo "ModuleNotFoundError: No module named 'torch'" >&2; exit 1`;
    writeFileSync(file, `#!/bin/sh\n${body}\n`);
    chmodSync(file, 0o755);
  }
  return dir;
}
