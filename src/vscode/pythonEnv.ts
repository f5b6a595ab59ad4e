/**
 * The interpreter the local guest runs, in VS Code: the one resolver (core/runtime/local/pythonEnv.ts)
 * fed with the Python extension's selected environment for the folder, a status bar item that says which
 * interpreter runs code and why, and "CodeAct: Select Python Environment", which writes
 * `codeact.python.path` at folder scope.
 *
 * The Python extension (`ms-python.python`) is reached through its published API, typed here by hand (the
 * part of `@vscode/python-extension`'s `PythonExtension.api().environments` used), not the npm package: it
 * is `extensions.getExtension('ms-python.python').exports`, activated, exactly what that package returns.
 * Without the extension, or when it fails, the folder's venv and python3 apply.
 */
import * as vscode from 'vscode';
import { executableIn, expandSetting, readVenv, resolvePythonEnv, VENV_DIRS, type PythonEnv } from '../core/runtime/local/pythonEnv';
import { Emitter } from '../common/emitter';
import { pythonStateOf } from './hostState';
import { ChangeCache } from './changeCache';
import { resolveSettings } from './settings';
import { forDisplay } from '../common/untrusted';
import { configuredRuntime, MODES } from '../common/runtimes';

const PYTHON_EXTENSION = 'ms-python.python';
/** The longest wait for the Python extension to activate or resolve an environment. */
const EXTENSION_WAIT_MS = 20_000;

interface EnvironmentPath {
  id: string;
  path: string;
}
interface ResolvedEnvironment {
  path: string;
  executable: { uri?: vscode.Uri };
  version?: { major?: number; minor?: number; micro?: number };
}
/** `PythonExtension['environments']` of @vscode/python-extension (the members used). */
interface PythonEnvironmentsApi {
  getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
  resolveEnvironment(environment: EnvironmentPath | string): Promise<ResolvedEnvironment | undefined>;
  readonly onDidChangeActiveEnvironmentPath: vscode.Event<{ id: string; path: string; resource?: { uri: vscode.Uri } | vscode.Uri }>;
  readonly known?: readonly ResolvedEnvironment[];
}
interface PythonExtensionExports {
  ready?: Promise<void>;
  environments?: PythonEnvironmentsApi;
}

function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>~]/g, '\\$&');
}

function withTimeout<T>(p: PromiseLike<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    Promise.resolve(p).then(
      (v) => (clearTimeout(timer), resolve(v)),
      () => (clearTimeout(timer), resolve(undefined)),
    );
  });
}

/** The one instance of the window (extension.ts makes it): the runtime cache asks it through pythonEnvFor. */
let active: PythonEnvironments | undefined;
function setActive(envs: PythonEnvironments | undefined): void {
  active = envs;
}

/** The interpreter of a folder's guest: the resolver, with the Python extension's choice when there is one. */
export function pythonEnvFor(folder: string | undefined, setting: string | undefined): PythonEnv {
  return resolvePythonEnv({ folder, setting, pythonExtensionPath: active?.extensionPath(folder), trusted: vscode.workspace.isTrusted });
}

/** The interpreter a folder's guest runs now (for the host state and the status bar). */
function currentPythonEnv(folder: string | undefined): PythonEnv {
  return pythonEnvFor(folder, resolveSettings(folder).config.python);
}

/** The same, as resolved at the last change the window's instance heard of (the host state reads it often). */
export function knownPythonEnv(folder: string | undefined): PythonEnv {
  return active ? active.envOf(folder) : currentPythonEnv(folder);
}

