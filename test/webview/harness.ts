import { createServer, type Server } from 'node:http';
import { readFileSync, existsSync } from 'node:fs';
import { extname, join, normalize, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { HostMessage, NotificationType, Notifications, PanelKind, RequestMethod, RequestResults } from '../../src/shared/protocol';

export const REPO = resolve(__dirname, '../..');
const TYPES: Record<string, string> = { '.js': 'text/javascript', '.css': 'text/css', '.ttf': 'font/ttf', '.map': 'application/json', '.html': 'text/html' };

/** Scripted host: answers requests as the extension would, and records what the webview sent. */
export type ScriptedHandlers = { [M in RequestMethod]?: (params: any) => RequestResults[M] | Promise<RequestResults[M]> };

export interface WebviewHarness {
  page: Page;
  /** Every message the webview posted, in order. */
  sent: Array<{ kind: string; [k: string]: unknown }>;
  notify<N extends NotificationType>(type: N, params: Notifications[N]): Promise<void>;
  /** Says the host has sent what it held for this load (see HarnessOptions.holdReplay). */
  replayed(): Promise<void>;
  /** Errors the page logged or threw (CSP violations included). */
  errors: string[];
  close(): Promise<void>;
}

export interface HarnessOptions {
  theme?: 'dark' | 'light';
  state?: unknown;
  viewport?: { width: number; height: number };
  /**
   * Do not answer `ready` with `replayed` (as PanelHost does once it has sent
   * its latest intents): the test posts what the host would replay, then calls
   * `replayed()`.
   */
  holdReplay?: boolean;
}

/** Theme variables as VS Code sets them on a webview's root (a subset, for both themes). */
export const THEMES: Record<'dark' | 'light', Record<string, string>> = {
  dark: {
    '--vscode-foreground': '#cccccc', '--vscode-editor-background': '#1e1e1e', '--vscode-descriptionForeground': '#9d9d9d',
    '--vscode-errorForeground': '#f48771', '--vscode-focusBorder': '#007fd4', '--vscode-panel-border': '#3c3c3c',
    '--vscode-list-hoverBackground': '#2a2d2e', '--vscode-list-activeSelectionBackground': '#04395e', '--vscode-list-activeSelectionForeground': '#ffffff',
    '--vscode-charts-blue': '#3794ff', '--vscode-charts-orange': '#d18616', '--vscode-charts-purple': '#b180d7', '--vscode-charts-green': '#89d185',
    '--vscode-editor-findMatchHighlightBackground': '#ea5c0055',
    '--vscode-charts-red': '#f14c4c', '--vscode-charts-yellow': '#cca700', '--vscode-charts-foreground': '#cccccc', '--vscode-charts-lines': '#cccccc80',
    '--vscode-input-background': '#3c3c3c', '--vscode-input-foreground': '#cccccc', '--vscode-editorWarning-foreground': '#cca700',
    '--vscode-textLink-foreground': '#3794ff', '--vscode-badge-background': '#4d4d4d', '--vscode-badge-foreground': '#ffffff',
    '--vscode-font-family': 'sans-serif', '--vscode-font-size': '13px', '--vscode-editor-font-family': 'monospace', '--vscode-editor-font-size': '12px',
    '--vscode-sideBar-background': '#252526', '--vscode-editorWidget-background': '#252526', '--vscode-testing-iconPassed': '#73c991',
    // What @vscode-elements' controls read (buttons, inputs, dropdowns, checkboxes, menus), as VS Code's default themes set them.
    '--vscode-button-background': '#0078d4', '--vscode-button-foreground': '#ffffff', '--vscode-button-hoverBackground': '#026ec1',
    '--vscode-button-secondaryBackground': '#313131', '--vscode-button-secondaryForeground': '#cccccc', '--vscode-button-secondaryHoverBackground': '#3c3c3c',
    '--vscode-button-border': '#ffffff12',
    '--vscode-settings-dropdownBackground': '#313131', '--vscode-settings-dropdownBorder': '#3c3c3c', '--vscode-settings-dropdownForeground': '#cccccc',
    '--vscode-settings-dropdownListBorder': '#454545', '--vscode-settings-checkboxBackground': '#313131', '--vscode-settings-checkboxBorder': '#3c3c3c',
    '--vscode-settings-checkboxForeground': '#cccccc', '--vscode-settings-textInputBackground': '#313131', '--vscode-settings-textInputBorder': '#3c3c3c',
    '--vscode-settings-textInputForeground': '#cccccc', '--vscode-checkbox-background': '#313131', '--vscode-checkbox-border': '#3c3c3c',
    '--vscode-checkbox-foreground': '#cccccc', '--vscode-input-placeholderForeground': '#989898', '--vscode-widget-shadow': '#0000005c',
    '--vscode-list-focusOutline': '#0078d4', '--vscode-list-highlightForeground': '#2aaaff', '--vscode-menu-background': '#1f1f1f',
    '--vscode-menu-foreground': '#cccccc', '--vscode-menu-border': '#454545', '--vscode-menu-selectionBackground': '#0078d4',
    '--vscode-menu-selectionForeground': '#ffffff', '--vscode-editorHoverWidget-background': '#202020', '--vscode-editorHoverWidget-border': '#454545',
  },
  light: {
    '--vscode-foreground': '#616161', '--vscode-editor-background': '#ffffff', '--vscode-descriptionForeground': '#717171',
    '--vscode-errorForeground': '#a1260d', '--vscode-focusBorder': '#0090f1', '--vscode-panel-border': '#e5e5e5',
    '--vscode-list-hoverBackground': '#e8e8e8', '--vscode-list-activeSelectionBackground': '#0060c0', '--vscode-list-activeSelectionForeground': '#ffffff',
    '--vscode-charts-blue': '#1a85ff', '--vscode-charts-orange': '#d18616', '--vscode-charts-purple': '#652d90', '--vscode-charts-green': '#388a34',
    '--vscode-editor-findMatchHighlightBackground': '#ea5c0055',
    '--vscode-charts-red': '#e51400', '--vscode-charts-yellow': '#bf8803', '--vscode-charts-foreground': '#616161', '--vscode-charts-lines': '#61616180',
    '--vscode-input-background': '#ffffff', '--vscode-input-foreground': '#616161', '--vscode-editorWarning-foreground': '#bf8803',
    '--vscode-textLink-foreground': '#006ab1', '--vscode-badge-background': '#c4c4c4', '--vscode-badge-foreground': '#333333',
    '--vscode-font-family': 'sans-serif', '--vscode-font-size': '13px', '--vscode-editor-font-family': 'monospace', '--vscode-editor-font-size': '12px',
    '--vscode-sideBar-background': '#f3f3f3', '--vscode-editorWidget-background': '#f3f3f3', '--vscode-testing-iconPassed': '#388a34',
    '--vscode-button-background': '#005fb8', '--vscode-button-foreground': '#ffffff', '--vscode-button-hoverBackground': '#0258a8',
    '--vscode-button-secondaryBackground': '#e5e5e5', '--vscode-button-secondaryForeground': '#3b3b3b', '--vscode-button-secondaryHoverBackground': '#cccccc',
    '--vscode-button-border': '#0000001a',
    '--vscode-settings-dropdownBackground': '#ffffff', '--vscode-settings-dropdownBorder': '#cecece', '--vscode-settings-dropdownForeground': '#3b3b3b',
    '--vscode-settings-dropdownListBorder': '#c8c8c8', '--vscode-settings-checkboxBackground': '#f8f8f8', '--vscode-settings-checkboxBorder': '#cecece',
    '--vscode-settings-checkboxForeground': '#3b3b3b', '--vscode-settings-textInputBackground': '#ffffff', '--vscode-settings-textInputBorder': '#cecece',
    '--vscode-settings-textInputForeground': '#3b3b3b', '--vscode-checkbox-background': '#f8f8f8', '--vscode-checkbox-border': '#cecece',
    '--vscode-checkbox-foreground': '#3b3b3b', '--vscode-input-placeholderForeground': '#767676', '--vscode-widget-shadow': '#00000029',
    '--vscode-list-focusOutline': '#005fb8', '--vscode-list-highlightForeground': '#0066bf', '--vscode-menu-background': '#ffffff',
    '--vscode-menu-foreground': '#3b3b3b', '--vscode-menu-border': '#cecece', '--vscode-menu-selectionBackground': '#005fb8',
    '--vscode-menu-selectionForeground': '#ffffff', '--vscode-editorHoverWidget-background': '#f8f8f8', '--vscode-editorHoverWidget-border': '#c8c8c8',
  },
};

function serve(): Promise<Server> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = normalize(decodeURIComponent(url.pathname)).replace(/^\/+/, '');
    const file = join(REPO, path);
    if (!file.startsWith(REPO) || !(path.startsWith('dist/') || path.startsWith('media/')) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
  });
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r(server)));
}

