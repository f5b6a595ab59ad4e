/**
 * What `install_packages` needs to know of the session's interpreter before it installs: is it a virtual
 * (or conda) environment we may write to, or a system / externally-managed Python (PEP 668) we must not;
 * is it a uv environment; does it have pip. Read by running the interpreter itself (bounded, 15 s).
 */
import { execFile } from 'node:child_process';

export interface PythonEnvironment {
  /** `sys.executable`. */
  executable: string;
  version: string;
  prefix: string;
  /** A venv or virtualenv (`sys.prefix != sys.base_prefix`). */
  venv: boolean;
  /** A conda environment (`conda-meta` in the prefix): installable, though not a venv. */
  conda: boolean;
  /** PEP 668's `EXTERNALLY-MANAGED` marker is in the standard library folder. */
  externallyManaged: boolean;
  /** The venv was made by uv (`uv = …` in pyvenv.cfg). */
  uv: boolean;
  /** `import pip` would work. */
  pip: boolean;
}

const PROBE = String.raw`
import json, os, sys, sysconfig, importlib.util
cfg = os.path.join(sys.prefix, "pyvenv.cfg")
uv = False
if os.path.isfile(cfg):
    with open(cfg, encoding="utf-8", errors="replace") as f:
        uv = any(line.split("=", 1)[0].strip() == "uv" for line in f.read(65536).splitlines() if "=" in line)
stdlib = sysconfig.get_path("stdlib") or ""
print(json.dumps({
    "executable": sys.executable, "version": "%d.%d.%d" % sys.version_info[:3], "prefix": sys.prefix,
    "venv": sys.prefix != getattr(sys, "base_prefix", sys.prefix) or hasattr(sys, "real_prefix"),
    "conda": os.path.isdir(os.path.join(sys.prefix, "conda-meta")),
    "externallyManaged": os.path.isfile(os.path.join(stdlib, "EXTERNALLY-MANAGED")),
    "uv": uv, "pip": importlib.util.find_spec("pip") is not None,
}))
`;

export function inspectEnvironment(python: string, env: NodeJS.ProcessEnv = process.env): Promise<PythonEnvironment> {
  return new Promise((resolve, reject) => {
    execFile(python, ['-I', '-c', PROBE], { timeout: 15_000, maxBuffer: 64 * 1024, env }, (err, stdout, stderr) => {
      if (err) {
        const why =
          (err as NodeJS.ErrnoException).code === 'ENOENT'
            ? 'it was not found'
            : `${String(stderr || err.message)
                .trim()
                .slice(0, 300)}`;
        reject(new Error(`install_packages: could not run the session's Python "${python}" (${why}). Check codeact.python.path.`));
        return;
      }
      try {
        resolve(JSON.parse(String(stdout).trim().split('\n').pop() ?? '') as PythonEnvironment);
      } catch {
        reject(new Error(`install_packages: the session's Python "${python}" did not describe itself (${String(stdout).slice(0, 200)}).`));
      }
    });
  });
}

/**
 * Why pip must not write to this interpreter, or undefined when it may. Only a virtual environment or a conda
 * environment is installed into: a system Python (Debian's /usr/bin/python3, Homebrew's, a pyenv or python.org
 * build shared by every project) is left as its owner set it up, marker or not.
 */
export function refusal(e: PythonEnvironment): string | undefined {
  if (e.venv) return undefined;
  if (e.externallyManaged)
    return `${e.executable} is an externally-managed Python (PEP 668: its owner, such as the OS's package manager, installs its packages)`;
  if (e.conda) return undefined;
  return `${e.executable} is a system Python, not a virtual environment (installing there would change it for every project that uses it)`;
}
