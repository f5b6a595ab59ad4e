/**
 * Fakes of the `*.apis.ts` seams of src/vscode, so the controller, the approvals and the runtime cache run in
 * plain Node (no VS Code): settings from a plain object through the real resolver, toasts and dialogs
 * answered by script and recorded, a runtime that runs a test's function instead of Python.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CodeInterpreterCallItem, VariablesSummary } from '../../src/common/events';
import { resolveEngineConfig, type ResolvedConfig } from '../../src/core/config/resolve';
import type { RuntimeConfig } from '../../src/core/runtime/factory';
import { resolvePythonEnv, type PythonEnv } from '../../src/core/runtime/local/pythonEnv';
import { afterReview } from '../../src/core/runtime/execution';
import type { ExecuteOptions, ExecuteRequest, Runtime, RuntimeSessions } from '../../src/core/runtime/types';
import type { ApprovalsApis } from '../../src/vscode/approvals.apis';
import type { LmToolApis, LmToolInfo } from '../../src/vscode/lmToolSource.apis';
import type { RuntimeCacheApis } from '../../src/vscode/runtimeCache.apis';
import { Emitter } from '../../src/common/emitter';
import { CodeActController } from '../../src/vscode/controller';
import type { Log, ControllerApis, Memento } from '../../src/vscode/controller.apis';
import type { PanelHostApis, SaveAsOptions } from '../../src/vscode/panelHost.apis';

/** `codeact.<key>` values as the user set them, resolved by the one policy. */
export function resolved(values: Record<string, unknown>, trusted: boolean): ResolvedConfig {
  return resolveEngineConfig((key) => (key in values ? { user: values[key] } : undefined), { trusted });
}

export class FakeLog implements Log {
  readonly lines: string[] = [];
  shown = 0;
  info(m: string): void {
    this.lines.push(`info ${m}`);
  }
  warn(m: string): void {
    this.lines.push(`warn ${m}`);
  }
  error(m: string): void {
    this.lines.push(`error ${m}`);
  }
  show(): void {
    this.shown++;
  }
}

/** A toast's answer: the button to press, or a function of the message. */
type Answer = string | undefined | ((message: string, items: string[]) => string | undefined);
const answer = (a: Answer, message: string, items: string[]) => (typeof a === 'function' ? a(message, items) : a);

interface FakeSettingsState {
  values: Record<string, unknown>;
  folderValues: Record<string, Record<string, unknown>>;
  trusted: boolean;
  workspaceFolders?: Array<{ name: string; path: string }>;
}

export class FakeControllerApis implements ControllerApis {
  /** Fired, as VS Code does, when the settings, Workspace Trust or the folders below are set. */
  readonly settingsChanged = new Emitter<void>();
  /** How many times the settings were resolved (read through the seam). */
  resolved = 0;
  private state: FakeSettingsState = { values: {}, folderValues: {}, trusted: true };
  get values(): Record<string, unknown> {
    return this.state.values;
  }
  set values(v: Record<string, unknown>) {
    this.change({ values: v });
  }
  /** Folder settings (its `.vscode/settings.json`), per folder path: over {@link values} (the user's). */
  get folderValues(): Record<string, Record<string, unknown>> {
    return this.state.folderValues;
  }
  set folderValues(v: Record<string, Record<string, unknown>>) {
    this.change({ folderValues: v });
  }
  get trusted(): boolean {
    return this.state.trusted;
  }
  set trusted(v: boolean) {
    this.change({ trusted: v });
  }
  /** The workspace's folders (default: {@link folder} alone). */
  get workspaceFolders(): Array<{ name: string; path: string }> | undefined {
    return this.state.workspaceFolders;
  }
  set workspaceFolders(v: Array<{ name: string; path: string }> | undefined) {
    this.change({ workspaceFolders: v });
  }
  private change(part: Partial<FakeSettingsState>): void {
    this.state = { ...this.state, ...part };
    this.settingsChanged.fire();
  }
  folder: string | undefined;
  /** The active editor's folder. */
  editorFolder?: string;
  readonly warnings: Array<{ message: string; items: string[] }> = [];
  readonly errors: Array<{ message: string; items: string[] }> = [];
  readonly infos: string[] = [];
  readonly commands: unknown[][] = [];
  warningAnswer: Answer;
  errorAnswer: Answer;

