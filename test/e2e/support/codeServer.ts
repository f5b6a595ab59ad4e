/**
 * The packaged extension in a real VS Code: code-server (by default the current release, 4.139 = VS Code 1.139; the minimum is 4.100.3 = VS Code 1.100: its server and web
 * workbench), started on 127.0.0.1 with a temporary user-data and extensions folder.
 *
 *   const vsix = await packageExtension();              // esbuild --production + vsce, in a copy of the repo
 *   const cs = await CodeServer.start({ vsix, workspace, settings: { 'codeact.baseURL': wire.url } });
 *   ...  page.goto(cs.folderUrl)
 *   await cs.stop();                                    // kills the whole process group
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { ARTIFACTS, CODE_SERVERS, DEFAULT_RELEASE, ROOT, type Release } from './env';
import { everyHost } from '../../../src/core/sessionHost/launch';
import { isAlive } from '../../../src/core/util/processTree';
import { waitFor } from '../../support/wait';

// ---- packaging -------------------------------------------------------------------------------------

/** Top-level entries of the repository that never go into the package copy. */
const NOT_COPIED = new Set(['node_modules', '.git', '.vscode-test', 'test-artifacts', 'dist', 'coverage', '.codeact', 'out']);

let built: Promise<string> | undefined;
let packaged: Promise<string> | undefined;

/**
 * A temporary copy of the repository with the production build in its `dist/` (`node esbuild.mjs
 * --production`, run in the copy so the shared `dist/` is never touched). It is also what
 * `--extensionDevelopmentPath` points at. Memoized.
 */
export function buildExtensionCopy(): Promise<string> {
  built ??= Promise.resolve().then(() => {
    const stage = mkdtempSync(join(tmpdir(), 'codeact-e2e-pkg-'));
    process.once('exit', () => rmSync(stage, { recursive: true, force: true }));
    for (const entry of readdirSync(ROOT)) {
      if (NOT_COPIED.has(entry) || entry.endsWith('.vsix')) continue;
      cpSync(join(ROOT, entry), join(stage, entry), { recursive: true, filter: (src) => !/[\\/]__pycache__([\\/]|$)/.test(src) });
    }
    // esbuild resolves the bundled dependencies from here; vsce must not see it.
    symlinkSync(join(ROOT, 'node_modules'), join(stage, 'node_modules'), 'dir');
    try {
      run(process.execPath, ['esbuild.mjs', '--production'], stage, 'node esbuild.mjs --production');
    } finally {
      unlinkSync(join(stage, 'node_modules'));
    }
    if (!existsSync(join(stage, 'dist', 'extension.js')))
      throw new Error('esbuild produced no dist/extension.js: src/extension.ts is missing or failed to build.');
    return stage;
  });
  return built;
}

/**
 * The .vsix, built exactly as `npm run package` does (`vsce package --no-dependencies` after the
 * production build), in the copy from `buildExtensionCopy`. `CODEACT_E2E_VSIX` points the suite at a
 * prebuilt package instead. Memoized.
 */
export function packageExtension(): Promise<string> {
  packaged ??= Promise.resolve().then(async () => {
    const prebuilt = process.env.CODEACT_E2E_VSIX;
    if (prebuilt) {
      if (!existsSync(prebuilt))
        throw new Error(`CODEACT_E2E_VSIX points at ${prebuilt}, which does not exist. Build it with "npm run package" or unset the variable.`);
      return prebuilt;
    }
    const stage = await buildExtensionCopy();
    const out = join(stage, 'codeact.vsix');
    const vsce = join(ROOT, 'node_modules', '@vscode', 'vsce', 'vsce');
    run(
      process.execPath,
      [vsce, 'package', '--no-dependencies', '--allow-missing-repository', '--no-rewrite-relative-links', '--skip-license', '-o', out],
      stage,
      'vsce package',
    );
    return out;
  });
  return packaged;
}

function run(cmd: string, args: string[], cwd: string, what: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: 180_000, env: cleanEnv(process.env), input: '' });
  if (r.status !== 0) {
    const detail = `${r.stdout ?? ''}\n${r.stderr ?? ''}`.trim().split('\n').slice(-30).join('\n');
    throw new Error(`${what} failed (exit ${r.status ?? r.signal}${r.error ? `, ${r.error.message}` : ''}) in ${cwd}:\n${detail}`);
  }
  return r.stdout;
}

/** Size of a file in bytes. */
export function fileSize(path: string): number {
  return statSync(path).size;
}

// ---- code-server -----------------------------------------------------------------------------------

/** Environment without the variables that make code-server act as a client of an enclosing VS Code. */
function cleanEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) {
    if (/^(VSCODE_|ELECTRON_RUN_AS_NODE$|CODE_SERVER_)/.test(k)) continue;
    out[k] = v;
  }
  return out;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface CodeServerOptions {
  /** The .vsix to install (from `packageExtension`); none for a development run (`developmentUrl`). */
  vsix?: string;
  /** More extensions to install beside it (.vsix files). */
  moreVsix?: string[];
  /** The folder to open. */
  workspace: string;
  /** User settings (merged over the suite defaults). */
  settings?: Record<string, unknown>;
  /** Extra environment of the server and its extension host. */
  env?: Record<string, string>;
  /** A name for the log folder under test-artifacts/e2e/logs. */
  name?: string;
  /** Which code-server: the current release on its own Node (DEFAULT_RELEASE), or the oldest engine package.json claims. */
  release?: Release;
}

