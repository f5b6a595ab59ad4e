/**
 * CodeAct settings read through VS Code's configuration (so Workspace Trust's restricted settings
 * apply), turned into the engine's options.
 */
import * as vscode from 'vscode';
import type { AgentMode } from '../core/agent/agent';
import type { AgentProtocol } from '../core/agent/textProtocol';
import type { ProviderId } from '../core/providers/types';
import type { SandboxLimits, SandboxSetting, WorkspaceMount } from '../core/runtime/local/sandbox';

export interface CodeActSettings {
  provider: ProviderId;
  model: string;
  baseUrl?: string;
  mode: AgentMode;
  /** codeact.agent.protocol: function calling, or ```python blocks in the text. */
  protocol: AgentProtocol;
  /** codeact.toolDiscovery.inlineLimit: most tools listed with their schemas. */
  toolsInlineLimit: number;
  runtime: 'local' | 'jupyter';
  python: string;
  preload: string[];
  sessionPolicy: 'conversation' | 'run';
  sessionIdleMs: number;
  sessionMaxAlive: number;
  timeoutMs: number;
  maxTurns: number;
  defaultApproval: 'auto' | 'ask' | 'deny';
  reviewCode: boolean;
  alwaysAllow: string[];
  sandbox: SandboxSetting;
  sandboxNetwork: boolean;
  mountWorkspace: WorkspaceMount;
  limits: SandboxLimits;
  jupyterUrl?: string;
  jupyterKernel: string;
  jupyterSessionPolicy: 'conversation' | 'execution';
  compatibleSupportsTools: boolean;
  compatibleContextWindow: number;
  hostedMemoryLimit: '1g' | '4g' | '16g' | '64g';
  anthropicToolVersion: string;
  inlineResults: boolean;
  tools: unknown;
}

export const DEFAULT_MODELS: Record<ProviderId, string[]> = {
  openai: ['gpt-5', 'gpt-5-mini', 'gpt-5-nano', 'gpt-4.1'],
  anthropic: ['claude-sonnet-4-6', 'claude-opus-4-1', 'claude-haiku-4-5'],
  gemini: ['gemini-3-flash-preview', 'gemini-3-pro-preview', 'gemini-2.5-pro', 'gemini-2.5-flash'],
  'openai-compatible': ['qwen2.5-coder:7b', 'llama3.1:8b', 'gpt-oss:20b'],
};

export function readSettings(scope?: vscode.ConfigurationScope): CodeActSettings {
  // codeact.tools is resource-scoped: read it for the folder the tools run in.
  const c = vscode.workspace.getConfiguration('codeact', scope ?? vscode.workspace.workspaceFolders?.[0]?.uri);
  const provider = c.get<ProviderId>('provider', 'openai');
  return {
    provider,
    model: c.get<string>('model', '') || DEFAULT_MODELS[provider]?.[0] || '',
    baseUrl: c.get<string>('baseUrl', '') || undefined,
    mode: c.get<AgentMode>('mode', 'toolCode'),
    protocol: c.get<AgentProtocol>('agent.protocol', 'tools') === 'text' ? 'text' : 'tools',
    toolsInlineLimit: Math.max(0, c.get<number>('toolDiscovery.inlineLimit', 20)),
    runtime: c.get<'local' | 'jupyter'>('runtime', 'local'),
    python: pythonPath(c),
    preload: (c.get<unknown[]>('python.preload', []) ?? []).filter((m): m is string => typeof m === 'string' && /^[A-Za-z_][\w.]*$/.test(m)).slice(0, 64),
    sessionPolicy: c.get<string>('session.policy', 'conversation') === 'run' ? 'run' : 'conversation',
    sessionIdleMs: Math.max(0, Number(c.get<number>('session.idleMinutes', 30)) || 0) * 60_000,
    sessionMaxAlive: Math.min(64, Math.max(1, Math.floor(Number(c.get<number>('session.maxAlive', 4)) || 4))),
    timeoutMs: Math.max(1, c.get<number>('timeoutSeconds', 120)) * 1000,
    maxTurns: c.get<number>('maxTurns', 12),
    defaultApproval: c.get<'auto' | 'ask' | 'deny'>('approval.default', 'auto'),
    reviewCode: c.get<boolean>('approval.reviewCode', false),
    alwaysAllow: c.get<string[]>('approval.alwaysAllow', []),
    sandbox: c.get<SandboxSetting>('sandbox.kind', 'auto'),
    sandboxNetwork: c.get<boolean>('sandbox.network', false),
    mountWorkspace: c.get<WorkspaceMount>('sandbox.mountWorkspace', 'none'),
    limits: c.get<SandboxLimits>('sandbox.limits', {}),
    jupyterUrl: c.get<string>('jupyter.url', '') || undefined,
    jupyterKernel: c.get<string>('jupyter.kernelName', 'python3'),
    jupyterSessionPolicy: c.get<'conversation' | 'execution'>('jupyter.sessionPolicy', 'conversation'),
    compatibleSupportsTools: c.get<boolean>('openaiCompatible.supportsTools', true),
    compatibleContextWindow: c.get<number>('openaiCompatible.contextWindow', 32768),
    hostedMemoryLimit: c.get<'1g' | '4g' | '16g' | '64g'>('hosted.memoryLimit', '1g'),
    anthropicToolVersion: c.get<string>('hosted.anthropicToolVersion', 'code_execution_20250825'),
    inlineResults: c.get<boolean>('inlineResults', true),
    tools: c.get<unknown>('tools', []),
  };
}

/** codeact.python.path, or the older codeact.python when only that is set. */
function pythonPath(c: vscode.WorkspaceConfiguration): string {
  const i = c.inspect<string>('python.path');
  const set = i?.workspaceFolderValue ?? i?.workspaceValue ?? i?.globalValue;
  if (set) return set;
  const legacy = c.get<unknown>('python');
  return typeof legacy === 'string' && legacy ? legacy : 'python3';
}

/** The folder command tools run in: the first workspace folder. */
export function workspaceFolder(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}
