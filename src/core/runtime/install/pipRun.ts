/**
 * Runs the installer (pip or uv, and `python -m venv`) outside the sandbox: its output streams to
 * `onOutput` (at most {@link MAX_STREAMED} characters, then one note), a head and a tail of it are kept to
 * tell what failed, it has a timeout, and the signal (Stop) kills its whole process tree (pip's build
 * subprocesses too). It starts through the tools' launcher (core/util/launcher), so it dies with
 * the host (a SIGKILL, a crash) and its timeout holds even when the host cannot act on it.
 *
 * Its working directory is an empty folder of its own, made by the host for this run (mkdtemp, 0700, in the
 * host's temporary folder, never inside the workspace) and removed afterwards: `python -m pip` puts its
 * working directory first on sys.path, and pip and uv resolve relative names ("x.whl", "./pkg") and read
 * project files (uv.toml, pyproject.toml) from it, so it must hold nothing the sandboxed code could write.
 */
import { realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { killTree } from '../../util/processTree';
import { isUnder } from '../../util/paths';
import { ownTempDir } from '../local/tempFolders';
import { spawnGuarded } from '../../util/launcher';

/** Characters of output streamed to the card at most; the rest is counted, not shown. */
const MAX_STREAMED = 256 * 1024;
const KEEP = 32 * 1024;

interface InstallerRun {
  argv: string[];
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  signal: AbortSignal;
  /** The folder the sandboxed code may write (the workspace): the working directory is never inside it. */
  workspace?: string;
  onOutput(stream: 'stdout' | 'stderr', text: string): void;
}

export interface InstallerOutcome {
  exitCode: number | null;
  /** 'timeout' | 'stopped' | a spawn error's text; undefined when it ran to its end. */
  ended?: string;
  /** The output's first and last parts (for the failure's reason). */
  head: string;
  tail: string;
}

/** An empty folder only this user can enter, outside `workspace`: the installer's working directory. */
function privateCwd(workspace: string | undefined): string {
  const dir = ownTempDir('install');
  const real = realpathSync(dir);
  if (workspace && (isUnder(real, workspace) || isUnder(real, realpathSync(workspace)))) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(
      `install_packages: the temporary folder ${tmpdir()} is inside the workspace ${workspace}, which the code can write, so pip would run among the code's files. Set TMPDIR to a folder outside the workspace.`,
    );
  }
  return dir;
}

export function runInstaller(o: InstallerRun): Promise<InstallerOutcome> {
  let cwd: string;
  try {
    cwd = privateCwd(o.workspace);
  } catch (e) {
    return Promise.resolve({ exitCode: null, ended: (e as Error).message, head: '', tail: '' });
  }
  return runIn(o, cwd).finally(() => rmSync(cwd, { recursive: true, force: true }));
}

function runIn(o: InstallerRun, cwd: string): Promise<InstallerOutcome> {
  return new Promise((resolve) => {
    let head = '';
    let tail = '';
    let streamed = 0;
    let noted = false;
    let ended: string | undefined;
    const env = Object.fromEntries(Object.entries(o.env).filter((e): e is [string, string] => e[1] !== undefined));
    const child = spawnGuarded(o.argv[0], o.argv.slice(1), { cwd, env }, o.timeoutMs);
    child.stdin.on('error', () => {});
    child.stdin.end();
    const keep = (text: string) => {
      if (head.length < KEEP) head += text.slice(0, KEEP - head.length);
      tail = (tail + text).slice(-KEEP);
    };
    const take = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      keep(text);
      if (streamed < MAX_STREAMED) {
        const part = text.slice(0, MAX_STREAMED - streamed);
        streamed += part.length;
        o.onOutput(stream, part);
      } else if (!noted) {
        noted = true;
        o.onOutput('stderr', `\n[codeact: the installer's output passed ${MAX_STREAMED / 1024} KiB; the rest is not shown]\n`);
      }
    };
    child.stdout.on('data', take('stdout'));
    child.stderr.on('data', take('stderr'));
    const stop = (why: string) => {
      if (ended) return;
      ended = why;
      if (child.pid) killTree(child.pid);
    };
    const timer = setTimeout(() => stop('timeout'), o.timeoutMs);
    const onAbort = () => stop('stopped');
    if (o.signal.aborted) onAbort();
    else o.signal.addEventListener('abort', onAbort, { once: true });
    let settled = false;
    const finish = (exitCode: number | null, error?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      o.signal.removeEventListener('abort', onAbort);
      resolve({ exitCode, ended: ended ?? error, head, tail });
    };
    child.on('error', (err) => finish(null, (err as NodeJS.ErrnoException).code === 'ENOENT' ? `${o.argv[0]} was not found` : err.message));
    child.on('close', (code) => finish(code));
  });
}

/** What went wrong, from pip's (or uv's) own words: the reason and what to do, one paragraph. */
export function failureReason(out: InstallerOutcome, specs: string[]): string {
  const text = `${out.head}\n${out.tail}`;
  const missing =
    /No matching distribution found for ([^\s]+)|Because ([^\s]+) was not found in the package registry|No solution found when resolving dependencies:[\s\S]{0,200}?\b([A-Za-z0-9._-]+) was not found/i.exec(
      text,
    );
  if (
    /Failed to establish a new connection|Temporary failure in name resolution|Name or service not known|Network is unreachable|No route to host|ProxyError|Connection refused|Could not fetch URL|dns error|failed to lookup address/i.test(
      text,
    )
  ) {
    return 'pip could not reach the package index (no network, a proxy, or the index is down). Connect to the network and try again, or install offline from a folder of wheels with the setting codeact.python.installArgs: ["--no-index", "--find-links", "/path/to/wheels"].';
  }
  if (missing && /installing build dependencies|Could not install build dependencies|build-system\.requires/i.test(text)) {
    return `The build requirements of a package could not be installed (${missing[1] ?? missing[2] ?? missing[3]} was not found): it has no prebuilt wheel for this Python, and building it needs them. Pick a version with a wheel, or add the build requirements to the wheel folder or index.`;
  }
  if (missing) {
    const name = missing[1] ?? missing[2] ?? missing[3];
    return `No such package, or no version of it for this Python: ${name}. Check the name on the index (the import name may differ from the package name, e.g. "import sklearn" is the package "scikit-learn"), or loosen the version.`;
  }
  if (/ResolutionImpossible|conflicting dependencies|dependency conflict/i.test(text)) {
    return "The packages asked for conflict with each other or with what is installed (pip's resolver found no set of versions that fits). Loosen the version constraints, or install fewer at once.";
  }
  const build =
    /Failed building wheel for ([^\s]+)|Failed to build ([^\s]+)|metadata-generation-failed|subprocess-exited-with-error|error: command '[^']*' failed|Failed to build `?([^\s`]+)/i.exec(
      text,
    );
  if (build) {
    const name = build[1] ?? build[2] ?? build[3];
    return `${name ? `${name} could not be built` : 'A package could not be built'} from source (no prebuilt wheel fits this Python or platform, and its build failed: a compiler, headers or a system library is missing). Pick a version that has a wheel for this Python, or install its build requirements on the machine.`;
  }
  if (/Permission denied|\[Errno 13\]/i.test(text))
    return 'pip was not allowed to write to the environment (permission denied). Use a virtual environment you own.';
  if (/No space left on device/i.test(text)) return 'The disk is full.';
  return `The installer exited with code ${out.exitCode} while installing ${specs.join(', ')}; its last output is below.`;
}
