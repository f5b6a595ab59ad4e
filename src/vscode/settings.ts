/**
 * CodeAct settings read through VS Code's configuration layers and resolved by the one policy both hosts
 * share: Workspace Trust, a first-party base URL only from user settings, approvals only stricter from
 * a workspace (core/config/resolve.ts).
 */
import * as vscode from 'vscode';
import { resolveEngineConfig, type EngineConfig, type ResolvedConfig } from '../core/config/resolve';
import { vscodeReader } from './settingsReader';
import { PROVIDER_CATALOG as PROVIDERS } from '../core/providers/shared/catalog';
import type { ProviderId } from '../core/providers/shared/types';

/** The engine's configuration, resolved by the one policy both hosts share (core/config/resolve.ts). */
export type CodeActSettings = EngineConfig;

/** Each provider's suggested models (the registry's). */
export const DEFAULT_MODELS: Record<ProviderId, readonly string[]> = Object.fromEntries(PROVIDERS.map((p) => [p.id, p.defaultModels])) as Record<ProviderId, readonly string[]>;

export function resolveSettings(scope?: vscode.ConfigurationScope): ResolvedConfig {
  // codeact.tools is resource-scoped: read it for the folder the tools run in.
  const c = vscode.workspace.getConfiguration('codeact', scope ?? vscode.workspace.workspaceFolders?.[0]?.uri);
  return resolveEngineConfig(vscodeReader(c), { trusted: vscode.workspace.isTrusted });
}

/** The folder command tools run in: the first workspace folder. */
export function workspaceFolder(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}
