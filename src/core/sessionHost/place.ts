/**
 * Where a session host lives: a private folder of ours ($XDG_RUNTIME_DIR/codeact, else
 * <tmpdir>/codeact-<uid>), 0700, a real directory owned by this user (anything else is refused with a
 * clear message: a planted symlink or another user's folder would hand our socket to them). In it, per
 * host: its socket, its token (0600), its lock (the host's pid) and its log. A host's name is a hash of
 * the workspace folder and the runtime's options, so another workspace (or another sandbox) has another host.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { canonicalJson } from '../../common/canonicalJson';
import { writeFileAtomicSync } from '../util/atomicFile';
import { CodeActError } from '../util/errors';
import { randomToken } from '../util/ids';

/** The folder is not ours, not private, or not a folder: the host is not started or reached there. */
export class HostFolderError extends CodeActError {
  readonly category = 'environment' as const;
  constructor(message: string) {
    super(message);
    this.name = 'HostFolderError';
  }
}

/** The folder of our session hosts for this user (`env` decides; the process's environment by default). */
export function hostFolder(env: NodeJS.ProcessEnv = process.env): string {
  const runtimeDir = env.XDG_RUNTIME_DIR;
  if (runtimeDir && path.isAbsolute(runtimeDir)) return path.join(runtimeDir, 'codeact');
  return path.join(tmpdir(), `codeact-${process.getuid?.() ?? 'user'}`);
}

const uid = () => process.getuid?.() ?? -1;

/**
 * Checks that `dir` is a private folder of ours (created 0700 when missing): a real directory, not a
 * symlink, owned by this user, with no access for group or others. Throws {@link HostFolderError} otherwise.
 */
export function ensurePrivateFolder(dir: string): string {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new HostFolderError(`Cannot create the session host's folder ${dir}: ${(e as Error).message}.`);
  }
  const st = lstatSync(dir);
  const fix = `Remove it (or set XDG_RUNTIME_DIR to a private folder of yours) and try again.`;
  if (st.isSymbolicLink()) throw new HostFolderError(`The session host's folder ${dir} is a symbolic link, not a folder of ours; refusing to use it. ${fix}`);
  if (!st.isDirectory()) throw new HostFolderError(`The session host's folder ${dir} is not a folder; refusing to use it. ${fix}`);
  if (st.uid !== uid()) throw new HostFolderError(`The session host's folder ${dir} belongs to another user (uid ${st.uid}); refusing to use it. ${fix}`);
  if ((st.mode & 0o077) !== 0) {
    // Ours, but open to others: made private before anything secret goes in (nothing of ours is in it yet
    // unless it was always ours; a socket another user could reach was never safe to trust).
    chmodSync(dir, 0o700);
    if ((lstatSync(dir).mode & 0o077) !== 0) throw new HostFolderError(`The session host's folder ${dir} cannot be made private (mode 0700). ${fix}`);
  }
  return dir;
}

/** The files of one host in the folder. */
export interface HostPlace {
  dir: string;
  name: string;
  socket: string;
  token: string;
  lock: string;
  log: string;
}

export function placeOf(dir: string, name: string): HostPlace {
  const at = (ext: string) => path.join(dir, `${name}.${ext}`);
  return { dir, name, socket: at('sock'), token: at('token'), lock: at('lock'), log: at('log') };
}

/** The host's name for a workspace folder and the runtime's options (JSON-able; callbacks are left out). */
export function hostName(workspace: string, options: unknown): string {
  const key = canonicalJson(JSON.parse(JSON.stringify({ workspace: path.resolve(workspace), options: options ?? null })));
  return createHash('sha256').update(key).digest('hex').slice(0, 20);
}

/** The names of the hosts whose socket is in the folder. */
export function hostNames(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((f) => /^[0-9a-f]{20}\.sock$/.test(f))
      .map((f) => f.slice(0, -'.sock'.length))
      .sort();
  } catch {
    return [];
  }
}

/** A new token for a host, written 0600 (whole or not at all). */
export function writeToken(place: HostPlace): string {
  const token = randomToken(32);
  writeFileAtomicSync(place.token, token, { mode: 0o600 });
  return token;
}

/** The host's token, read by a client (undefined when the host has not written it). */
export function readToken(place: HostPlace): string | undefined {
  try {
    const st = lstatSync(place.token);
    if (!st.isFile() || st.uid !== uid() || (st.mode & 0o077) !== 0) return undefined;
    return readFileSync(place.token, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** Compares a token from a socket with the host's, in constant time. */
export function sameToken(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}
