/**
 * A VS Code `.code-workspace` file for the CLI, read as VS Code reads it: JSONC, `folders` of `{ "path" }`
 * (relative to the file's folder, or absolute) or `{ "uri": "file://…" }` with an optional `name` (default:
 * the folder's base name), and the workspace-wide `settings`. A command works in one of its folders: the one
 * `--folder NAME|PATH` names, else the one holding the current directory, else the first (as the extension
 * does with no editor open). That folder's `.vscode/settings.json` is the folder layer, the workspace file's
 * `settings` the workspace layer (core/config/resolve.ts). The file is outside input: read as any settings
 * file (regular file, size cap), its folder list bounded.
 */
import { statSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readSettingsFile, SettingsError } from './workspaceFile';

/** Folders read from one workspace file at most. */
export const MAX_WORKSPACE_FOLDERS = 256;

interface CodeWorkspaceFolder {
  name: string;
  /** Absolute path. */
  path: string;
}

interface CodeWorkspace {
  /** The `.code-workspace` file (absolute). */
  file: string;
  folders: CodeWorkspaceFolder[];
  /** Its `settings` object (flat or nested `codeact.*` keys, as a settings file). */
  settings: Record<string, unknown>;
}

export function isCodeWorkspaceFile(p: string): boolean {
  return p.endsWith('.code-workspace');
}

export function readCodeWorkspace(file: string): CodeWorkspace {
  const abs = path.resolve(file);
  const data = readSettingsFile(abs);
  if (!Object.keys(data).length && !statSafe(abs))
    throw new SettingsError(`${abs} does not exist. Pass a folder or an existing .code-workspace file as --workspace.`);
  const raw = data.folders;
  if (!Array.isArray(raw) || !raw.length)
    throw new SettingsError(`${abs} lists no folders ("folders": [{ "path": "…" }]). Add a folder to it, or pass a folder as --workspace.`);
  if (raw.length > MAX_WORKSPACE_FOLDERS) throw new SettingsError(`${abs} lists ${raw.length} folders; CodeAct reads at most ${MAX_WORKSPACE_FOLDERS}.`);
  const base = path.dirname(abs);
  const folders: CodeWorkspaceFolder[] = raw.map((f: unknown, i: number) => {
    const entry = (f && typeof f === 'object' ? f : {}) as { path?: unknown; uri?: unknown; name?: unknown };
    let p: string;
    if (typeof entry.path === 'string' && entry.path) p = path.resolve(base, entry.path);
    else if (typeof entry.uri === 'string' && entry.uri.startsWith('file:')) p = fileURLToPath(entry.uri);
    else if (typeof entry.uri === 'string')
      throw new SettingsError(`${abs}: folder ${i + 1} is ${entry.uri.split(':')[0]}: (a remote folder); the CLI works only in local folders.`);
    else throw new SettingsError(`${abs}: folder ${i + 1} has no "path". Each folder is { "path": "relative/or/absolute" }.`);
    const name = typeof entry.name === 'string' && entry.name.trim() ? entry.name.trim().slice(0, 200) : path.basename(p);
    return { name, path: p };
  });
  const settings = data.settings;
  return { file: abs, folders, settings: settings && typeof settings === 'object' && !Array.isArray(settings) ? (settings as Record<string, unknown>) : {} };
}

function statSafe(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** Is `child` the folder `parent` or inside it? */
function inside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * The folder a command works in: `selector` (a folder's name, or its path relative to `cwd`), else the
 * deepest folder holding `cwd`, else the first.
 */
export function pickWorkspaceFolder(ws: CodeWorkspace, selector: string | undefined, cwd = process.cwd()): CodeWorkspaceFolder {
  const names = ws.folders.map((f) => JSON.stringify(f.name)).join(', ');
  if (selector !== undefined) {
    const byName = ws.folders.filter((f) => f.name === selector);
    if (byName.length === 1) return byName[0];
    const wanted = path.resolve(cwd, selector);
    const byPath = ws.folders.find((f) => f.path === wanted);
    if (byPath) return byPath;
    if (byName.length > 1) throw new SettingsError(`${ws.file} has ${byName.length} folders named "${selector}": pass the folder's path as --folder instead.`);
    throw new SettingsError(`${ws.file} has no folder "${selector}". Its folders: ${names}. Pass one of them (a name or a path) as --folder.`);
  }
  const holding = ws.folders.filter((f) => inside(path.resolve(cwd), f.path)).sort((a, b) => b.path.length - a.path.length);
  return holding[0] ?? ws.folders[0];
}
