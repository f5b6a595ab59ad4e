/**
 * CodeAct as an MCP server definition, so VS Code's own agent (and any chat extension that uses VS Code's MCP
 * servers) can run code in a live, sandboxed CodeAct session of the workspace: one `codeact mcp serve` (stdio)
 * per trusted folder, the extension's own CLI on the extension host's Node. Its settings are the extension's: the
 * folder's `.vscode/settings.json` (read by the CLI as by the panel) and the user-level `codeact.*` values, which
 * are written to a file the server reads instead of the CLI's own user settings.
 *
 * When the person chose to share the panel's open conversation with VS Code's agent (./mcpShare), the definition is
 * instead one MCP server on loopback HTTP in this extension host, whose runs are turns of that conversation.
 *
 * `vscode.lm.registerMcpServerDefinitionProvider` arrived in VS Code 1.101; the extension claims 1.100, so it is
 * looked up at run time and, where it is missing or refuses the provider (1.100 has it, but wants another contribution
 * point and throws), nothing is registered and the log says how to add the server by hand.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { PanelShare } from './mcpShare';
import { vscodeReader } from './settingsReader';

/** The provider id, as package.json's `contributes.mcpServerDefinitionProviders` declares it. */
const MCP_PROVIDER_ID = 'codeact.mcp';

/** The parts of VS Code ≥ 1.101's API this uses (1.100 has both, but its function throws: see below). */
interface McpServerApi {
  registerMcpServerDefinitionProvider(
    id: string,
    provider: { onDidChangeMcpServerDefinitions: vscode.Event<void>; provideMcpServerDefinitions(): Promise<unknown[]> },
  ): vscode.Disposable;
}
type StdioDefinition = new (label: string, command: string, args: string[], env: Record<string, string>, version: string) => { cwd?: vscode.Uri };
type HttpDefinition = new (label: string, uri: vscode.Uri, headers: Record<string, string>, version: string) => unknown;

function mcpApi(): { lm: McpServerApi; Stdio: StdioDefinition; Http?: HttpDefinition } | undefined {
  const lm = vscode.lm as unknown as Partial<McpServerApi> | undefined;
  const api = vscode as unknown as { McpStdioServerDefinition?: StdioDefinition; McpHttpServerDefinition?: HttpDefinition };
  const Stdio = api.McpStdioServerDefinition;
  return lm?.registerMcpServerDefinitionProvider && Stdio ? { lm: lm as McpServerApi, Stdio, Http: api.McpHttpServerDefinition } : undefined;
}

/** What a definition needs to know that is not VS Code's. */
interface McpDefinitionContext {
  /** dist/cli.js of this extension. */
  cli: string;
  /** A folder of the extension's own (globalStorage), where the user-level settings file is written. */
  storage: string;
  /** The extension's package.json: its version, and the settings it declares. */
  packageJSON: { version?: string; contributes?: { configuration?: { properties?: Record<string, unknown> } } };
  log: vscode.LogOutputChannel;
  /** The person's choice of session for VS Code's agent (./mcpShare). */
  share?: PanelShare;
}

/** One `codeact mcp serve` per trusted local folder; nothing while the workspace is not trusted. */
export function registerMcpDefinitions(o: McpDefinitionContext): vscode.Disposable {
  const api = mcpApi();
  if (!api) {
    o.log.info(
      `VS Code ${vscode.version} cannot take MCP servers from extensions (that needs 1.101 or later): to use CodeAct from its agent, add \`codeact mcp serve\` to .vscode/mcp.json (README: "Use CodeAct from other agents").`,
    );
    return new vscode.Disposable(() => {});
  }
  const changed = new vscode.EventEmitter<void>();
  const settingsFile = path.join(o.storage, 'mcp', 'user-settings.json');
  const keys = Object.keys(o.packageJSON.contributes?.configuration?.properties ?? {})
    .filter((k) => k.startsWith('codeact.'))
    .map((k) => k.slice('codeact.'.length));
  const version = String(o.packageJSON.version ?? '');
  const provider = {
    onDidChangeMcpServerDefinitions: changed.event,
    provideMcpServerDefinitions: async () => {
      if (!vscode.workspace.isTrusted) return [];
      const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file');
      if (!folders.length) return [];
      if (o.share?.active && api.Http) {
        try {
          const s = await o.share.start();
          return [new api.Http('CodeAct: panel conversation', vscode.Uri.parse(s.url), { Authorization: `Bearer ${s.token}` }, version)];
        } catch (err) {
          o.log.warn(
            `CodeAct MCP server: the server sharing the panel's conversation did not start (${(err as Error).message}); VS Code's agent gets sessions of its own.`,
          );
        }
      }
      try {
        writeUserSettings(settingsFile, keys);
      } catch (err) {
        o.log.warn(`CodeAct MCP server: the user settings could not be written for it (${(err as Error).message}); it reads the CLI's own.`);
      }
      const file = vscode.workspace.workspaceFile;
      return folders.map((f) => {
        const where = file?.scheme === 'file' ? ['--workspace', file.fsPath, '--folder', f.uri.fsPath] : ['--workspace', f.uri.fsPath];
        // The workspace is trusted in VS Code (checked above): that is the trust that applies to a server it starts.
        const args = [o.cli, 'mcp', 'serve', ...where, '--trust-workspace'];
        const env: Record<string, string> = { ELECTRON_RUN_AS_NODE: '1', CODEACT_USER_SETTINGS: settingsFile };
        const label = folders.length > 1 ? `CodeAct: ${f.name}` : 'CodeAct';
        const def = new api.Stdio(label, process.execPath, args, env, version);
        def.cwd = f.uri;
        return def;
      });
    },
  };
  let registration: vscode.Disposable;
  try {
    registration = api.lm.registerMcpServerDefinitionProvider(MCP_PROVIDER_ID, provider);
  } catch (err) {
    // VS Code 1.100 has the function but wants the provider under another contribution point
    // (`modelContextServerCollections`) and throws: the extension goes on without it, as where it is missing.
    changed.dispose();
    o.log.info(
      `VS Code ${vscode.version} did not take CodeAct's MCP server (${(err as Error).message}): to use CodeAct from its agent, add \`codeact mcp serve\` to .vscode/mcp.json (README: "Use CodeAct from other agents").`,
    );
    return new vscode.Disposable(() => {});
  }
  const disposables = [
    changed,
    registration,
    vscode.workspace.onDidGrantWorkspaceTrust(() => changed.fire()),
    ...(o.share ? [o.share.onDidChange(() => changed.fire())] : []),
    vscode.workspace.onDidChangeWorkspaceFolders(() => changed.fire()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      // A server reads its settings when it starts: the file follows, and VS Code is told the definition may have changed.
      if (!e.affectsConfiguration('codeact')) return;
      try {
        writeUserSettings(settingsFile, keys);
      } catch {
        // Said when the definitions are next provided.
      }
      changed.fire();
    }),
  ];
  return vscode.Disposable.from(...disposables);
}

/** The user-level `codeact.*` values (what the User settings say, not a folder's), as the CLI's user settings file. */
function writeUserSettings(file: string, keys: readonly string[]): void {
  // The user layer as the one resolver reads it (./settingsReader), not a reading of its own.
  const read = vscodeReader(vscode.workspace.getConfiguration('codeact'));
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const value = read(key)?.user;
    if (value !== undefined) out[`codeact.${key}`] = value;
  }
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(out, null, 1), { mode: 0o600 });
  renameSync(tmp, file);
}
