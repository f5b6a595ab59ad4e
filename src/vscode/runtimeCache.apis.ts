/**
 * The seam between the runtime cache (./runtimeCache) and the outside: the runtime factory (it starts
 * processes, connects to Jupyter or attaches to a session host) and VS Code's warning toast, as an interface, and the real ones.
 */
import * as vscode from 'vscode';
import type { RuntimeConfig } from '../core/runtime/factory';
import { hostRunning, openRuntime } from '../core/sessionHost/launch';
import type { Runtime } from '../core/runtime/types';
import type { PythonEnv } from '../core/runtime/local/pythonEnv';
import { pythonEnvFor } from './pythonEnv';

export interface RuntimeCacheApis {
  /** Builds the runtime, or attaches to the folder's session host when the config chose one (config.sessionHost). */
  createRuntime(config: RuntimeConfig): Promise<Runtime>;
  showWarningMessage(message: string): void;
  /** The session host the config would attach to is running (none is started to find out). */
  hostRunning(config: RuntimeConfig): boolean;
  /** The interpreter of a folder's local guest (./pythonEnv: the setting, the Python extension's, the folder's .venv, python3). */
  pythonEnv?(folder: string | undefined, setting: string | undefined): PythonEnv;
}

export const vscodeRuntimeCacheApis: RuntimeCacheApis = {
  createRuntime: (config) => openRuntime(config),
  hostRunning: (config) => hostRunning(config),
  showWarningMessage: (message) => void vscode.window.showWarningMessage(message),
  pythonEnv: (folder, setting) => pythonEnvFor(folder, setting),
};
