import * as vscode from 'vscode';
import { randomBytes } from 'node:crypto';
import { Disposable } from '../disposable';
import {
  CommandArgs,
  EVENT_NOTIFICATIONS,
  RequestParams,
  WebviewMessage,
  isCommandName,
  isRequestMethod,
  type CommandArgsOf,
  type CommandName,
  type HostMessage,
  type NotificationType,
  type Notifications,
  type PanelKind,
  type RequestMethod,
  type RequestParamsOf,
  type RequestResults,
} from '../../shared/protocol';
import { PANEL_CATALOGUE, panelAnswers, panelRuns } from '../../shared/panelCatalogue';
import { errorMessage } from '../../core/errors';

/** A message the catalogue does not allow: unknown name or parameters that fail their schema. */
export class RejectedMessage extends Error {}

export type RequestHandlers = { [M in RequestMethod]?: (params: RequestParamsOf<M>) => Promise<RequestResults[M]> | RequestResults[M] };
export type CommandHandlers = { [C in CommandName]?: (args: CommandArgsOf<C>) => void | Promise<void> };

const TITLES: Record<PanelKind, string> = {
  traceExplorer: 'Trace Explorer',
  graphView: 'Graph View',
  rewardCurve: 'Reward Curve',
  rewardWeights: 'Reward Weights',
  evalReport: 'Evaluation Report',
  comparison: 'Comparison',
  traceDiff: 'Trace Diff',
  rolloutsTable: 'Rollouts Table',
  trainingCurves: 'Training Curves',
};

/** Panels with a stylesheet of their own (media/<panel>.css) beside the shared one. */
const PANEL_STYLES: ReadonlySet<PanelKind> = new Set(['rewardWeights', 'evalReport', 'comparison', 'traceDiff', 'rolloutsTable', 'trainingCurves']);

/**
 * One panel's handlers, taken from those of every panel: only the requests
 * and commands its catalogue entry lists (src/shared/panelCatalogue.ts).
 */
export function panelHandlers(kind: PanelKind, requests: RequestHandlers, commands: CommandHandlers): { requests: RequestHandlers; commands: CommandHandlers } {
  const pick = <T extends object>(all: T, names: readonly string[]): T => Object.fromEntries(names.flatMap((n) => (Object.prototype.hasOwnProperty.call(all, n) ? [[n, all[n as keyof T]]] : []))) as T;
  return { requests: pick(requests, PANEL_CATALOGUE[kind].requests), commands: pick(commands, PANEL_CATALOGUE[kind].commands) };
}

/**
 * The page of a panel: a strict CSP with a per-load nonce, no inline script,
 * nothing remote; scripts and styles only from the extension's dist and media.
 */
export function panelHtml(webview: vscode.Webview, extensionUri: vscode.Uri, panel: PanelKind): string {
  return webviewPageHtml(webview, extensionUri, { bundle: panel, title: TITLES[panel], stylesheet: PANEL_STYLES.has(panel) ? panel : undefined });
}

/** What a webview page loads: its script bundle (dist/webview/<bundle>.js) and, optionally, media/<stylesheet>.css. */
interface WebviewPage {
  bundle: string;
  title: string;
  stylesheet?: string;
}

/** The page every Rollout Lab webview uses, with the CSP above. */
function webviewPageHtml(webview: vscode.Webview, extensionUri: vscode.Uri, page: WebviewPage): string {
  const nonce = randomBytes(16).toString('base64');
  const asset = (...p: string[]): string => webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, ...p)).toString();
  const csp = [
    "default-src 'none'",
    `img-src ${webview.cspSource} data: blob:`,
    `style-src ${webview.cspSource}`,
    `font-src ${webview.cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${asset('dist', 'webview', 'codicon.css')}" id="vscode-codicon-stylesheet">
<link rel="stylesheet" href="${asset('media', 'webview.css')}">${page.stylesheet ? `\n<link rel="stylesheet" href="${asset('media', `${page.stylesheet}.css`)}">` : ''}
<title>${page.title}</title>
</head>
<body data-panel="${page.bundle}">
<div id="app" role="application" aria-label="${page.title}"></div>
<script nonce="${nonce}" src="${asset('dist', 'webview', `${page.bundle}.js`)}"></script>
</body>
</html>`;
}

