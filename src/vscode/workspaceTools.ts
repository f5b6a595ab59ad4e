/**
 * A workspace folder's managed tools: its `codeact.tools` declarations (none without Workspace Trust), invalid
 * ones warned about once, `lmTool` ones backed by VS Code's language-model tools, MCP ones filled in from
 * their servers, and the gateway that runs them with the user's approvals.
 */
import { toolSetFrom } from '../core/config/engine';
import { ToolGateway } from '../core/gateway/gateway';
import { formatDeclarationError, type ToolSet } from '../core/gateway/toolSet';
import { needsResolving, resolveGeneration, resolveTools } from '../core/tools/toolSources';
import { installOptionsFrom } from '../core/config/install';
import type { Approvals } from './approvals';
import { declaresLmTool, lmToolSource } from './lmToolSource';
import type { LmToolApis } from './lmToolSource.apis';
import type { Log, ControllerApis } from './controller.apis';
import type { CodeActSettings } from './settings';
import { ChangeCache } from './changeCache';
import { forDisplay } from '../common/untrusted';

interface WorkspaceToolsDeps {
  apis: Pick<ControllerApis, 'showWarningMessage' | 'executeCommand'>;
  lmTools: LmToolApis;
  /** The settings for a folder (fs path). */
  settings(folder: string | undefined): CodeActSettings;
  trusted(): boolean;
  /** The folder when none is given: the chat's. */
  workspaceFolder(): string | undefined;
  approvals: Approvals;
  log: Log;
  /** install_packages made a `.venv`: the folder's sessions run it from now on (codeact.python.path at folder scope). */
  switchPython?(folder: string, python: string): PromiseLike<void>;
  /** The interpreter a folder's runtime runs (the runtime cache's resolver: the setting, the Python extension's, the .venv, python3): install_packages installs into it. */
  pythonFor?(folder: string | undefined, setting: string | undefined): string | undefined;
}

export class WorkspaceTools {
  /** Per folder: the broken declarations last warned about (warned once each). */
  private readonly warned = new Map<string, string>();
  private resolved?: { key: string; set: Promise<ToolSet> };
  /** Per folder: its tool set, loaded once per change of the settings or trust ({@link invalidate}) or of the language-model tools it uses. */
  private readonly sets = new ChangeCache<string, { lm: string; set: ToolSet }>((ws) => ({ lm: this.lmKey(ws), set: this.load(ws || undefined) }));

  constructor(private readonly deps: WorkspaceToolsDeps) {}

  /** The settings or Workspace Trust changed: each folder's tools are loaded again when next asked for. */
  invalidate(): void {
    this.sets.clear();
  }

  /** The tools of a folder (fs path; default: the chat's), with command tools running in that folder. */
  toolSet(ws: string | undefined = this.deps.workspaceFolder()): ToolSet {
    const slot = ws ?? '';
    // VS Code says nothing when another extension registers a language-model tool: a folder whose
    // declarations use one compares the registered ones (their names) instead.
    if (this.sets.get(slot).lm !== this.lmKey(slot)) this.sets.delete(slot);
    return this.sets.get(slot).set;
  }

  /** What of the registered language-model tools a folder's tool set depends on ('' when it declares no lmTool). */
  private lmKey(ws: string): string {
    return declaresLmTool(this.deps.settings(ws || undefined).tools) ? JSON.stringify(this.deps.lmTools.tools().map((t) => t.name)) : '';
  }

  private load(ws: string | undefined): ToolSet {
    const s = this.deps.settings(ws);
    // In an untrusted workspace VS Code already hides workspace values of restricted settings; without
    // trust no tool runs at all.
    if (!this.deps.trusted() || !ws) return { tools: [], errors: [] };
    const set = toolSetFrom(s, ws, { lmTools: (decl) => lmToolSource(decl, s.defaultApproval, this.deps.lmTools) });
    const key = JSON.stringify(set.errors);
    if (set.errors.length && key !== this.warned.get(ws ?? '')) {
      if (this.warned.size > 64) this.warned.clear();
      this.warned.set(ws ?? '', key);
      for (const e of set.errors) this.deps.log.warn(formatDeclarationError(e));
      const ready = set.tools.length ? ` (${set.tools.length} ready)` : '';
      const what = set.errors.length === 1 ? 'A tool in codeact.tools is broken' : `${set.errors.length} tools in codeact.tools are broken`;
      void this.deps.apis
        .showWarningMessage(`CodeAct: ${what} and unavailable${ready}. ${forDisplay(formatDeclarationError(set.errors[0]))}`, 'Open Settings', 'Show Log')
        .then((a) => {
          if (a === 'Open Settings') void this.deps.apis.executeCommand('workbench.action.openWorkspaceSettingsFile');
          if (a === 'Show Log') this.deps.log.show();
        });
    }
    return set;
  }

  /** The managed tools after the async phase (MCP servers' descriptions and schemas filled in), cached per codeact.tools value. */
  private async resolvedTools(folder: string | undefined): Promise<ToolSet> {
    const set = this.toolSet(folder);
    if (!needsResolving(set)) return set;
    // A sign-in (or sign-out) of an MCP server lists the tools again.
    const key = JSON.stringify([folder, this.deps.settings(folder).tools, resolveGeneration()]);
    if (this.resolved?.key !== key) this.resolved = { key, set: resolveTools(set) };
    return this.resolved.set;
  }

  /**
   * A gateway over the tools, asking the user where a tool's policy says so (and "deny" always winning);
   * `modal`: always in a dialog (a notebook cell's calls); `folder`: whose tools (default: the chat's).
   */
  async gateway(modal = false, folder: string | undefined = this.deps.workspaceFolder()): Promise<ToolGateway> {
    const s = this.deps.settings(folder);
    const resolved = await this.resolvedTools(folder);
    return new ToolGateway(resolved.tools, {
      // A declaration that could not be loaded: a call of it says which and why.
      unusable: resolved.errors,
      approver: (req) => this.deps.approvals.approveTool(req, modal),
      elicitor: this.deps.approvals.elicitations.elicitor(modal),
      policyOverride: this.deps.approvals.policyOverride(s.alwaysAllow),
      log: (line) => this.deps.log.info(line),
      // install_packages: the person approves each install (card or dialog); never without Workspace Trust.
      ...installOptionsFrom(s, {
        trusted: this.deps.trusted(),
        folder,
        python: this.deps.pythonFor?.(folder, s.python),
        approve: (req) => this.deps.approvals.approveInstall(req, modal),
        switchEnvironment: (python) => (folder ? this.deps.switchPython?.(folder, python) : undefined),
        log: (line) => this.deps.log.info(line),
      }),
    });
  }
}
