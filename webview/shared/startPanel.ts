import type { PanelKind } from '../../src/shared/protocol';
import { HostClient } from './hostClient';

/** A panel's app, as startPanel drives it. */
export interface PanelApp {
  /** Registers the app's notification handlers: called before the host is told the page is ready. */
  listen(): void;
  /**
   * Loads what the panel shows. `replayed` resolves once the host has sent
   * its latest intents for this load: an app that restores a saved view
   * waits for it, so an older view never shows before the one asked for.
   */
  start?(replayed: Promise<void>): void | Promise<void>;
}

/** Starts a panel's app in #app: its client, its notification handlers, `ready`, then its first load. */
export function startPanel<K extends PanelKind>(kind: K, App: new (root: HTMLElement, client: HostClient<K>) => PanelApp): void {
  const client = new HostClient(kind);
  const app = new App(document.getElementById('app') ?? document.body, client);
  app.listen();
  const replayed = client.ready();
  void app.start?.(replayed);
}
