/**
 * The CLI's settings files, read as VS Code reads them (JSONC): the folder's `.vscode/settings.json`
 * and the user's own `settings.json` in CodeAct's config folder (the CLI's counterpart of VS Code's
 * user settings). Their layers go to the one resolver (resolve.ts), with the command-line flags on top.
 * The extension reads the same keys through VS Code's configuration instead.
 *
 * A settings file is outside input: it is read only when it is a regular file of at most
 * {@link SETTINGS_FILE_MAX_BYTES} ({@link readConfigFile}), so a FIFO, a device or a symbolic link to
 * `/dev/zero` is a clear error, never a process that hangs or fills its memory.
 */
import { closeSync, constants, fstatSync, openSync, readSync, statSync, type Stats } from 'node:fs';
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

/**
 * The user's CLI settings: `$CODEACT_HOME/settings.json`, or `$XDG_CONFIG_HOME/codeact/settings.json` (`~/.config/codeact/…`).
 * `$CODEACT_USER_SETTINGS` names another file: the extension's user-level settings, for the MCP server VS Code starts.
 */
function userSettingsPath(): string {
  if (process.env.CODEACT_USER_SETTINGS) return process.env.CODEACT_USER_SETTINGS;
  const dir = process.env.CODEACT_HOME || path.join(process.env.XDG_CONFIG_HOME || path.join(homedir(), '.config'), 'codeact');
  return path.join(dir, 'settings.json');
}

export function readUserSettings(): Record<string, unknown> {
  return readSettingsFile(userSettingsPath());
}

/** Largest settings or trust file read: 4 MiB (a thousand tool declarations with their schemas fit in one). */
const SETTINGS_FILE_MAX_BYTES = 4 * 1024 * 1024;

/**
 * The bytes of a configuration file, or undefined when there is none. Only a regular file of at most
 * `maxBytes` is read: it is opened without blocking (O_NONBLOCK: a FIFO with no writer does not hang),
 * the opened descriptor is checked (so a symbolic link to a device is judged by what it points to), and
 * the read stops past the cap (a file that grows while it is read). Anything else is a {@link SettingsError}
 * that names the file and says what to do.
 */
export function readConfigFile(file: string, maxBytes = SETTINGS_FILE_MAX_BYTES): Buffer | undefined {
  let fd: number;
  try {
    // Not even opened when it is no regular file (opening some devices does something); the descriptor
    // is checked again below, since the path may change in between.
    const before = statSync(file);
    if (!before.isFile()) throw notRegular(file, before);
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (e) {
    if (e instanceof SettingsError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw new SettingsError(`${file} cannot be read (${code ?? (e as Error).message}). Check the file's permissions.`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw notRegular(file, st);
    if (st.size > maxBytes) throw tooLarge(file, maxBytes);
    const buf = Buffer.allocUnsafe(Math.min(maxBytes, st.size) + 1);
    let got = 0;
    for (;;) {
      const n = readSync(fd, buf, got, buf.length - got, null);
      if (n === 0) break;
      got += n;
      if (got > maxBytes) throw tooLarge(file, maxBytes);
      // The file grew since fstat: read on, up to the cap and one byte more.
      if (got === buf.length) return readGrown(fd, file, buf, maxBytes);
    }
    return buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

function readGrown(fd: number, file: string, first: Buffer, maxBytes: number): Buffer {
  const parts = [first];
  let total = first.length;
  const chunk = Buffer.allocUnsafe(64 * 1024);
  for (;;) {
    const n = readSync(fd, chunk, 0, chunk.length, null);
    if (n === 0) return Buffer.concat(parts, total);
    total += n;
    if (total > maxBytes) throw tooLarge(file, maxBytes);
    parts.push(Buffer.from(chunk.subarray(0, n)));
  }
}

/** What a settings file that cannot be read is told as; the tests compare against these. */
export const SETTINGS_FILE_ERRORS = {
  notRegular: (file: string, kind: string) =>
    `${file} is ${kind}, not a regular file; CodeAct reads settings only from regular files. Replace it with a JSON file, or remove it.`,
  tooLarge: (file: string, mib: number) =>
    `${file} is larger than ${mib} MiB, CodeAct's limit for a settings file. Make it smaller (move large tool schemas into fewer declarations).`,
  fixTheJson: 'Fix the JSON in this file and try again.',
};

function notRegular(file: string, st: Stats): SettingsError {
  const kind = st.isFIFO()
    ? 'a named pipe (FIFO)'
    : st.isCharacterDevice() || st.isBlockDevice()
      ? 'a device'
      : st.isDirectory()
        ? 'a folder'
        : st.isSocket()
          ? 'a socket'
          : 'not a regular file';
  return new SettingsError(SETTINGS_FILE_ERRORS.notRegular(file, kind));
}

function tooLarge(file: string, maxBytes: number): SettingsError {
  return new SettingsError(SETTINGS_FILE_ERRORS.tooLarge(file, maxBytes / (1024 * 1024)));
}

export function readSettingsFile(file: string): Record<string, unknown> {
  const bytes = readConfigFile(file);
  if (bytes === undefined) return {};
  const text = bytes.toString('utf8');
  const errors: ParseError[] = [];
  const value = parse(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length) {
    const e = errors[0];
    const before = text.slice(0, e.offset);
    const line = before.split('\n').length;
    const col = e.offset - before.lastIndexOf('\n');
    throw new SettingsError(`${file}:${line}:${col}: ${printParseErrorCode(e.error)}. ${SETTINGS_FILE_ERRORS.fixTheJson}`);
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

/** A reader for the resolver: flags, then the folder's settings, then a `.code-workspace` file's `settings`, then the user's. */
export function cliSettingsReader(
  flags: Record<string, unknown>,
  folder: Record<string, unknown>,
  user: Record<string, unknown>,
  workspace: Record<string, unknown> = {},
): (key: string) => { flag?: unknown; folder?: unknown; workspace?: unknown; user?: unknown } {
  return (key) => ({ flag: flags[key], folder: codeactSetting(folder, key), workspace: codeactSetting(workspace, key), user: codeactSetting(user, key) });
}
