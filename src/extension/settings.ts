import type * as vscode from 'vscode';

/**
 * The `rolloutLab.*` settings of package.json's contributes.configuration:
 * each with its default and bounds there (a unit test keeps the two in step),
 * and whether a change applies at once or after a window reload.
 */
export const SETTINGS = {
  /** Rollouts shown per run in the Rollouts view before a "Load more…" item; the view redraws on a change. */
  rolloutsPerPage: { default: 50, minimum: 1, maximum: 10000, integer: true, live: true },
  /** Port of the OTLP receiver started with the lab (0: off); a change restarts it. */
  otlpReceiverPort: { default: 0, minimum: 0, maximum: 65535, integer: true, live: true },
  /** Seconds between looks for rollouts other processes wrote, besides the file watcher (0: the watcher alone); read at activation. */
  refreshIntervalSeconds: { default: 2, minimum: 0, maximum: Infinity, integer: false, live: false },
} as const;

export type SettingKey = keyof typeof SETTINGS;
export type SettingValues = { [K in SettingKey]: number };

const SECTION = 'rolloutLab';
const KEYS = Object.keys(SETTINGS) as SettingKey[];

/** The part of `vscode.workspace` the settings read (tests pass their own). */
export type SettingsSource = Pick<typeof vscode.workspace, 'getConfiguration' | 'onDidChangeConfiguration'>;

/**
 * Typed reads of the settings, always current (VS Code caches the
 * configuration, so a read is cheap), and an event naming the settings that
 * changed, so a feature redraws only for its own.
 */
export class Settings {
  constructor(private readonly workspace: SettingsSource) {}

  get<K extends SettingKey>(key: K): SettingValues[K] {
    const spec = SETTINGS[key];
    const raw = this.workspace.getConfiguration(SECTION).get<unknown>(key);
    // A hand-edited settings.json may hold anything: out-of-range numbers are clamped, anything else reads as the default.
    if (typeof raw !== 'number' || Number.isNaN(raw)) return spec.default;
    const n = spec.integer ? Math.floor(raw) : raw;
    return Math.min(spec.maximum, Math.max(spec.minimum, n));
  }

  /** Fires with the keys (at least one) of the settings a configuration change touched. */
  readonly onDidChange: vscode.Event<SettingKey[]> = (listener, thisArgs, disposables) =>
    this.workspace.onDidChangeConfiguration(
      (e) => {
        const keys = KEYS.filter((k) => e.affectsConfiguration(`${SECTION}.${k}`));
        if (keys.length > 0) listener.call(thisArgs, keys);
      },
      undefined,
      disposables,
    );
}
