/**
 * How the workspace appears inside the bubblewrap sandbox (`codeact.sandbox.mountWorkspace`).
 *
 * `readwrite` binds the workspace writable, then binds its configuration read-only over it: `.git`
 * (a folder, or the pointer file of a worktree or submodule, and the folder it points to when that is
 * inside the workspace), `.vscode` and `.codeact`, and the folders of its own interpreter, `.venv` and
 * `venv` (pythonEnv.ts: the host probes them and runs pip in them, outside the sandbox). Code in the
 * sandbox must not reconfigure CodeAct, plant git hooks and config (`core.fsmonitor`, `core.hooksPath`)
 * or make an interpreter (or a `.pth` file in one) that runs on the host later.
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
 * Files that declared tools run on the host (hostFiles.ts) are bound read-only too: a program's or
 * script's folder (or its virtual environment), other paths themselves. One that cannot be protected
 * (a script at the top of the workspace, a symbolic link, a missing file at the top) makes the whole
 * workspace read-only, with a warning.
 *
 * Not covered: nested repositories' `.git` folders below the top level, what a tool's program loads
 * from elsewhere in the workspace (node_modules, a package outside the script's folder, its data), and
 * other files that tools run later (Makefile, package.json scripts, .devcontainer): review the code's
 * changes before you run them.
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmdirSync, rmSync, statSync, writeFileSync, type Stats } from 'node:fs';
import * as path from 'node:path';
import { isUnder } from '../../util/paths';
import { VENV_DIRS } from './pythonEnv';

export type WorkspaceMount = 'none' | 'readonly' | 'readwrite';

/** Top-level names kept read-only inside a writable workspace. */
export const PROTECTED_NAMES = ['.git', '.vscode', '.codeact', ...VENV_DIRS] as const;

