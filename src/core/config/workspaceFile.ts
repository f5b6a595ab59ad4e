/**
 * The CLI's settings files, read as VS Code reads them (JSONC): the folder's `.vscode/settings.json`
 * and the user's own `settings.json` in CodeAct's config folder (the CLI's counterpart of VS Code's
 * user settings). Their layers go to the one resolver (resolve.ts), with the command-line flags on top.
 * The extension reads the same keys through VS Code's configuration instead.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import * as path from 'node:path';
import { parse, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { CodeActError } from '../util/errors';

export class SettingsError extends CodeActError {
  readonly category = 'config' as const;
  constructor(message: string) {
    super(message);
    this.name = 'SettingsError';
  }
}

export function settingsPath(workspace: string): string {
  return path.join(workspace, '.vscode', 'settings.json');
}

/** Returns the flat settings object (`{"codeact.tools": [...], ...}`), or `{}` when there is no file. */
export function readWorkspaceSettings(workspace: string): Record<string, unknown> {
  return readSettingsFile(settingsPath(workspace));
}

/** The user's CLI settings: `$CODEACT_HOME/settings.json`, or `$XDG_CONFIG_HOME/codeact/settings.json` (`~/.config/codeact/…`). */
export function userSettingsPath(): string {
  const dir = process.env.CODEACT_HOME || path.join(process.env.XDG_CONFIG_HOME || path.join(homedir(), '.config'), 'codeact');
  return path.join(dir, 'settings.json');
}

export function readUserSettings(): Record<string, unknown> {
  return readSettingsFile(userSettingsPath());
}

export function readSettingsFile(file: string): Record<string, unknown> {
  if (!existsSync(file)) return {};
  const text = readFileSync(file, 'utf8');
  const errors: ParseError[] = [];
  const value = parse(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length) {
    const e = errors[0];
    const before = text.slice(0, e.offset);
    const line = before.split('\n').length;
    const col = e.offset - before.lastIndexOf('\n');
    throw new SettingsError(`${file}:${line}:${col}: ${printParseErrorCode(e.error)}. Fix the JSON in this file and try again.`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new SettingsError(`${file} must contain a JSON object.`);
  return value as Record<string, unknown>;
}

/** Reads `codeact.<key>`, either flat ("codeact.tools") or nested ({"codeact": {"tools": …}}). */
export function codeactSetting<T = unknown>(settings: Record<string, unknown>, key: string): T | undefined {
  if (`codeact.${key}` in settings) return settings[`codeact.${key}`] as T;
  const nested = settings.codeact as Record<string, unknown> | undefined;
  return nested && typeof nested === 'object' ? (nested[key] as T | undefined) : undefined;
}

/** A reader for the resolver: flags, then the folder's settings, then the user's. */
export function cliSettingsReader(flags: Record<string, unknown>, folder: Record<string, unknown>, user: Record<string, unknown>): (key: string) => { flag?: unknown; folder?: unknown; user?: unknown } {
  return (key) => ({ flag: flags[key], folder: codeactSetting(folder, key), user: codeactSetting(user, key) });
}
