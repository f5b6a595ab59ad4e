/**
 * The seam between the runtime cache (./runtimeCache) and the outside: the runtime factory (it starts
 * processes or connects to Jupyter) and VS Code's warning toast, as an interface, and the real ones.
 */
import * as vscode from 'vscode';
import { createRuntime, type RuntimeConfig } from '../core/runtime/factory';
import type { Runtime } from '../core/runtime/types';

export interface RuntimeCacheApis {
  createRuntime(config: RuntimeConfig): Promise<Runtime>;
  showWarningMessage(message: string): void;
}

export const vscodeRuntimeCacheApis: RuntimeCacheApis = {
  createRuntime,
  showWarningMessage: (message) => void vscode.window.showWarningMessage(message),
};