  constructor(folder: string) {
    this.folder = folder;
  }
  resolveSettings(folder?: string): ResolvedConfig {
    this.resolved++;
    const f = this.folderValues[folder ?? this.folders()[0]?.path ?? ''] ?? {};
    return resolveEngineConfig((key) => (key in this.values || key in f ? { user: this.values[key], folder: f[key] } : undefined), { trusted: this.trusted });
  }
  onDidChangeSettings(listener: () => void): { dispose(): void } {
    return this.settingsChanged.on(listener);
  }
  isTrusted(): boolean {
    return this.trusted;
  }
  folders(): Array<{ name: string; path: string }> {
    return this.workspaceFolders ?? (this.folder ? [{ name: this.folder.split('/').pop() ?? this.folder, path: this.folder }] : []);
  }
  activeEditorFolder(): string | undefined {
    return this.editorFolder;
  }
  async showWarningMessage(message: string, ...items: string[]): Promise<string | undefined> {
    this.warnings.push({ message, items });
    return answer(this.warningAnswer, message, items);
  }
  showInformationMessage(message: string): void {
    this.infos.push(message);
  }
  async showErrorMessage(message: string, ...items: string[]): Promise<string | undefined> {
    this.errors.push({ message, items });
    return answer(this.errorAnswer, message, items);
  }
  async executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    this.commands.push([command, ...args]);
    return undefined;
  }
  /** The commands run other than `setContext`. */
  get ranCommands(): string[] {
    return this.commands.filter((c) => c[0] !== 'setContext').map((c) => String(c[0]));
  }
}

export class FakeApprovalsApis implements ApprovalsApis {
  /** The dialog's answers, in order (undefined: dismissed). */
  answers: Array<string | undefined> = [];
  readonly dialogs: Array<{ message: string; detail?: string; items: string[]; modal?: boolean }> = [];
  /** What was opened in a read-only editor (an approval's full arguments or code). */
  readonly documents: Array<{ content: string; language: string }> = [];
  /** What VS Code merges for `codeact.approval.alwaysAllow`. */
  always: string[] = [];
  readonly saved: string[][] = [];

  async showWarningMessage(message: string, options: { modal: boolean; detail?: string }, ...items: string[]): Promise<string | undefined> {
    this.dialogs.push({ message, detail: options.detail, items, ...(options.modal ? {} : { modal: false }) });
    return this.answers.shift();
  }
  alwaysAllowed(): string[] {
    return [...this.always];
  }
  async saveAlwaysAllowed(names: string[]): Promise<void> {
    this.saved.push(names);
    this.always = names;
  }
  async showFullText(content: string, language: 'json' | 'python'): Promise<void> {
    this.documents.push({ content, language });
  }
}

/** What a fake run does: the code's "Python", given the request and the runtime's options. */
export type Script = (request: ExecuteRequest, options: ExecuteOptions | undefined, runtime: FakeRuntime) => Promise<Partial<CodeInterpreterCallItem>>;

export class FakeRuntime implements Runtime {
  readonly kind = 'local' as const;
  /** The sessions alive (a run makes its session alive). */
  readonly live = new Set<string>();
  readonly executed: ExecuteRequest[] = [];
  readonly closed: string[] = [];
  readonly restarted: string[] = [];
  disposed = 0;
  script: Script = async () => ({ value: null });

  constructor(readonly config: RuntimeConfig) {}

  readonly sessions: RuntimeSessions = {
    persist: true,
    keepsOutputs: false,
    readsVariables: true,
    close: async (id) => {
      this.closed.push(id);
      this.live.delete(id);
    },
    restart: async (id) => {
      this.restarted.push(id);
      return this.live.delete(id);
    },
    variables: async (id): Promise<VariablesSummary | null> => (this.live.has(id) ? { variables: [], total: 0 } : null),
    has: (id) => this.live.has(id),
  };

  /** Applies the caller's beforeRun (code review) as every runtime does. */
  execute(request: ExecuteRequest, options: ExecuteOptions = {}): Promise<CodeInterpreterCallItem> {
    return afterReview(this.kind, request, options, (request, options) => this.run(request, options));
  }

