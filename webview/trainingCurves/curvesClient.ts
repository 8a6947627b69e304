import type { CURVES_PANEL, CurvesHostMessage, CurvesNotifications, CurvesNotificationType, CurvesState } from '../../src/shared/trainingCurvesProtocol';

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const PANEL: typeof CURVES_PANEL = 'trainingCurves';

/**
 * The webview side of the Training Curves messages: notifications from the
 * host, one command back, and the state (which job) that a window reload
 * hands to the panel serializer. `ready` goes out once listeners are in place.
 */
export class CurvesClient {
  private readonly vscode = acquireVsCodeApi();
  private readonly listeners = new Map<CurvesNotificationType, Array<(p: never) => void>>();

  constructor() {
    window.addEventListener('message', (event: MessageEvent<CurvesHostMessage>) => this.receive(event.data));
  }

  ready(): void {
    this.vscode.postMessage({ kind: 'ready', panel: PANEL });
  }

  on<N extends CurvesNotificationType>(type: N, handler: (params: CurvesNotifications[N]) => void): void {
    const list = this.listeners.get(type) ?? [];
    list.push(handler as (p: never) => void);
    this.listeners.set(type, list);
  }

  showLog(): void {
    this.vscode.postMessage({ kind: 'command', command: 'job/showLog', args: {} });
  }

  getState(): Partial<CurvesState> {
    return (this.vscode.getState() as Partial<CurvesState> | undefined) ?? {};
  }

  setState(state: CurvesState): void {
    this.vscode.setState(state);
  }

  private receive(msg: CurvesHostMessage): void {
    if (!msg || typeof msg !== 'object' || msg.kind !== 'notification') return;
    for (const h of this.listeners.get(msg.type) ?? []) (h as (p: unknown) => void)(msg.params);
  }
}
