// Shared by the fake cluster tools of test/fakes/workers: state files written whole (a reader never sees half of
// one), the call record, and the mapping of paths inside a pod or node to local folders.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export { record, readStdin } from '../launchers/fakeRecord.mjs';

export function readJson(file, fallback = null) {
  if (!existsSync(file)) return fallback;
  return JSON.parse(readFileSync(file, 'utf8'));
}

export function writeJson(file, value) {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(value, null, 1));
  renameSync(tmp, file);
}

/** A path inside the pod or node, as the local folder its mount stands for (mounts: [{ at, dir }]). */
export function localPath(p, mounts) {
  for (const m of mounts) {
    if (p === m.at) return m.dir;
    if (p.startsWith(`${m.at}/`)) return path.join(m.dir, p.slice(m.at.length + 1));
  }
  return p;
}

/** Every mount path in a shell script or an argument, replaced by its local folder (a mount seen from this machine). */
export function localText(text, mounts) {
  let out = text;
  for (const m of mounts) out = out.replace(new RegExp(`${m.at.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?=$|[/\\s'"])`, 'gm'), m.dir);
  return out;
}

/** What a container or node process starts with: a bare environment (no variable of the test's leaks in) plus its own. */
export function baseEnv(extra) {
  return { PATH: process.env.PATH, HOME: process.env.FAKE_STATE, ...extra };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Whether a process still runs (a zombie nobody reaped, as under a container's init that reaps none, does not). */
export const isAlive = (pid) => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
};
