import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import type * as vscode from 'vscode';
import { SETTINGS, Settings, type SettingKey, type SettingsSource } from '../../../src/extension/settings';

interface Contributed {
  type: string;
  default: number;
  minimum?: number;
  maximum?: number;
}

const pkg = JSON.parse(readFileSync(path.resolve(__dirname, '../../../package.json'), 'utf8')) as {
  contributes: { configuration: { properties: Record<string, Contributed> } };
};

/** A workspace whose rolloutLab section holds `values`, with a way to announce changes. */
function fakeWorkspace(values: Record<string, unknown>): { source: SettingsSource; change(keys: string[]): void } {
  const listeners: Array<(e: vscode.ConfigurationChangeEvent) => void> = [];
  const source = {
    getConfiguration: (section?: string) => ({ get: (key: string) => (section === 'rolloutLab' ? values[key] : undefined) }),
    onDidChangeConfiguration: (l: (e: vscode.ConfigurationChangeEvent) => void) => {
      listeners.push(l);
      return { dispose: () => listeners.splice(listeners.indexOf(l), 1) };
    },
  } as unknown as SettingsSource;
  const change = (keys: string[]): void => {
    for (const l of [...listeners]) l({ affectsConfiguration: (s: string) => keys.some((k) => k === s || k.startsWith(`${s}.`)) });
  };
  return { source, change };
}

describe('settings', () => {
  it('covers every rolloutLab setting of package.json, with its default and bounds', () => {
    const contributed = pkg.contributes.configuration.properties;
    assert.deepEqual(Object.keys(SETTINGS).map((k) => `rolloutLab.${k}`).sort(), Object.keys(contributed).sort());
    for (const [key, spec] of Object.entries(SETTINGS)) {
      const c = contributed[`rolloutLab.${key}`]!;
      assert.equal(spec.default, c.default, `${key}: default`);
      assert.equal(spec.minimum, c.minimum ?? -Infinity, `${key}: minimum`);
      assert.equal(spec.maximum, c.maximum ?? Infinity, `${key}: maximum`);
      assert.equal(spec.integer, c.type === 'integer', `${key}: integer`);
    }
  });

  it('reads the default for an unset or malformed value and clamps numbers into range', () => {
    assert.equal(new Settings(fakeWorkspace({}).source).get('rolloutsPerPage'), 50);
    assert.equal(new Settings(fakeWorkspace({ rolloutsPerPage: 'many' }).source).get('rolloutsPerPage'), 50);
    assert.equal(new Settings(fakeWorkspace({ rolloutsPerPage: 0 }).source).get('rolloutsPerPage'), 1);
    assert.equal(new Settings(fakeWorkspace({ rolloutsPerPage: 7.9 }).source).get('rolloutsPerPage'), 7);
    assert.equal(new Settings(fakeWorkspace({ refreshIntervalSeconds: -3 }).source).get('refreshIntervalSeconds'), 0);
    assert.equal(new Settings(fakeWorkspace({ refreshIntervalSeconds: 0.5 }).source).get('refreshIntervalSeconds'), 0.5);
  });

  it('tells listeners which of its settings changed, and nothing for other sections', () => {
    const ws = fakeWorkspace({});
    const seen: SettingKey[][] = [];
    const sub = new Settings(ws.source).onDidChange((keys) => seen.push(keys));
    ws.change(['editor.fontSize']);
    ws.change(['rolloutLab.rolloutsPerPage']);
    ws.change(['rolloutLab.rolloutsPerPage', 'rolloutLab.refreshIntervalSeconds']);
    sub.dispose();
    ws.change(['rolloutLab.rolloutsPerPage']);
    assert.deepEqual(seen, [['rolloutsPerPage'], ['rolloutsPerPage', 'refreshIntervalSeconds']]);
  });
});