/** Settings every e2e instance starts with: no welcome page, no telemetry, no update checks, trust on. */
export const BASE_SETTINGS: Record<string, unknown> = {
  'security.workspace.trust.enabled': true,
  // VS Code 1.13x no longer asks at start-up by default ("never": a banner): the suites answer the dialog as a user would.
  'security.workspace.trust.startupPrompt': 'once',
  'workbench.startupEditor': 'none',
  // VS Code 1.13x opens the Settings editor and others as modal editors ("some"), which no tab closes and F1 cannot reach.
  'workbench.editor.useModal': 'off',
  // VS Code 1.13x opens its own Chat in the secondary side bar of every workspace.
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'extensions.ignoreRecommendations': true,
  'git.enabled': false,
  'files.autoSave': 'off',
  'window.restoreWindows': 'none',
  'chat.commandCenter.enabled': false,
  'workbench.colorTheme': 'Default Dark Modern',
};

/** Fake keys so every provider has one; the provider really used is a loopback server. */
export const FAKE_KEYS: Record<string, string> = {
  OPENAI_API_KEY: 'sk-e2e-fake-openai',
  ANTHROPIC_API_KEY: 'sk-ant-e2e-fake',
  GEMINI_API_KEY: 'e2e-fake-gemini',
  GOOGLE_API_KEY: 'e2e-fake-gemini',
};

export class CodeServer {
  private exited: Promise<void>;
  private output = '';

