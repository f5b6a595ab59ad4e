/**
 * CodeAct settings read through VS Code's configuration layers and resolved by the one policy both hosts
 * share: Workspace Trust, a first-party base URL only from user settings, approvals only stricter from
 * a workspace (core/config/resolve.ts).
 */
import * as vscode from 'vscode';
import { resolveEngineConfig, type EngineConfig, type ResolvedConfig } from '../core/config/resolve';
import { vscodeReader } from './settingsReader';
import type { ProviderId } from '../core/providers/types';

/** The engine's configuration, resolved by the one policy both hosts share (core/config/resolve.ts). */
export type CodeActSettings = EngineConfig;

export const DEFAULT_MODELS: Record<ProviderId, string[]> = {
  openai: ['gpt-5', 'gpt-5-mini', 'gpt-5-nano', 'gpt-4.1'],
  anthropic: ['claude-sonnet-4-6', 'claude-opus-4-1', 'claude-haiku-4-5'],
  gemini: ['gemini-3-flash-preview', 'gemini-3-pro-preview', 'gemini-2.5-pro', 'gemini-2.5-flash'],
  'openai-compatible': ['qwen2.5-coder:7b', 'llama3.1:8b', 'gpt-oss:20b'],
};

export function resolveSettings(scope?: vscode.ConfigurationScope): ResolvedConfig {
  // codeact.tools is resource-scoped: read it for the folder the tools run in.
  const c = vscode.workspace.getConfiguration('codeact', scope ?? vscode.workspace.workspaceFolders?.[0]?.uri);
  return resolveEngineConfig(vscodeReader(c), { trusted: vscode.workspace.isTrusted });
}

/** The folder command tools run in: the first workspace folder. */
export function workspaceFolder(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}
