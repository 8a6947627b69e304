import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatasetError } from '../../../src/core/errors';

/** Writes dataset files into a temporary folder removed after the test; returns each file's path. */
export function fixtures(t: { after: (fn: () => void) => void }): (name: string, text: string) => string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rl-data-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return (name, text) => {
    const file = path.join(dir, name);
    writeFileSync(file, text);
    return file;
  };
}

/** The one-line DatasetError a load rejects with. */
export async function datasetError(p: Promise<unknown>): Promise<DatasetError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof DatasetError, `expected a DatasetError, got ${String(err)}`);
    assert.ok(!err.message.includes('\n'), 'one line');
    return err;
  }
  assert.fail('expected loadDataset to reject');
}