  private async run(request: ExecuteRequest, options?: ExecuteOptions): Promise<CodeInterpreterCallItem> {
    this.executed.push(request);
    if (request.sessionId) this.live.add(request.sessionId);
    const id = request.itemId ?? `exec_${this.executed.length}`;
    options?.onEvent?.({ type: 'response.code_interpreter_call.in_progress', item_id: id });
    let item: CodeInterpreterCallItem;
    try {
      const got = await this.script(request, options, this);
      item = {
        type: 'code_interpreter_call',
        id,
        status: 'completed',
        code: request.code,
        runtime: 'local',
        outputs: [],
        exit_code: 0,
        duration_ms: 1,
        ...got,
      };
    } catch (err) {
      item = {
        type: 'code_interpreter_call',
        id,
        status: 'failed',
        code: request.code,
        runtime: 'local',
        outputs: [],
        exit_code: 1,
        duration_ms: 1,
        error: { type: 'RuntimeError', message: (err as Error).message },
      };
    }
    options?.onEvent?.({ type: 'response.output_item.done', item });
    return item;
  }
  async dispose(): Promise<void> {
    this.disposed++;
  }
}

export class FakeRuntimeApis implements RuntimeCacheApis {
  readonly built: FakeRuntime[] = [];
  readonly toasts: string[] = [];
  /** Applied to each runtime built (its script, say). */
  setup: (r: FakeRuntime) => void = () => {};

  async createRuntime(config: RuntimeConfig): Promise<Runtime> {
    const r = new FakeRuntime(config);
    this.setup(r);
    this.built.push(r);
    return r;
  }
  showWarningMessage(message: string): void {
    this.toasts.push(message);
  }
  /** Whether a session host answers for the configs asked about. */
  hostUp = false;
  hostRunning(_config?: RuntimeConfig): boolean {
    return this.hostUp;
  }
  /** The Python extension's selected interpreter of each folder (none: not installed). */
  readonly pythonExtension = new Map<string, string>();
  pythonEnv(folder: string | undefined, setting: string | undefined): PythonEnv {
    return resolvePythonEnv({ folder, setting, pythonExtensionPath: this.pythonExtension.get(folder ?? '') });
  }
  get last(): FakeRuntime | undefined {
    return this.built.at(-1);
  }
}

export class FakeLmTools implements LmToolApis {
  registered: LmToolInfo[] = [];
  readonly calls: Array<{ name: string; input: Record<string, unknown>; signal: AbortSignal }> = [];
  reply: (name: string, input: Record<string, unknown>) => string = () => '{"ok":true}';

  tools(): readonly LmToolInfo[] {
    return this.registered;
  }
  async invokeTool(name: string, input: Record<string, unknown>, signal: AbortSignal): Promise<string> {
    this.calls.push({ name, input, signal });
    return this.reply(name, input);
  }
}

export interface Harness {
  controller: CodeActController;
  apis: FakeControllerApis;
  approvals: FakeApprovalsApis;
  runtimes: FakeRuntimeApis;
  lm: FakeLmTools;
  log: FakeLog;
  /** `keys`: set or delete one and the secret storage says it changed; `asked`: how many times key presence was asked. */
  secrets: { keys: Record<string, string>; jupyterToken?: string; asked: number };
  dir: string;
  cleanup(): void;
}