  private constructor(
    readonly proc: ChildProcess,
    readonly port: number,
    readonly dir: string,
    readonly workspace: string,
    readonly name: string,
  ) {
    this.exited = new Promise((resolve) => proc.once('exit', () => resolve()));
    proc.stdout?.on('data', (d: Buffer) => (this.output += d.toString()));
    proc.stderr?.on('data', (d: Buffer) => (this.output += d.toString()));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The workbench URL with the workspace folder open (a `.code-workspace` file: that multi-root workspace). */
  get folderUrl(): string {
    const kind = this.workspace.endsWith('.code-workspace') ? 'workspace' : 'folder';
    return `${this.url}/?${kind}=${encodeURIComponent(this.workspace)}`;
  }

  /**
   * The workbench URL that loads `extensionPath` as the extension under development and runs
   * `testsPath` (a module exporting `run()`) in the server's extension host, as @vscode/test-web does:
   * the web workbench takes both from its `payload` query parameter.
   */
  developmentUrl(extensionPath: string, testsPath?: string): string {
    const remote = (p: string) => `vscode-remote://127.0.0.1:${this.port}${p}`;
    const payload: [string, string][] = [['extensionDevelopmentPath', remote(extensionPath)]];
    if (testsPath) payload.push(['extensionTestsPath', remote(testsPath)]);
    return `${this.folderUrl}&payload=${encodeURIComponent(JSON.stringify(payload))}`;
  }

  /** Waits until code-server's own output matches `re`; returns the match. */
  async waitForLog(re: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = this.output.match(re);
      if (m) return m;
      if (this.proc.exitCode !== null) throw new Error(`code-server exited (${this.proc.exitCode}) before its output matched ${re}`);
      if (Date.now() > deadline) throw new Error(`code-server's output never matched ${re} within ${timeoutMs} ms:\n${this.output.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  get userDataDir(): string {
    return join(this.dir, 'user-data');
  }

  get extensionsDir(): string {
    return join(this.dir, 'extensions');
  }

  get log(): string {
    return this.output;
  }

  /** Installs the .vsix (and `moreVsix`) with code-server's own `--install-extension`, then starts the server. */
  static async start(opts: CodeServerOptions): Promise<CodeServer> {
    const { entry, node } = CODE_SERVERS[opts.release ?? DEFAULT_RELEASE];
    if (!existsSync(entry)) throw new Error(`code-server is not installed at ${entry}: run scripts/setup-code-server.sh`);
    const dir = mkdtempSync(join(tmpdir(), 'codeact-e2e-cs-'));
    const userData = join(dir, 'user-data');
    const extensions = join(dir, 'extensions');
    mkdirSync(join(userData, 'User'), { recursive: true });
    mkdirSync(extensions, { recursive: true });
    writeFileSync(join(userData, 'User', 'settings.json'), JSON.stringify({ ...BASE_SETTINGS, ...(opts.settings ?? {}) }, null, 2));
    const config = join(dir, 'config.yaml');
    writeFileSync(config, 'auth: none\ncert: false\n');
    const env = {
      ...cleanEnv(process.env),
      ...FAKE_KEYS,
      // Loopback only: the extension gallery (open-vsx.org by default) points at a closed local port.
      EXTENSIONS_GALLERY: JSON.stringify({
        serviceUrl: 'http://127.0.0.1:9/gallery',
        itemUrl: 'http://127.0.0.1:9/item',
        resourceUrlTemplate: 'http://127.0.0.1:9/{publisher}/{name}/{version}/{path}',
      }),
      ...(opts.env ?? {}),
      XDG_CONFIG_HOME: join(dir, 'xdg-config'),
      XDG_DATA_HOME: join(dir, 'xdg-data'),
      // The session hosts the extension starts (codeact.session.host "auto") live here, ended by `stop`.
      XDG_RUNTIME_DIR: join(dir, 'run'),
    };
    mkdirSync(env.XDG_RUNTIME_DIR, { mode: 0o700 });

    const common = ['--config', config, '--user-data-dir', userData, '--extensions-dir', extensions];
    for (const vsix of [...(opts.vsix ? [opts.vsix] : []), ...(opts.moreVsix ?? [])]) {
      const inst = spawnSync(node, [entry, ...common, '--install-extension', vsix, '--force'], {
        env,
        encoding: 'utf8',
        timeout: 120_000,
      });
      const instOut = `${inst.stdout ?? ''}${inst.stderr ?? ''}`;
      if (inst.status !== 0 || !/successfully installed|already installed/i.test(instOut)) {
        throw new Error(`code-server --install-extension ${basename(vsix)} failed (exit ${inst.status}):\n${instOut.trim().split('\n').slice(-20).join('\n')}`);
      }
    }

    // A port found free may be taken before code-server binds it (another suite runs beside this one): try another.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const proc = spawn(
        node,
        [
          entry,
          ...common,
          '--auth',
          'none',
          '--bind-addr',
          `127.0.0.1:${port}`,
          '--disable-telemetry',
          '--disable-update-check',
          '--disable-getting-started-override',
          '--disable-proxy',
          opts.workspace,
        ],
        { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      const cs = new CodeServer(proc, port, dir, opts.workspace, opts.name ?? `cs-${port}`);
      try {
        await cs.waitListening();
        return cs;
      } catch (err) {
        if (attempt >= 3 || !/EADDRINUSE|address already in use/i.test(cs.output)) throw err;
        try {
          process.kill(-proc.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  }

  private async waitListening(): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (this.proc.exitCode !== null) throw new Error(`code-server exited with ${this.proc.exitCode} before listening:\n${this.output.slice(-3000)}`);
      try {
        const res = await fetch(`${this.url}/healthz`);
        if (res.ok) return;
      } catch {
        // not yet
      }
      await new Promise((r) => setTimeout(r, 150));
    }
    throw new Error(`code-server did not listen on ${this.url} within 60 s:\n${this.output.slice(-3000)}`);
  }

  /** The extension host's log files (exthost and the extension's own output channels), concatenated. */
  extensionHostLogs(filter = /exthost|CodeAct|codeact/i): string {
    const root = join(this.userDataDir, 'logs');
    const out: string[] = [];
    const walk = (d: string) => {
      if (!existsSync(d)) return;
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const p = join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('.log') && filter.test(relative(root, p))) out.push(`==> ${relative(root, p)}\n${readFileUtf8(p)}`);
      }
    };
    walk(root);
    return out.join('\n');
  }

  /** Stops the server and everything in its process group; keeps the logs under test-artifacts/e2e/logs. */
  async stop(): Promise<void> {
    const pid = this.proc.pid;
    if (pid && this.proc.exitCode === null) {
      try {
        process.kill(-pid, 'SIGTERM');
      } catch {
        // already gone
      }
      const t = setTimeout(() => {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // gone
        }
      }, 5000);
      await this.exited;
      clearTimeout(t);
      // Children that ignored SIGTERM.
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    try {
      const logs = join(ARTIFACTS, 'logs', this.name);
      rmSync(logs, { recursive: true, force: true });
      mkdirSync(logs, { recursive: true });
      writeFileSync(join(logs, 'code-server.log'), this.output);
      if (existsSync(join(this.userDataDir, 'logs'))) cpSync(join(this.userDataDir, 'logs'), join(logs, 'vscode'), { recursive: true });
    } catch {
      // logs are a convenience
    }
    await this.endSessionHosts();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The folder of the session hosts the extension started (they outlive the extension host, by design). */
  get runtimeDir(): string {
    return join(this.dir, 'run');
  }

  /** Ends every session host this server's extension started, and waits for them to exit. */
  async endSessionHosts(): Promise<void> {
    const hosts = await everyHost({ XDG_RUNTIME_DIR: this.runtimeDir }).catch(() => []);
    for (const h of hosts) h.end();
    for (const h of hosts) h.close();
    await waitFor(() => hosts.every((h) => !isAlive(h.welcome.pid)), { what: 'the session hosts to end', timeoutMs: 60_000 });
  }
}

function readFileUtf8(p: string): string {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return '';
  }
}
