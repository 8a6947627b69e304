import * as vscode from 'vscode';
import * as path from 'node:path';
import { Disposable } from '../disposable';
import type { LabService } from '../labService';
import { versionReportMarkdown } from '../view/promptLens';
import type { PromptIndex } from './promptIndex';

/** The read-only documents of the prompt history: a stored version's text, an inline prompt's current text, a version's statistics. */
export const PROMPT_VERSION_SCHEME = 'rollout-lab-prompt';

/** What a prompt-history URI names. `version` is a content hash, or 'current' for an inline prompt's text as it is now. */
export interface PromptDocRef {
  folder: string;
  agent: string;
  version: string;
  what: 'text' | 'stats';
}

/** `rollout-lab-prompt:/Supervisor/abc123456789.md?folder=…` (the stats page ends in `.stats.md`). */
export function promptDocUri(ref: PromptDocRef): vscode.Uri {
  const name = `${ref.version}${ref.what === 'stats' ? '.stats' : ''}.md`;
  return vscode.Uri.from({ scheme: PROMPT_VERSION_SCHEME, path: `/${encodeURIComponent(ref.agent)}/${name}`, query: new URLSearchParams({ folder: ref.folder }).toString() });
}

export function parsePromptDocUri(uri: vscode.Uri): PromptDocRef | undefined {
  if (uri.scheme !== PROMPT_VERSION_SCHEME) return undefined;
  const m = /^\/([^/]+)\/([0-9a-f]{12}|current)(\.stats)?\.md$/.exec(uri.path);
  const folder = new URLSearchParams(uri.query).get('folder');
  if (!m || !folder) return undefined;
  return { folder: path.resolve(folder), agent: decodeURIComponent(m[1]!), version: m[2]!, what: m[3] ? 'stats' : 'text' };
}

/**
 * Serves the prompt-history documents from the store. They are read-only:
 * a stored version never changes; "Restore This Version" is how its text
 * comes back into the prompt.
 */
export class PromptVersionContent extends Disposable implements vscode.TextDocumentContentProvider {
  private readonly changed = this.register(new vscode.EventEmitter<vscode.Uri>());
  readonly onDidChange = this.changed.event;
  private readonly open = new Set<string>();

  constructor(
    private readonly lab: LabService,
    private readonly index: PromptIndex,
  ) {
    super();
    // Statistics pages and inline prompts' current text follow the store and lab.json.
    const refreshAll = (): void => {
      for (const u of this.open) this.changed.fire(vscode.Uri.parse(u));
    };
    this.register(index.onDidChange(refreshAll));
    this.register(
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.contentChanges.length > 0 && index.labFolderOfConfig(e.document.uri.fsPath)) refreshAll();
      }),
    );
    this.register(vscode.workspace.onDidCloseTextDocument((doc) => this.open.delete(doc.uri.toString())));
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const ref = parsePromptDocUri(uri);
    if (!ref) throw new Error(`${uri.toString()} is not a prompt version (expected ${PROMPT_VERSION_SCHEME}:/<Agent>/<12 hex digits>.md?folder=…)`);
    this.open.add(uri.toString());
    if (ref.version === 'current') return (await this.index.currentTarget(ref.folder, ref.agent)).text;
    if (ref.what === 'stats') {
      const s = await this.index.agentStats(ref.folder, ref.agent);
      const stats = s.stats.find((x) => x.version === ref.version);
      if (!stats) return `No rollouts of ${ref.agent} have run prompt version ${ref.version}.\n`;
      return versionReportMarkdown(stats, s.comparisons.find((c) => c.version === ref.version) ?? null, s.best?.version === ref.version, Date.now());
    }
    const stored = (await this.lab.store(ref.folder)).getPromptVersion(ref.version);
    if (!stored) throw new Error(`prompt version ${ref.version} is not in the store of ${ref.folder}`);
    return stored.text;
  }
}
