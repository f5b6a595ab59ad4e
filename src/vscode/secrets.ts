/**
 * API keys and the Jupyter token: SecretStorage first, the environment as the fallback. Keys never go to
 * settings, logs, the webview or the guest.
 */
import * as vscode from 'vscode';
import { PROVIDER_IDS, providerInfo, secretKeyName as keyName, whoStarting } from '../core/providers/shared/catalog';
import { apiKeyFromEnv } from '../core/providers/factory';
import type { ProviderId } from '../core/providers/shared/types';

const JUPYTER_TOKEN = 'codeact.jupyterToken';

export class Secrets implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;
  private readonly subscription: vscode.Disposable;

  constructor(private readonly storage: vscode.SecretStorage) {
    this.subscription = storage.onDidChange(() => this.changed.fire());
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }

  async apiKey(provider: ProviderId): Promise<string | undefined> {
    return (await this.storage.get(keyName(provider))) || apiKeyFromEnv(provider);
  }

  async hasKey(provider: ProviderId): Promise<boolean> {
    return !providerInfo(provider).needsKey || !!(await this.apiKey(provider));
  }

  async jupyterToken(): Promise<string | undefined> {
    return (await this.storage.get(JUPYTER_TOKEN)) || process.env.CODEACT_JUPYTER_TOKEN || undefined;
  }

  /** "CodeAct: Set API Key…": pick a provider, type the key (masked). */
  async promptForKey(preselect?: ProviderId): Promise<ProviderId | undefined> {
    const providers = PROVIDER_IDS;
    const picked =
      preselect ??
      (
        await vscode.window.showQuickPick(
          await Promise.all(
            providers.map(async (p) => ({
              label: whoStarting(p),
              description: (await this.storage.get(keyName(p))) ? 'key stored' : apiKeyFromEnv(p) ? `from ${providerInfo(p).keyEnv.join(' / ')}` : 'no key',
              provider: p,
            })),
          ),
          { title: 'CodeAct: Set API Key', placeHolder: 'Which provider is the key for?' },
        )
      )?.provider;
    if (!picked) return undefined;
    const key = await vscode.window.showInputBox({
      title: `API key for ${whoStarting(picked)}`,
      prompt: `Stored in VS Code's secret storage. Leave empty and press Enter to use ${providerInfo(picked).keyEnv.join(' or ') || 'no key'} instead.`,
      password: true,
      ignoreFocusOut: true,
      validateInput: (v) => (/\s/.test(v.trim()) ? 'A key has no spaces.' : undefined),
    });
    if (key === undefined) return undefined;
    if (key.trim()) await this.storage.store(keyName(picked), key.trim());
    else await this.storage.delete(keyName(picked));
    return picked;
  }

  async clearKey(): Promise<void> {
    const providers = PROVIDER_IDS;
    const stored = (await Promise.all(providers.map(async (p) => ((await this.storage.get(keyName(p))) ? p : undefined)))).filter((p): p is ProviderId => !!p);
    if (!stored.length) {
      void vscode.window.showInformationMessage('CodeAct has no stored API keys.');
      return;
    }
    const picked = await vscode.window.showQuickPick(
      stored.map((p) => ({ label: whoStarting(p), provider: p })),
      { title: 'CodeAct: Clear API Key' },
    );
    if (picked) await this.storage.delete(keyName(picked.provider));
  }

  async promptForJupyterToken(): Promise<void> {
    const token = await vscode.window.showInputBox({
      title: 'Jupyter server token',
      prompt: "Stored in VS Code's secret storage (never in settings). Empty: use CODEACT_JUPYTER_TOKEN.",
      password: true,
      ignoreFocusOut: true,
    });
    if (token === undefined) return;
    if (token.trim()) await this.storage.store(JUPYTER_TOKEN, token.trim());
    else await this.storage.delete(JUPYTER_TOKEN);
  }
}