interface WorkspaceView {
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

/** `p` is a placeholder this process holds, as it made it (its note only). */
export function isPlaceholder(p: string): boolean {
  const held = placeholders.get(p);
  if (!held) return false;
  const st = lstatOrUndefined(p);
  return !!st?.isDirectory() && st.dev === held.dev && st.ino === held.ino && readdirSync(p).every((n) => n === PLACEHOLDER_NOTE);
}

/**
 * Takes over a placeholder this process holds at `p` (the sandboxes keep it read-only) so that the host can
 * fill it, as `install_packages` does with a new `.venv`: it becomes an ordinary folder of the host's, empty and
 * writable on the host, which the sandboxes that bound it keep seeing read-only and which is never
 * removed as a placeholder. False when `p` is not such a placeholder, as this process made it.
 */
export function adoptPlaceholder(p: string): boolean {
  if (!isPlaceholder(p)) return false;
  placeholders.delete(p);
  chmodSync(p, 0o755);
  rmSync(path.join(p, PLACEHOLDER_NOTE), { force: true });
  return true;
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

/** A path the host runs (hostFiles.ts: what each tool source and the runtime declare). */
export interface HostRunFile {
  path: string;
  /** The program or a script: its whole folder is kept read-only. */
  program: boolean;
  /** The tool that runs it ("" for the runtime's own interpreter). */
  tool: string;
  /** Who runs it, for the warning (default: `tool "<tool>"`). */
  by?: string;
  /**
   * A missing path whose first folder does not exist either gets a placeholder there (so the code cannot
   * create it), instead of making the whole workspace read-only: the folder's interpreter.
   */
  placeholder?: boolean;
}

/** The folder of a Python virtual environment (it holds pyvenv.cfg) that `p` lies in, inside `root`. */
function venvOf(root: string, p: string): string | undefined {
  for (let d = path.dirname(p); isUnder(d, root) && d !== root; d = path.dirname(d)) {
    if (lstatOrUndefined(path.join(d, 'pyvenv.cfg'))?.isFile()) return d;
  }
  return undefined;
}

/**
 * What to bind read-only so that a file the host runs cannot be changed, or a reason it cannot be
 * protected. A program or script: its folder (an interpreter imports the script's neighbours first,
 * so a new `json.py` beside it would run on the host), or its virtual environment. Another path:
 * itself. A missing path: the nearest folder that exists, so it cannot be created. No folder on the
 * way to what is bound may be a symbolic link (code could replace the link); a link inside it that
 * points elsewhere in the workspace has its target protected too.
 */
function hostRunTargets(root: string, f: HostRunFile, depth = 0): string[] | { problem: string } {
  const rel = path.relative(root, f.path);
  let nearest = root;
  let missing = false;
  for (const part of rel.split(path.sep)) {
    const next = path.join(nearest, part);
    if (!lstatOrUndefined(next)) {
      missing = true;
      break;
    }
    nearest = next;
  }
  let target: string;
  const venv = venvOf(root, f.path);
  if (venv) target = venv;
  else if (missing) {
    if (nearest === root) return { problem: 'it does not exist, so code could create it' };
    target = nearest;
  } else if (f.program && statOrUndefined(f.path)?.isFile()) {
    target = path.dirname(f.path);
    if (target === root) return { problem: 'it lies at the top of the workspace, where the files beside it (which it may import) cannot be kept read-only' };
  } else target = f.path;
  for (let d = target; d !== root && isUnder(d, root); d = path.dirname(d)) {
    if (lstatOrUndefined(d)?.isSymbolicLink())
      return { problem: `${path.relative(root, d)} is a symbolic link, which the sandbox cannot keep read-only (code could replace the link)` };
  }
  const targets = [target];
  if (!missing && depth === 0) {
    const realRoot = realpathSync(root);
    const real = realpathSync(f.path);
    if (isUnder(real, realRoot) && !isUnder(real, realpathSync(target))) {
      const more = hostRunTargets(root, { ...f, path: path.join(root, path.relative(realRoot, real)) }, 1);
      if (!Array.isArray(more)) return more;
      targets.push(...more);
    }
  }
  return targets;
}

function statOrUndefined(p: string): Stats | undefined {
  try {
    return statSync(p);
  } catch {
    return undefined;
  }
}

/**
 * The bwrap options for the workspace. `setuidGuard`: the seccomp filter that refuses setuid and
 * setgid modes is installed (without it, `readwrite` is mounted read-only). `hostRun`: files that
 * declared tools run on the host, kept read-only in a writable workspace (or, where one cannot be
 * protected, the whole workspace is read-only, with a warning).
 */
/**
 * `staged`: review mode (./stagedWorkspace), where `dir` is the overlay in the sandbox's namespaces. What exists is
 * protected as always (what the host runs stays read-only, so a Keep All cannot carry a changed tool script in), but
 * no placeholder is made in the workspace: the workspace sees no write before Keep, and a protected name the code
 * creates in its view is never listed, so never kept.
 */
export function planWorkspaceMount(dir: string, requested: WorkspaceMount, setuidGuard: boolean, hostRun: HostRunFile[] = [], staged = false): WorkspaceView {
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
        if (staged || !holdPlaceholder(p)) continue;
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
    // After the writable bind: what the host runs stays read-only.
    const bound = new Set<string>();
    for (const f of hostRun) {
      if (!isUnder(f.path, dir) || f.path === dir) continue;
      const top = path.join(dir, path.relative(dir, f.path).split(path.sep)[0]);
      if (f.placeholder && !lstatOrUndefined(top)) {
        if (!staged && !bound.has(top) && holdPlaceholder(top)) {
          held.push(top);
          bound.add(top);
          args.push('--ro-bind', top, top);
        }
        continue;
      }
      const t = hostRunTargets(dir, f);
      if (!Array.isArray(t)) {
        return readOnly(
          `codeact.sandbox.mountWorkspace is "readwrite", but ${f.by ?? `tool "${f.tool}"`} runs ${path.relative(dir, f.path)} on the host and ${t.problem}: ` +
            "the workspace is mounted read-only instead. Keep the tool's program and scripts in a folder of their own (for example tools/), as real files.",
        );
      }
      for (const target of t) {
        if (bound.has(target)) continue;
        bound.add(target);
        args.push('--ro-bind', target, target);
      }
    }
  } catch (e) {
    return readOnly(
      `codeact.sandbox.mountWorkspace is "readwrite", but the workspace's configuration could not be protected (${(e as Error).message}): it is mounted read-only instead.`,
    );
  }
  return { args, mode: 'readwrite', placeholders: held };
}
