/**
 * Folder trust for the CLI, the way direnv's `direnv allow` works. A folder's `.vscode/settings.json` can
 * declare tools that run commands, pick the interpreter, turn the sandbox off or point at servers; the
 * CLI obeys those settings only for a folder the user trusted, and only for the exact settings file they
 * trusted: trust is bound to a SHA-256 of the file's content, so a changed file needs trust again.
 *
 * The list lives in the user's config folder (`$CODEACT_HOME/trusted-folders.json`, or
 * `$XDG_CONFIG_HOME/codeact/…`, `~/.config/codeact/…`), written 0600. `--trust-workspace` or
 * `CODEACT_TRUST_WORKSPACE=1` trusts the folder for one invocation (for CI).
 *
 * A `.code-workspace` file is trusted the same way, on its own (`codeact trust app.code-workspace`): its
 * `settings` count only while it is trusted, and each folder's `.vscode/settings.json` only while that folder
 * is. (VS Code's Workspace Trust is the window's: one answer for the workspace file and all its folders.)
 */
import { createHash } from 'node:crypto';
import { mkdirSync, realpathSync } from 'node:fs';
import { writeFileAtomicSync } from '../util/atomicFile';
import { homedir } from 'node:os';
import * as path from 'node:path';
import { readConfigFile, settingsPath } from './workspaceFile';
import { isCodeWorkspaceFile } from './codeWorkspace';

interface TrustEntry {
  folder: string;
  /** SHA-256 of the settings file when it was trusted ("none" when the folder had none). */
  sha256: string;
  trustedAt: string;
}

export type TrustState = { trusted: true; how: 'stored' | 'override' } | { trusted: false; why: 'never' | 'changed' };

export function configDir(): string {
  if (process.env.CODEACT_HOME) return process.env.CODEACT_HOME;
  return path.join(process.env.XDG_CONFIG_HOME || path.join(homedir(), '.config'), 'codeact');
}

function storePath(): string {
  return path.join(configDir(), 'trusted-folders.json');
}

function canonical(folder: string): string {
  try {
    return realpathSync(folder);
  } catch {
    return path.resolve(folder);
  }
}

/**
 * The hash trust is bound to: the settings file's bytes, or "none". A `.code-workspace` file is trusted on
 * its own (its `settings` and its folder list), bound to its own bytes; each of its folders needs its own trust.
 */
export function settingsHash(folder: string): string {
  // Read as the settings are (a regular file under the cap): what is hashed is what is obeyed.
  const bytes = readConfigFile(isCodeWorkspaceFile(folder) ? folder : settingsPath(folder));
  return bytes === undefined ? 'none' : createHash('sha256').update(bytes).digest('hex');
}

export function listTrusted(): TrustEntry[] {
  // Not a regular file, or too large: a SettingsError naming the file (a FIFO must not hang the CLI).
  const bytes = readConfigFile(storePath());
  if (bytes === undefined) return [];
  try {
    const data = JSON.parse(bytes.toString('utf8')) as { folders?: TrustEntry[] };
    return Array.isArray(data.folders) ? data.folders.filter((e) => e && typeof e.folder === 'string' && typeof e.sha256 === 'string').slice(0, 10_000) : [];
  } catch {
    return [];
  }
}

function save(entries: TrustEntry[]): void {
  const dir = configDir();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileAtomicSync(storePath(), JSON.stringify({ folders: entries }, null, 2) + '\n', { mode: 0o600 });
}

export function trustFolder(folder: string): TrustEntry {
  const f = canonical(folder);
  const entry: TrustEntry = { folder: f, sha256: settingsHash(f), trustedAt: new Date().toISOString() };
  save([...listTrusted().filter((e) => e.folder !== f), entry]);
  return entry;
}

export function revokeFolder(folder: string): boolean {
  const f = canonical(folder);
  const entries = listTrusted();
  const kept = entries.filter((e) => e.folder !== f);
  if (kept.length === entries.length) return false;
  save(kept);
  return true;
}

/** Is this folder trusted, with its settings file as it is now? */
export function folderTrust(folder: string, override = false): TrustState {
  if (override) return { trusted: true, how: 'override' };
  const f = canonical(folder);
  const entry = listTrusted().find((e) => e.folder === f);
  if (!entry) return { trusted: false, why: 'never' };
  return entry.sha256 === settingsHash(f) ? { trusted: true, how: 'stored' } : { trusted: false, why: 'changed' };
}