/** A controller over fakes, with its conversations in a temporary folder. */
export function harness(
  values: Record<string, unknown> = {},
  /** A window that comes back: the same folder, the conversations and the workspace state of an earlier one, its own runtime seam. */
  o: { dir?: string; workspaceState?: Memento; runtimes?: FakeRuntimeApis } = {},
): Harness {
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'codeact-vscode-test-'));
  const apis = new FakeControllerApis(join(dir, 'workspace'));
  apis.values = values;
  const approvals = new FakeApprovalsApis();
  const runtimes = o.runtimes ?? new FakeRuntimeApis();
  const lm = new FakeLmTools();
  const log = new FakeLog();
  const keysChanged = new Emitter<void>();
  const keys = new Proxy<Record<string, string>>(
    {},
    {
      set: (t, k, v) => (Reflect.set(t, k, v), keysChanged.fire(), true),
      deleteProperty: (t, k) => (Reflect.deleteProperty(t, k), keysChanged.fire(), true),
    },
  );
  const secrets: Harness['secrets'] = { keys, asked: 0 };
  const controller = new CodeActController({
    storeDir: join(dir, 'conversations'),
    version: '9.9.9',
    log,
    secrets: {
      apiKey: async (p) => secrets.keys[p],
      hasKey: async (p) => (secrets.asked++, !!secrets.keys[p]),
      jupyterToken: async () => secrets.jupyterToken,
      onDidChange: (listener) => keysChanged.on(listener),
    },
    apis,
    approvalsApis: approvals,
    runtimeApis: runtimes,
    lmTools: lm,
    workspaceState: o.workspaceState,
  });
  return { controller, apis, approvals, runtimes, lm, log, secrets, dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A `codeact.tools` declaration of an `lmTool` with the given approval. */
export function lmToolDecl(name: string, approval?: 'auto' | 'ask' | 'deny'): Record<string, unknown> {
  return { name, lmTool: `vendor_${name}`, description: `the ${name} tool`, inputSchema: { type: 'object' }, ...(approval ? { approval } : {}) };
}

/** A script that calls a tool through the runtime's handler and returns (or throws) what it gets. */
export function callTool(name: string, args: Record<string, unknown> = {}): Script {
  return async (request, options) => {
    const value = await options!.onToolCall!(
      { itemId: request.itemId ?? 'x', callId: `call_${name}`, name, arguments: args },
      options?.signal ?? new AbortController().signal,
    );
    return { value };
  };
}

/** The panel host's seam (src/vscode/panelHost.apis.ts): every call recorded, dialogs answered by script. */
export class FakePanelHostApis implements PanelHostApis {
  readonly calls: unknown[][] = [];
  /** The warning's answer (a modal confirmation's button, or undefined: dismissed). */
  warningAnswer: Answer;
  /** The Save As dialog's answer (undefined: cancelled); what was written there. */
  saveTarget: string | undefined = undefined;
  readonly saved: Array<{ options: SaveAsOptions; bytes: Uint8Array }> = [];
  infoAnswer: Answer;

  async executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    this.calls.push(['executeCommand', command, ...args]);
    return undefined;
  }
  async saveModel(provider: string, model: string): Promise<void> {
    this.calls.push(['saveModel', provider, model]);
  }
  async writeClipboard(text: string): Promise<void> {
    this.calls.push(['writeClipboard', text]);
  }
  async insertCode(code: string): Promise<void> {
    this.calls.push(['insertCode', code]);
  }
  async openText(content: string, language: string): Promise<void> {
    this.calls.push(['openText', content, language]);
  }
  async withProgress<T>(title: string, task: () => PromiseLike<T>): Promise<T> {
    this.calls.push(['withProgress', title]);
    return task();
  }
  async saveAs(options: SaveAsOptions, bytes: () => Uint8Array): Promise<string | undefined> {
    this.calls.push(['saveAs', options.title]);
    if (this.saveTarget) this.saved.push({ options, bytes: bytes() });
    return this.saveTarget;
  }
  async openUri(uri: string, viewType?: string): Promise<void> {
    this.calls.push(['openUri', uri, ...(viewType ? [viewType] : [])]);
  }
  relativePath(uri: string): string {
    return uri.replace(/^file:\/\/\/work\//, '');
  }
  async openExternal(href: string): Promise<boolean> {
    this.calls.push(['openExternal', href]);
    return true;
  }
  async showWarningMessage(message: string, options: { modal: boolean }, ...items: string[]): Promise<string | undefined> {
    this.calls.push(['showWarningMessage', message, options, ...items]);
    return answer(this.warningAnswer, message, items);
  }
  async showInformationMessage(message: string, ...items: string[]): Promise<string | undefined> {
    this.calls.push(['showInformationMessage', message, ...items]);
    return answer(this.infoAnswer, message, items);
  }
  showUntrusted(what: string): void {
    this.calls.push(['showUntrusted', what]);
  }
  /** The names of the calls made, in order. */
  get names(): string[] {
    return this.calls.map((c) => String(c[0]));
  }
}
