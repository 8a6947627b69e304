import * as vscode from 'vscode';
import { core } from '../coreLoader';
import type { SimServer } from '../../core/sim/simServer';
import { Disposable } from '../disposable';

export interface SimEndpointInfo {
  url: string;
  port: number;
}

/**
 * The built-in simulated OpenAI-compatible endpoint, started on 127.0.0.1
 * for use outside the lab's own runs (the CLI with --base-url, a notebook, a
 * user graph under development). A status bar item says it is running, and
 * says SIMULATED, so nobody mistakes its answers for a model's.
 */
export class SimEndpoint extends Disposable {
  private server: SimServer | undefined;
  private starting: Promise<SimServer> | undefined;
  private readonly item: vscode.StatusBarItem;

  constructor(private readonly log: (line: string) => void) {
    super();
    this.item = this.register(vscode.window.createStatusBarItem('rolloutLab.simulatedEndpoint', vscode.StatusBarAlignment.Left, 10));
    this.item.name = 'Rollout Lab: simulated endpoint';
    this.item.command = 'rolloutLab.simulatedEndpointActions';
    this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
  }

  get info(): SimEndpointInfo | undefined {
    return this.server ? { url: this.server.url, port: this.server.port } : undefined;
  }

  /** Starts it (or finds it running) and shows its URL with a Copy URL action. */
  async start(arg?: unknown): Promise<SimEndpointInfo> {
    const port = typeof arg === 'object' && arg !== null && typeof (arg as { port?: unknown }).port === 'number' ? (arg as { port: number }).port : 0;
    if (!this.server) {
      this.starting ??= (async (): Promise<SimServer> => {
        const { startSimServer } = await core.simServer();
        return startSimServer({ port, host: '127.0.0.1' });
      })();
      try {
        this.server = await this.starting;
      } finally {
        this.starting = undefined;
      }
      this.log(`SIMULATED endpoint started at ${this.server.url} (answers come from the built-in simulator, not a model)`);
      this.item.text = `$(beaker) SIMULATED endpoint :${this.server.port}`;
      this.item.tooltip = new vscode.MarkdownString(`Rollout Lab's simulated OpenAI-compatible endpoint\n\n\`${this.server.url}\`\n\nClick to copy the URL or stop it.`);
      this.item.show();
      void vscode.commands.executeCommand('setContext', 'rolloutLab.simRunning', true);
    }
    const { url, port: actual } = this.server;
    void vscode.window.showInformationMessage(`Rollout Lab: SIMULATED endpoint running at ${url}`, 'Copy URL', 'Stop').then(async (a) => {
      if (a === 'Copy URL') await this.copyUrl();
      if (a === 'Stop') await this.stop();
    });
    return { url, port: actual };
  }

  async copyUrl(): Promise<void> {
    if (!this.server) return;
    await vscode.env.clipboard.writeText(this.server.url);
    void vscode.window.setStatusBarMessage(`Copied ${this.server.url}`, 3000);
  }

  /** Stops it; true if one was running. */
  async stop(): Promise<boolean> {
    const s = this.server;
    if (!s) {
      void vscode.window.showInformationMessage('Rollout Lab: the simulated endpoint is not running.');
      return false;
    }
    this.server = undefined;
    this.item.hide();
    void vscode.commands.executeCommand('setContext', 'rolloutLab.simRunning', false);
    await s.close();
    this.log(`SIMULATED endpoint at ${s.url} stopped`);
    return true;
  }

  /** The status bar item's menu. */
  async actions(): Promise<void> {
    if (!this.server) return;
    const a = await vscode.window.showQuickPick(['Copy URL', 'Stop Simulated Endpoint'], { title: `SIMULATED endpoint ${this.server.url}` });
    if (a === 'Copy URL') await this.copyUrl();
    if (a === 'Stop Simulated Endpoint') await this.stop();
  }

  override dispose(): void {
    super.dispose();
    void this.server?.close();
    this.server = undefined;
  }
}