export class PythonEnvironments implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('codeact.python', vscode.StatusBarAlignment.Right, 99);
  private readonly disposables: vscode.Disposable[] = [this.item];
  private readonly fromExtension = new Map<string, string>();
  private api?: PythonEnvironmentsApi;
  private last?: PythonEnv;
  private readonly changed = new vscode.EventEmitter<PythonEnv>();
  /** The interpreter of the current folder changed (not fired for the first one). */
  readonly onDidChange = this.changed.event;
  /** Each folder's interpreter, resolved again after each event that may change it ({@link refresh}). */
  private readonly envs = new ChangeCache<string | undefined, PythonEnv>((folder) => currentPythonEnv(folder));
  private shown?: string;
  private readonly shownChanged = new Emitter<void>();

  /** `folder`: the folder the chat's turns run in (the panel's folder bar, else the active editor's). */
  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly folder: () => string | undefined,
  ) {
    setActive(this);
    this.item.name = 'CodeAct Python';
    this.item.command = 'codeact.selectPythonEnvironment';
    this.disposables.push(
      this.changed,
      vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration('codeact') && this.refresh()),
      vscode.workspace.onDidChangeWorkspaceFolders(() => (this.watchFolders(), void this.readExtension())),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.refresh()),
      vscode.window.onDidChangeActiveTextEditor(() => this.refresh()),
      vscode.window.onDidChangeWindowState((s) => s.focused && this.refresh()),
      vscode.extensions.onDidChange(() => void this.connect()),
    );
    this.watchFolders();
    this.refresh();
    void this.connect();
  }

  /** The Python extension's interpreter for a folder, when it has chosen one (an absolute path). */
  extensionPath(folder: string | undefined): string | undefined {
    return this.fromExtension.get(folder ?? '');
  }

  /** What the host state shows of the current folder's interpreter (its label, path or source) changed. */
  onDidChangeState(listener: () => void): vscode.Disposable {
    return this.shownChanged.on(listener);
  }

  /** The interpreter of a folder, as resolved since the last event that may have changed it. */
  envOf(folder: string | undefined): PythonEnv {
    return this.envs.get(folder);
  }

  /** Says which interpreter runs code; tells the listeners when it changed. */
  refresh(): void {
    this.envs.clear();
    let env: PythonEnv;
    try {
      env = this.envs.get(this.folder());
    } catch (e) {
      this.log.warn(`Python environment: ${(e as Error).message}`);
      return;
    }
    const s = resolveSettings(this.folder()).config;
    // The status item names the interpreter only where code runs on it.
    const local = MODES[s.mode].ourRuntime && configuredRuntime(s.runtime).hostPython;
    this.item.text = `$(symbol-namespace) ${env.label}`;
    const md = new vscode.MarkdownString(undefined, true);
    md.appendMarkdown('**CodeAct runs Python with**\n\n');
    md.appendCodeblock(env.python, 'text');
    // Not appendText: it writes every space as &nbsp;, and the hover would not wrap.
    md.appendMarkdown(escapeMarkdown(`Why: ${env.reason}.${env.venv && env.systemSitePackages ? ' The venv also sees the system site-packages.' : ''}`));
    md.appendMarkdown('\n\nClick to change (CodeAct: Select Python Environment).');
    this.item.tooltip = md;
    this.item.accessibilityInformation = { label: `CodeAct Python: ${env.label}, ${env.python}` };
    if (local) this.item.show();
    else this.item.hide();
    const before = this.last;
    this.last = env;
    const shown = JSON.stringify(pythonStateOf(env));
    if (this.shown !== undefined && shown !== this.shown) this.shownChanged.fire();
    this.shown = shown;
    if (before && before.python !== env.python) {
      this.log.info(`Python environment: ${env.python} (${env.reason}); was ${before.python}`);
      this.changed.fire(env);
    }
  }

  /** Folders' venvs appearing or going away: a created .venv is picked up without a reload. */
  private folderWatchers: vscode.Disposable[] = [];
  private watchFolders(): void {
    for (const w of this.folderWatchers) w.dispose();
    this.folderWatchers = (vscode.workspace.workspaceFolders ?? []).slice(0, 32).map((f) => {
      const w = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(f, `{${VENV_DIRS.join(',')}}/pyvenv.cfg`));
      const on = () => this.refresh();
      w.onDidCreate(on);
      w.onDidDelete(on);
      w.onDidChange(on);
      return w;
    });
    this.refresh();
  }

  /** Connects to the Python extension when it is installed (now or later). Never blocks activation. */
  private async connect(): Promise<void> {
    if (this.api) return;
    const ext = vscode.extensions.getExtension<PythonExtensionExports>(PYTHON_EXTENSION);
    if (!ext) return;
    const exports = ext.isActive ? ext.exports : await withTimeout(ext.activate(), EXTENSION_WAIT_MS);
    if (exports?.ready) await withTimeout(exports.ready, EXTENSION_WAIT_MS);
    const api = exports?.environments;
    if (!api || typeof api.getActiveEnvironmentPath !== 'function' || this.api) {
      if (!api) this.log.warn("Python environment: the Python extension is installed but gave no environments API; using the folder's venv or python3.");
      return;
    }
    this.api = api;
    this.disposables.push(api.onDidChangeActiveEnvironmentPath(() => void this.readExtension()));
    await this.readExtension();
  }

  /** The Python extension's active environment of each folder, resolved to its interpreter. */
  private async readExtension(): Promise<void> {
    const api = this.api;
    if (!api) return;
    const folders = (vscode.workspace.workspaceFolders ?? []).slice(0, 32);
    for (const f of folders) {
      try {
        const active = api.getActiveEnvironmentPath(f.uri);
        const env = active ? await withTimeout(api.resolveEnvironment(active), EXTENSION_WAIT_MS) : undefined;
        const exe = env?.executable.uri?.fsPath ?? active?.path;
        if (exe) this.fromExtension.set(f.uri.fsPath, exe);
        else this.fromExtension.delete(f.uri.fsPath);
      } catch (e) {
        this.log.warn(`Python environment: the Python extension could not say the environment of ${f.uri.fsPath}: ${(e as Error).message}`);
        this.fromExtension.delete(f.uri.fsPath);
      }
    }
    this.refresh();
  }

  /** "CodeAct: Select Python Environment": the environments found; writes codeact.python.path for the folder. */
  async select(): Promise<void> {
    const folder = this.folder();
    const uri = folder ? vscode.Uri.file(folder) : undefined;
    const setting = resolveSettings(folder).config.python;
    const current = currentPythonEnv(folder);
    type Item = vscode.QuickPickItem & { value?: string | null; enter?: boolean };
    const items: Item[] = [];
    const seen = new Set<string>();
    const add = (python: string, label: string, detail: string) => {
      if (seen.has(python) || items.length >= 60) return;
      seen.add(python);
      items.push({
        label: `${python === current.python ? '$(check) ' : ''}${label}`,
        description: label.endsWith(` ${python}`) ? undefined : python,
        detail,
        value: python,
      });
    };
    if (setting) add(current.python, `$(gear) ${current.label}`, 'codeact.python.path');
    const ext = this.extensionPath(folder);
    if (ext) add(ext, `$(extensions) ${resolvePythonEnv({ setting: ext }).label}`, "The Python extension's selected environment");
    for (const name of VENV_DIRS) {
      const venv = folder ? readVenv(`${folder}/${name}`) : undefined;
      if (venv) add(venv.python, `$(folder) ${resolvePythonEnv({ setting: venv.python }).label}`, `The folder's ${name}`);
    }
    for (const env of (this.api?.known ?? []).slice(0, 40)) {
      const exe = env.executable.uri?.fsPath;
      if (exe) add(exe, `$(extensions) ${resolvePythonEnv({ setting: exe }).label}`, 'Known to the Python extension');
    }
    add('python3', '$(terminal) python3', 'python3 on PATH');
    if (setting)
      items.push({
        label: '$(discard) Automatic',
        detail: "Clear codeact.python.path: the Python extension's environment, else the folder's .venv, else python3",
        value: null,
      });
    items.push({ label: '$(edit) Enter path…', detail: 'An interpreter or a venv folder', enter: true, alwaysShow: true });
    const pick = await vscode.window.showQuickPick(items, {
      title: 'CodeAct: Select Python Environment',
      placeHolder: `Code runs with ${forDisplay(`${current.label} (${current.python})`, { line: true })}`,
      matchOnDescription: true,
    });
    if (!pick) return;
    let value = pick.value;
    if (pick.enter) {
      const typed = await vscode.window.showInputBox({
        title: 'CodeAct: Python interpreter',
        prompt: "The interpreter (…/bin/python) or a venv folder; relative paths are the folder's",
        value: setting ?? '',
        ignoreFocusOut: true,
        // A command name ("python3.12") is looked up on PATH when it runs; a path must be an interpreter or an environment folder.
        validateInput: (v) => {
          const p = expandSetting(v.trim(), folder);
          if (!p) return 'Enter a path or a command';
          return /[\\/]/.test(p) && !executableIn(p) ? `${p} is neither an interpreter nor an environment folder (with bin/python)` : undefined;
        },
      });
      if (!typed?.trim()) return;
      // An environment folder is written as its interpreter.
      const p = expandSetting(typed.trim(), folder);
      value = /[\\/]/.test(p) ? (executableIn(p) ?? typed.trim()) : typed.trim();
    }
    const target = uri ? vscode.ConfigurationTarget.WorkspaceFolder : vscode.ConfigurationTarget.Global;
    await vscode.workspace.getConfiguration('codeact', uri).update('python.path', value ?? undefined, target);
    this.refresh();
  }

  dispose(): void {
    if (active === this) setActive(undefined);
    this.shownChanged.clear();
    for (const d of [...this.folderWatchers, ...this.disposables]) d.dispose();
  }
}

/** Said once per change: the interpreter is another now, and the Python sessions start over with it. */
export function announcePythonChange(env: PythonEnv): void {
  void vscode.window.showInformationMessage(
    `CodeAct: code now runs with ${forDisplay(env.label, { line: true })} (${forDisplay(env.python, { line: true })}): ${forDisplay(env.reason)}. The next run starts new Python sessions with it; the variables of the current ones are gone.`,
  );
}