/** The Chromium the webview tests and benchmarks drive: $CHROMIUM_PATH, else Debian's. */
export function chromiumPath(): string {
  return process.env.CHROMIUM_PATH || '/usr/bin/chromium';
}

/**
 * Chromium is missing or would not start: what a benchmark reports as
 * skipped (`missingPrerequisite`), with the reason and how to fix it.
 */
export class ChromiumUnavailable extends Error {
  readonly missingPrerequisite = true;
}

let browser: Browser | null = null;
export async function launchBrowser(): Promise<Browser> {
  const executablePath = chromiumPath();
  if (!browser && !existsSync(executablePath)) {
    throw new ChromiumUnavailable(`no Chromium at ${executablePath} — install it (apt-get install chromium) or set CHROMIUM_PATH to one`);
  }
  try {
    browser ??= await chromium.launch({
      executablePath,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  } catch (err) {
    throw new ChromiumUnavailable(`Chromium at ${executablePath} did not start: ${String((err as Error).message ?? err).split('\n')[0]}`);
  }
  return browser;
}
export async function closeBrowser(): Promise<void> {
  await browser?.close();
  browser = null;
}

/**
 * Opens a built panel bundle in headless Chromium, on a page with the same CSP
 * as in VS Code and a stand-in for acquireVsCodeApi that carries messages to a
 * scripted host in this process.
 */
export async function openPanel(panel: PanelKind, handlers: ScriptedHandlers, opts: HarnessOptions = {}): Promise<WebviewHarness> {
  // The browser first: without one, no server is left listening (it would keep the process alive).
  const b = await launchBrowser();
  const server = await serve();
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const context = await b.newContext({ viewport: opts.viewport ?? { width: 1200, height: 800 } });
  const page = await context.newPage();
  const sent: WebviewHarness['sent'] = [];
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  const reply = (m: HostMessage): Promise<void> => page.evaluate((msg) => window.postMessage(msg, '*'), m as never);
  await page.exposeBinding('__toHost', async (_src, msg: { kind: string; id?: number; method?: string; params?: unknown }) => {
    sent.push(msg as WebviewHarness['sent'][number]);
    if (msg.kind === 'ready' && !opts.holdReplay) await reply({ kind: 'replayed' });
    if (msg.kind !== 'request') return;
    const h = handlers[msg.method as RequestMethod] as ((p: unknown) => unknown) | undefined;
    try {
      if (!h) throw new Error(`scripted host does not answer ${msg.method}`);
      await reply({ kind: 'response', id: msg.id!, ok: true, result: await h(msg.params) });
    } catch (e) {
      await reply({ kind: 'response', id: msg.id!, ok: false, error: (e as Error).message });
    }
  });
  const nonce = 'testnonce' + Math.random().toString(36).slice(2);
  const vars = Object.entries(THEMES[opts.theme ?? 'dark']).map(([k, v]) => `${k}: ${v};`).join(' ');
  const initialState = JSON.stringify(opts.state ?? null);
  await page.route(`${origin}/panel.html`, (route) =>
    route.fulfill({
      contentType: 'text/html',
      body: `<!DOCTYPE html><html lang="en" style="${vars}"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${origin} data: blob:; style-src ${origin}; font-src ${origin}; script-src 'nonce-${nonce}'">
<link rel="stylesheet" href="${origin}/dist/webview/codicon.css" id="vscode-codicon-stylesheet"><link rel="stylesheet" href="${origin}/media/webview.css">${existsSync(join(REPO, 'media', `${panel}.css`)) ? `<link rel="stylesheet" href="${origin}/media/${panel}.css">` : ''}</head>
<body class="vscode-${opts.theme ?? 'dark'}" data-panel="${panel}"><div id="app"></div>
<script nonce="${nonce}">
let state = ${initialState};
window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__toHost(m), getState: () => state, setState: (s) => { state = s; window.__lastState = s; } });
</script>
<script nonce="${nonce}" src="${origin}/dist/webview/${panel}.js"></script></body></html>`,
    }),
  );
  await page.goto(`${origin}/panel.html`);
  return {
    page,
    sent,
    errors,
    notify: (type, params) => reply({ kind: 'notification', type, params } as HostMessage),
    replayed: () => reply({ kind: 'replayed' }),
    async close() {
      await context.close();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Resolves once the webview has sent `ready`. */
export async function waitReady(h: WebviewHarness): Promise<void> {
  for (let i = 0; i < 200 && !h.sent.some((m) => m.kind === 'ready'); i++) await new Promise((r) => setTimeout(r, 25));
  if (!h.sent.some((m) => m.kind === 'ready')) throw new Error(`the webview never sent ready; page errors: ${h.errors.join(' | ')}`);
}
