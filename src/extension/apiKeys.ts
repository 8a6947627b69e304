import * as vscode from 'vscode';
import { core } from './coreLoader';
import { ENV_VAR_NAME, apiKeyChoices, mergeSecrets } from './view/apiKeyChoices';

const NAMES_KEY = 'rolloutLab.apiKeyNames';

/**
 * API keys kept in VS Code's SecretStorage under the name of the environment
 * variable a model reads (`apiKeyEnv`). They reach the model router only as
 * its `env` option, in memory: never a file, a log line or a trace.
 */
export class ApiKeys {
  readonly onDidChange: vscode.Event<vscode.SecretStorageChangeEvent>;

  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly state: vscode.Memento,
  ) {
    this.onDidChange = secrets.onDidChange;
  }

  /** Names stored so far (SecretStorage cannot list its keys on VS Code 1.100). */
  storedNames(): string[] {
    return this.state.get<string[]>(NAMES_KEY, []);
  }

  async set(envVar: string, value: string): Promise<void> {
    if (!ENV_VAR_NAME.test(envVar)) throw new Error(`"${envVar}" is not an environment variable name (letters, digits and _, not starting with a digit)`);
    if (value) {
      await this.secrets.store(envVar, value);
      const names = new Set(this.storedNames());
      names.add(envVar);
      await this.state.update(NAMES_KEY, [...names].sort());
    } else {
      await this.secrets.delete(envVar);
      await this.state.update(NAMES_KEY, this.storedNames().filter((n) => n !== envVar));
    }
  }

  /** process.env with every stored key over it, plus the keys the lab's models name. */
  async environment(workspaceDir: string): Promise<NodeJS.ProcessEnv> {
    const names = new Set(this.storedNames());
    for (const c of await this.choicesFor(workspaceDir)) names.add(c.envVar);
    const found: Record<string, string | undefined> = {};
    for (const n of names) found[n] = await this.secrets.get(n);
    return mergeSecrets(process.env, found);
  }

  async choicesFor(workspaceDir: string): Promise<ReturnType<typeof apiKeyChoices>> {
    try {
      const { loadConfig } = await core.config();
      return apiKeyChoices((await loadConfig(workspaceDir)).config.models);
    } catch {
      // A broken lab.json is reported when the lab opens; here it only means no names to offer.
      return [];
    }
  }

  /**
   * The Set API Key command: pick the variable (from the models that name
   * one, or type another), then the key in a password box. An empty key
   * removes the stored one. `arg` skips the prompts.
   */
  async command(workspaceDir: string | undefined, arg?: unknown): Promise<string | undefined> {
    let envVar: string | undefined;
    let value: string | undefined;
    if (arg && typeof arg === 'object') {
      const a = arg as { envVar?: unknown; value?: unknown };
      if (typeof a.envVar !== 'string' || typeof a.value !== 'string') throw new Error('Set API Key takes { envVar: string, value: string }');
      envVar = a.envVar;
      value = a.value;
    } else {
      const choices = workspaceDir ? await this.choicesFor(workspaceDir) : [];
      const stored = new Set(this.storedNames());
      type Item = vscode.QuickPickItem & { envVar?: string };
      const items: Item[] = choices.map((c) => ({
        label: c.envVar,
        description: `model${c.models.length > 1 ? 's' : ''} ${c.models.join(', ')}`,
        detail: stored.has(c.envVar) ? 'a key is stored; enter a new one to replace it, or nothing to remove it' : undefined,
        envVar: c.envVar,
      }));
      for (const n of stored) if (!choices.some((c) => c.envVar === n)) items.push({ label: n, description: 'stored', envVar: n });
      items.push({ label: '$(edit) Another environment variable…', alwaysShow: true });
      const picked = await vscode.window.showQuickPick(items, {
        title: 'Rollout Lab: Set API Key',
        placeHolder: choices.length ? 'Which key? (models name it with "apiKeyEnv" in lab.json)' : 'No model in lab.json names an apiKeyEnv; type the variable name',
      });
      if (!picked) return undefined;
      envVar = picked.envVar;
      if (!envVar) {
        envVar = await vscode.window.showInputBox({
          title: 'Rollout Lab: Set API Key',
          prompt: 'Environment variable name, as in "apiKeyEnv" of a model',
          placeHolder: 'OPENAI_API_KEY',
          validateInput: (v) => (ENV_VAR_NAME.test(v.trim()) ? undefined : 'letters, digits and _, not starting with a digit'),
        });
        if (!envVar) return undefined;
        envVar = envVar.trim();
      }
      value = await vscode.window.showInputBox({
        title: `Rollout Lab: API key for ${envVar}`,
        prompt: `Kept in VS Code's secret storage and passed to the models that read $${envVar}; leave empty to remove the stored key`,
        password: true,
        ignoreFocusOut: true,
      });
      if (value === undefined) return undefined;
    }
    await this.set(envVar, value.trim());
    void vscode.window.showInformationMessage(value.trim() ? `Rollout Lab: stored the key for ${envVar}.` : `Rollout Lab: removed the stored key for ${envVar}.`);
    return envVar;
  }
}