export function panelOptions(extensionUri: vscode.Uri): vscode.WebviewPanelOptions & vscode.WebviewOptions {
  return {
    enableScripts: true,
    retainContextWhenHidden: false,
    localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist'), vscode.Uri.joinPath(extensionUri, 'media')],
  };
}

/** A panel's tab icon: images, not codicons, one drawn for each theme kind. */
export function panelIcon(extensionUri: vscode.Uri): { light: vscode.Uri; dark: vscode.Uri } {
  return {
    light: vscode.Uri.joinPath(extensionUri, 'media', 'rollout-lab-light.svg'),
    dark: vscode.Uri.joinPath(extensionUri, 'media', 'rollout-lab-dark.svg'),
  };
}

export function panelTitle(panel: PanelKind): string {
  return `Rollout Lab: ${TITLES[panel]}`;
}

let intentCounter = 0;
/** An id no earlier intent had, in this window or before a reload (the webview keeps the last one it acted on). */
function newIntentId(): string {
  return `${Date.now().toString(36)}.${(intentCounter++).toString(36)}.${randomBytes(3).toString('hex')}`;
}

/**
 * The host side of one panel: checks every message against the catalogue
 * and the panel's part of it, answers requests, runs commands, and holds
 * notifications until the webview has said it is ready.
 *
 * A panel that is not kept alive while hidden is discarded and loads again
 * when shown; what was posted meanwhile is lost. So the host keeps the latest
 * intent of each type (any notification but an event, see EVENT_NOTIFICATIONS)
 * and sends it again on every `ready`. Each intent carries an id; the webview
 * records the ids it acted on in its saved state, restores that state first
 * and then acts on a replayed intent only if it is one it has not seen: the
 * last request wins, and a replay never undoes what the user did afterwards.
 */
export class PanelHost extends Disposable {
  private readonly queue: HostMessage[] = [];
  /** The latest intent of each type, in the order they were made. */
  private readonly intents = new Map<NotificationType, HostMessage>();
  /** How many times the webview said ready (more than once: it was discarded and loaded again; none: notifications wait). */
  loads = 0;
  private readonly loaded = this.register(new vscode.EventEmitter<number>());
  /** Fires after each `ready` with the number of loads so far (past 1: the page loaded again and lost what it was sent). */
  readonly onDidLoad = this.loaded.event;
  readonly onReady: Promise<void>;
  private markReady!: () => void;

  private webviewPanel: vscode.WebviewPanel | undefined;

  /**
   * A host starts with no panel and is given one by attach, at once or later:
   * a panel VS Code restored after a window reload but has not brought back
   * yet. Intents given meanwhile go to the webview once it is there.
   * `requests` and `commands` are this panel's (see panelHandlers).
   */
  constructor(
    readonly kind: PanelKind,
    private readonly extensionUri: vscode.Uri,
    private readonly requests: RequestHandlers,
    private readonly commands: CommandHandlers,
    private readonly log: (line: string) => void,
  ) {
    super();
    this.onReady = new Promise((r) => (this.markReady = r));
  }

  /** The panel, once there is one. */
  get panel(): vscode.WebviewPanel | undefined {
    return this.webviewPanel;
  }

  /** Gives a waiting host its panel (a host has one panel, for good). */
  attach(panel: vscode.WebviewPanel): void {
    if (this.webviewPanel) throw new Error(`the ${this.kind} host has a panel already`);
    this.webviewPanel = panel;
    panel.webview.options = panelOptions(this.extensionUri);
    panel.webview.html = panelHtml(panel.webview, this.extensionUri, this.kind);
    this.register(panel.webview.onDidReceiveMessage((m: unknown) => void this.receive(m)));
  }

  private post(m: HostMessage): void {
    void this.webviewPanel?.webview.postMessage(m);
  }

  /** The latest notifications sent or queued (at most 100), so extension tests can see what a panel was told. */
  readonly notified: Array<{ type: NotificationType; params: Notifications[NotificationType] }> = [];

