/**
 * VS Code's layers of `codeact.<key>` (user, workspace, folder) for the one resolver. Types only from
 * `vscode`, so the host-parity test runs it in plain mocha against the CLI's reader.
 */
import type * as vscode from 'vscode';
import type { SettingsReader } from '../core/config/resolve';

export function vscodeReader(c: Pick<vscode.WorkspaceConfiguration, 'inspect'>): SettingsReader {
  return (key) => {
    const i = c.inspect(key);
    return i ? { user: i.globalValue, workspace: i.workspaceValue, folder: i.workspaceFolderValue } : undefined;
  };
}
