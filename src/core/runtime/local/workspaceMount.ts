/**
 * How the workspace appears inside the bubblewrap sandbox (`codeact.sandbox.mountWorkspace`).
 *
 * `readwrite` binds the workspace writable, then binds its configuration read-only over it: `.git`
 * (a folder, or the pointer file of a worktree or submodule, and the folder it points to when that is
 * inside the workspace), `.vscode` and `.codeact`. Code in the sandbox must not reconfigure CodeAct or
 * plant git hooks and config (`core.fsmonitor`, `core.hooksPath`) that run on the host later.
 *
 * - A name that does not exist yet gets a placeholder folder on the host (read-only, holding a note)
 *   for as long as a sandbox uses it, bound read-only, so the code cannot create it: a mount point
 *   cannot be removed or renamed from inside the mount namespace that holds the mount. The host
 *   removes the placeholder (when it is still as it made it) after the last sandbox using it ends.
 * - A name that is a symbolic link cannot be protected this way (a mount follows the link, and the
 *   link itself stays replaceable), so then the whole workspace is mounted read-only, with a warning.
 * - Without the seccomp filter (which refuses setuid and setgid modes) a writable workspace could
 *   receive setuid programs, so then the workspace is mounted read-only too, with a warning.
 *
 * Not covered: nested repositories' `.git` folders below the top level, and other files that tools
 * run later (Makefile, package.json scripts, .devcontainer): review the code's changes before you run them.
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmdirSync, rmSync, writeFileSync, type Stats } from 'node:fs';
import * as path from 'node:path';

export type WorkspaceMount = 'none' | 'readonly' | 'readwrite';

/** Top-level names kept read-only inside a writable workspace. */
export const PROTECTED_NAMES = ['.git', '.vscode', '.codeact'] as const;

export interface WorkspaceView {
  /** bwrap options that mount the workspace. */
  args: string[];
  /** What the code gets. */
  mode: WorkspaceMount;
  /** Why the workspace is read-only although `readwrite` was asked for. */
  warning?: string;
  /** Placeholders this view holds on the host (released with the sandbox). */
  placeholders: string[];
}

interface Placeholder {
  users: number;
  dev: number;
  ino: number;
}

/** Placeholders made by this process, shared by the sandboxes alive at the same time. */
const placeholders = new Map<string, Placeholder>();

function lstatOrUndefined(p: string): Stats | undefined {
  try {
    return lstatSync(p);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** True when `child` is `parent` or inside it. */
export function isUnder(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

const PLACEHOLDER_NOTE = 'README.codeact';
const PLACEHOLDER_TEXT =
  'CodeAct keeps this folder read-only inside its sandbox while code runs with mountWorkspace "readwrite", so that the code\n' +
  'cannot create it. CodeAct removes it when the sandbox ends. If CodeAct is not running, you can delete it.\n';

/**
 * A placeholder folder at `p` for as long as a sandbox needs it; false when the host may not create it.
 * It holds a note and is made read-only (0555), so that cleaning the workspace on the host (`git clean
 * -fdx`, moving it to the trash) cannot remove it under a running sandbox: removing a mount point on the
 * host detaches the sandbox's read-only mount, and the code could then create the name.
 */
function holdPlaceholder(p: string): boolean {
  const held = placeholders.get(p);
  if (held) {
    held.users++;
    return true;
  }
  try {
    mkdirSync(p, { mode: 0o755 });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    // The workspace root is not writable for this user: then the sandboxed code (the same user, with
    // no capabilities) cannot create the name either.
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return false;
    throw e;
  }
  writeFileSync(path.join(p, PLACEHOLDER_NOTE), PLACEHOLDER_TEXT, { mode: 0o444 });
  chmodSync(p, 0o555);
  const st = lstatSync(p);
  placeholders.set(p, { users: 1, dev: st.dev, ino: st.ino });
  return true;
}

/** Gives back the placeholders of a view; the last user removes each one that is still as it made it. */
export function releasePlaceholders(paths: string[]): void {
  for (const p of paths) {
    const held = placeholders.get(p);
    if (!held || --held.users > 0) continue;
    placeholders.delete(p);
    try {
      const st = lstatSync(p);
      if (!st.isDirectory() || st.dev !== held.dev || st.ino !== held.ino) continue;
      if (readdirSync(p).some((n) => n !== PLACEHOLDER_NOTE)) continue;
      chmodSync(p, 0o755);
      rmSync(path.join(p, PLACEHOLDER_NOTE), { force: true });
      rmdirSync(p);
    } catch {
      // Someone on the host put files there, or it is gone: it is not ours to remove.
    }
  }
}

/** The folder a `.git` pointer file (worktree, submodule) names, when it is inside the workspace. */
function gitdirTarget(root: string, gitFile: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(gitFile, 'utf8').slice(0, 4096);
  } catch {
    return undefined;
  }
  const m = /^gitdir:\s*(.+?)\s*$/m.exec(text);
  if (!m) return undefined;
  try {
    const target = realpathSync(path.resolve(root, m[1]));
    return isUnder(target, realpathSync(root)) ? target : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The bwrap options for the workspace. `setuidGuard`: the seccomp filter that refuses setuid and
 * setgid modes is installed (without it, `readwrite` is mounted read-only).
 */
export function planWorkspaceMount(dir: string, requested: WorkspaceMount, setuidGuard: boolean): WorkspaceView {
  const held: string[] = [];
  const readOnly = (warning?: string): WorkspaceView => {
    // Placeholders made before the fallback was decided are given back.
    releasePlaceholders(held);
    return { args: ['--ro-bind', dir, dir], mode: 'readonly', warning, placeholders: [] };
  };
  if (requested === 'none') return { args: [], mode: 'none', placeholders: [] };
  if (requested === 'readonly') return readOnly();
  if (!setuidGuard) {
    return readOnly(
      'codeact.sandbox.mountWorkspace is "readwrite", but the sandbox has no seccomp filter on this machine (it is built for x86_64 and aarch64), ' +
        'so nothing would stop the code from leaving setuid programs in the workspace: it is mounted read-only instead.',
    );
  }
  const args = ['--bind', dir, dir];
  const real = realpathSync(dir);
  try {
    for (const name of PROTECTED_NAMES) {
      const p = path.join(dir, name);
      const st = lstatOrUndefined(p);
      if (st?.isSymbolicLink()) {
        return readOnly(
          `codeact.sandbox.mountWorkspace is "readwrite", but ${name} in the workspace is a symbolic link, which the sandbox cannot keep read-only ` +
            `(code could replace the link): the workspace is mounted read-only instead. Replace the link with a real folder to get a writable workspace.`,
        );
      }
      if (!st) {
        if (!holdPlaceholder(p)) continue;
        held.push(p);
      }
      args.push('--ro-bind', p, p);
      if (name === '.git' && st?.isFile()) {
        const target = gitdirTarget(dir, p);
        if (target && target !== real) {
          // Mounted at the same place as seen through the workspace path.
          const inside = path.join(dir, path.relative(real, target));
          args.push('--ro-bind', inside, inside);
        }
      }
    }
  } catch (e) {
    return readOnly(`codeact.sandbox.mountWorkspace is "readwrite", but the workspace's configuration could not be protected (${(e as Error).message}): it is mounted read-only instead.`);
  }
  return { args, mode: 'readwrite', placeholders: held };
}
