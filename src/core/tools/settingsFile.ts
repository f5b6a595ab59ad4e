/**
 * Reads CodeAct settings from a workspace's `.vscode/settings.json` (JSONC, as VS Code writes it),
 * for the CLI. The extension reads the same keys through VS Code's configuration instead.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse, printParseErrorCode, type ParseError } from 'jsonc-parser';

export class SettingsError extends Error {
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
  const file = settingsPath(workspace);
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
