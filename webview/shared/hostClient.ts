import type { PanelCommand, PanelRequest } from '../../src/shared/panelCatalogue';
import { parsePanelState, type PanelState } from '../../src/shared/panelState';
import type { CommandArgsOf, HostMessage, NotificationType, Notifications, PanelKind, RequestParamsOf, RequestResults } from '../../src/shared/protocol';

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

/**
 * The webview side of the message catalogue, for one panel kind: typed
 * requests with ids and promises and commands (only those of the panel's
 * catalogue entry), notifications, and the panel's typed state that survives
 * a reload. `ready` is sent only once listeners are in place, so the host
 * never posts into the void; it is sent again by each load of the page, and
 * the host then repeats its latest intents (with ids; see receive) and says
 * `replayed`. A panel restores its saved view after that, unless an intent
 * asked for another one (see ready).
 */
export class HostClient<K extends PanelKind> {
  private readonly vscode = acquireVsCodeApi();
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private readonly listeners = new Map<NotificationType, Array<(p: never) => void>>();

  constructor(readonly panel: K) {
    window.addEventListener('message', (event: MessageEvent<HostMessage>) => this.receive(event.data));
  }

  private replayed: (() => void) | null = null;

  /**
   * Call after registering notification handlers. Resolves once the host has
   * sent what it holds for this load (queued notifications, its latest
   * intents): a panel that restores its saved view then, only when no intent
   * already asked for something else, never shows the old view first.
   */
  ready(): Promise<void> {
    const done = new Promise<void>((r) => (this.replayed = r));
    this.vscode.postMessage({ kind: 'ready', panel: this.panel });
    return done;
  }

  request<M extends PanelRequest<K>>(method: M, params: RequestParamsOf<M>): Promise<RequestResults[M]> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.vscode.postMessage({ kind: 'request', id, method, params });
    });
  }

  command<C extends PanelCommand<K>>(command: C, args: CommandArgsOf<C>): void {
    this.vscode.postMessage({ kind: 'command', command, args });
  }

  on<N extends NotificationType>(type: N, handler: (params: Notifications[N]) => void): void {
    const list = this.listeners.get(type) ?? [];
    list.push(handler as (p: never) => void);
    this.listeners.set(type, list);
  }

  /** The panel's saved state, checked (see panelState.ts): what does not fit is left out. */
  getState(): PanelState<K> {
    return parsePanelState(this.panel, this.vscode.getState());
  }

  setState(patch: Partial<PanelState<K>>): void {
    this.vscode.setState({ ...this.getState(), ...patch });
  }

  private receive(msg: HostMessage): void {
    if (!msg || typeof msg !== 'object') return;
    if (msg.kind === 'response') {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.ok) p.resolve(msg.result);
      else p.reject(new Error(msg.error));
    } else if (msg.kind === 'replayed') {
      this.replayed?.();
      this.replayed = null;
    } else if (msg.kind === 'notification') {
      if (msg.intent) {
        // An intent is sent again each time the panel loads: act on each one once, even across reloads.
        const st = this.getState();
        if (st.intents?.[msg.type] === msg.intent) return;
        this.setState({ intents: { ...st.intents, [msg.type]: msg.intent } } as Partial<PanelState<K>>);
      }
      for (const h of this.listeners.get(msg.type) ?? []) (h as (p: unknown) => void)(msg.params);
    }
  }
}