  notify<N extends NotificationType>(type: N, params: Notifications[N]): void {
    const msg: HostMessage = { kind: 'notification', type, params };
    this.notified.push({ type, params });
    if (this.notified.length > 100) this.notified.shift();
    if (!EVENT_NOTIFICATIONS.has(type)) {
      msg.intent = newIntentId();
      this.intents.delete(type);
      this.intents.set(type, msg);
      // Sent now if the webview listens; sent (again) on its next ready in any case.
      if (this.isReady) this.post(msg);
      return;
    }
    if (this.isReady) this.post(msg);
    else this.queue.push(msg);
  }

  /** The latest requests the webview made (at most 100), so extension tests can see what a panel asked for. */
  readonly requested: Array<{ method: string; params: unknown }> = [];

  private async receive(raw: unknown): Promise<void> {
    const parsed = WebviewMessage.safeParse(raw);
    if (!parsed.success) {
      this.log(`${this.kind}: ignored a malformed webview message: ${parsed.error.issues[0]?.message ?? ''}`);
      return;
    }
    const msg = parsed.data;
    if (msg.kind === 'ready') {
      if (msg.panel !== this.kind) {
        this.log(`${this.kind}: ignored ready from a ${msg.panel} page`);
        return;
      }
      // A webview that loads again (it was hidden and discarded) fetches everything afresh: the events it missed do not matter, the intents do.
      this.loads++;
      for (const m of this.queue.splice(0)) this.post(m);
      for (const m of this.intents.values()) this.post(m);
      this.post({ kind: 'replayed' });
      this.markReady();
      this.loaded.fire(this.loads);
      return;
    }
    if (msg.kind === 'command') {
      try {
        await this.runCommand(msg.command, msg.args);
      } catch (err) {
        if (err instanceof RejectedMessage) this.log(`${this.kind}: ${err.message}`);
        else void vscode.window.showErrorMessage(`Rollout Lab: ${errorMessage(err)}`);
      }
      return;
    }
    const reply = (m: HostMessage): void => this.post(m);
    this.requested.push({ method: msg.method, params: msg.params });
    if (this.requested.length > 100) this.requested.shift();
    try {
      reply({ kind: 'response', id: msg.id, ok: true, result: await this.handle(msg.method, msg.params) });
    } catch (err) {
      reply({ kind: 'response', id: msg.id, ok: false, error: errorMessage(err) });
    }
  }

  /**
   * Answers a request exactly as for a webview message (the same checks, the
   * same handler) and returns its result; extension tests call it to go
   * through the catalogue without a DOM. Throws what the webview would get as
   * an error response.
   */
  async handle(method: string, params: unknown): Promise<unknown> {
    if (!isRequestMethod(method)) throw new RejectedMessage(`unknown method ${method}`);
    if (!panelAnswers(this.kind, method)) throw new RejectedMessage(`the ${this.kind} panel may not request ${method}: it is not in its catalogue`);
    const parsed = RequestParams[method].safeParse(params);
    if (!parsed.success) throw new RejectedMessage(`bad parameters for ${method}: ${parsed.error.issues[0]?.message ?? ''}`);
    const handler = this.requests[method] as ((p: unknown) => unknown) | undefined;
    if (!handler) throw new RejectedMessage(`${this.kind} does not answer ${method}`);
    return await handler(parsed.data);
  }

  /** Runs a webview command as for a webview message; rejects one that is unknown or malformed. */
  async runCommand(command: string, args: unknown): Promise<void> {
    if (!isCommandName(command)) throw new RejectedMessage(`unknown command ${command}`);
    if (!panelRuns(this.kind, command)) throw new RejectedMessage(`the ${this.kind} panel may not send ${command}: it is not in its catalogue`);
    const parsed = CommandArgs[command].safeParse(args);
    const handler = this.commands[command] as ((a: unknown) => void | Promise<void>) | undefined;
    if (!parsed.success || !handler) throw new RejectedMessage(`rejected command ${command}`);
    await handler(parsed.data);
  }

  /** Whether the webview has said it is ready (notifications are queued until then). */
  get isReady(): boolean {
    return this.loads > 0;
  }
}
