/**
 * Finds the real Python interpreter once (never a pyenv/asdf shim, which costs ~50 ms a spawn: Python
 * names the binary the shim ran) and learns where its standard library and site-packages live, so a
 * sandbox can mount them read-only. A venv's interpreter stays the venv's (its `bin/python` is a link
 * to the base interpreter; resolving it would lose the venv and its packages).
 */
import { execFile } from 'node:child_process';
import { lstatSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { CodeActError } from '../../util/errors';

export interface PythonInfo {
  /**
   * Absolute path of the interpreter, as Python itself names it (`sys.executable`): a venv's own
   * `bin/python`, never resolved to the base interpreter it links to (that would lose the venv).
   */
  executable: string;
  version: string;
  prefix: string;
  basePrefix: string;
  /** Existing directories on sys.path. */
  path: string[];
  /**
   * The interpreter's own folders a sandbox mounts read-only: its prefixes (stdlib, headers, scripts)
   * and site-packages folders. Not what `.pth` files add to sys.path (see `editable`).
   */
  roots: string[];
  /**
   * Editable installs of other projects (folders that `.pth` files put on sys.path, and setuptools'
   * editable finders): only each package's own folder or module file, never the project around it
   * (its .env, .ssh or other source).
   */
  editable: string[];
}

const cache = new Map<string, Promise<PythonInfo>>();

/**
 * Folders that `.pth` files add (sys.path entries outside the interpreter's own folders) contribute
 * only the packages installed from them: names that a distribution's top_level.txt declares, else the
 * folders holding an __init__.py. setuptools' editable finders (`__editable___*_finder`) name each
 * package's folder in MAPPING. Bounded: a folder's first 2,000 entries, 64 packages per folder.
 */
const PROBE = String.raw`
import sys, json, os, site
def under(p, roots):
    return any(p == r or p.startswith(r.rstrip(os.sep) + os.sep) for r in roots)
prefixes = sorted({os.path.abspath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix) if p})
sites = [os.path.abspath(p) for p in (site.getsitepackages() if hasattr(site, "getsitepackages") else []) if os.path.isdir(p)]
roots = prefixes + [p for p in sites if not under(p, prefixes)]
paths = [os.path.abspath(p) for p in sys.path if p and os.path.isdir(p)]
roots += [p for p in paths if under(p, prefixes) and p not in roots]
extra = [p for p in paths if not under(p, roots)]
declared = set()
if extra:
    try:
        from importlib import metadata
        for dist in metadata.distributions(path=sites or None):
            for line in (dist.read_text("top_level.txt") or "").splitlines()[:64]:
                if line.strip():
                    declared.add(line.strip())
    except Exception:
        pass
editable = []
for p in extra:
    try:
        names = sorted(os.listdir(p))[:2000]
    except OSError:
        continue
    found = []
    for n in names:
        if n.startswith(".") or len(found) >= 64:
            continue
        full = os.path.join(p, n)
        stem = n.split(".")[0]
        if stem in declared and (os.path.isdir(full) or n.endswith((".py", ".so", ".pyd"))):
            found.append(full)
    if not found:
        found = [os.path.join(p, n) for n in names if not n.startswith(".") and os.path.isfile(os.path.join(p, n, "__init__.py"))][:64]
    editable += found
for name, mod in list(sys.modules.items()):
    if name.startswith("__editable__") and isinstance(getattr(mod, "MAPPING", None), dict):
        editable += [os.path.abspath(v) for v in list(mod.MAPPING.values())[:64] if isinstance(v, str) and os.path.exists(v)]
print(json.dumps({"executable": os.path.abspath(sys.executable) if sys.executable else "", "version": sys.version.split()[0], "prefix": sys.prefix,
    "basePrefix": sys.base_prefix, "path": paths, "roots": roots, "editable": sorted(set(editable))}))
`;

class PythonNotFoundError extends CodeActError {
  readonly category = 'environment' as const;
  constructor(command: string, detail: string) {
    super(
      `Python was not found: "${command}" could not be started (${detail}). ` +
        'Install Python 3.9 or newer, or point codeact.python.path (CLI: --python; in VS Code: CodeAct: Select Python Environment) at an interpreter.',
    );
    this.name = 'PythonNotFoundError';
  }
}

export function resolvePython(command = 'python3'): Promise<PythonInfo> {
  // An interpreter that changed since it was probed (a venv made anew at the same path, another base Python, a
  // replaced link or file) is probed anew: the identity of the interpreter, its link and its pyvenv.cfg is the key.
  const key = `${command}\0${interpreterStamp(command)}`;
  let pending = cache.get(key);
  if (!pending) {
    pending = probe(command);
    cache.set(key, pending);
    pending.catch(() => cache.delete(key));
  }
  return pending;
}

/** dev, inode, mtime and size of the interpreter (the link and what it leads to) and of its venv's pyvenv.cfg. */
function interpreterStamp(command: string): string {
  if (!path.isAbsolute(command)) return '';
  const stamp = (p: string, link = false) => {
    try {
      const st = link ? lstatSync(p) : statSync(p);
      return `${st.dev}:${st.ino}:${st.mtimeMs}:${st.size}`;
    } catch {
      return '-';
    }
  };
  return [stamp(command, true), stamp(command), stamp(path.join(path.dirname(path.dirname(command)), 'pyvenv.cfg'))].join('/');
}

function probe(command: string): Promise<PythonInfo> {
  return new Promise((resolve, reject) => {
    execFile(command, ['-I', '-c', PROBE], { timeout: 15_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } }, (err, stdout, stderr) => {
      if (err) {
        const detail = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such command' : (stderr.trim().split('\n').pop() ?? err.message);
        reject(new PythonNotFoundError(command, detail));
        return;
      }
      try {
        const info = JSON.parse(stdout) as PythonInfo;
        if (!info.executable || info.executable === '/') {
          reject(new PythonNotFoundError(command, 'it does not know its own path (sys.executable is empty)'));
          return;
        }
        const [major, minor] = info.version.split('.').map(Number);
        if (major !== 3 || minor < 9) {
          reject(new PythonNotFoundError(command, `found Python ${info.version}; 3.9 or newer is needed`));
          return;
        }
        resolve(info);
      } catch {
        reject(new PythonNotFoundError(command, `unexpected output: ${stdout.slice(0, 200)}`));
      }
    });
  });
}
