/**
 * The session's notebook cells (./notebook/kernel): a cell's code in its notebook's session, in the runtime
 * of the notebook's workspace folder, with that folder's tools (approvals in a dialog); and ending or
 * restarting a notebook's session, whatever turn runs elsewhere.
 */
import type { CodeInterpreterCallItem } from '../common/events';
import type { CellRunOptions } from './notebook/kernelRunner';
import type { RuntimeCache } from './runtimeCache';
import type { CodeActSettings } from './settings';
import type { VariablesTracker } from './sessionVariables';
import type { WorkspaceTools } from './workspaceTools';

interface NotebookRunsDeps {
  runtimes: RuntimeCache;
  tools: WorkspaceTools;
  variables: VariablesTracker;
  requireTrust(what: string): void;
  settings(folder: string | undefined): CodeActSettings;
  /** The workspace folder of a document's URI (a string), if it is in one. */
  folderOfUri?(uri: string): string | undefined;
  refreshVariables(): void;
}

/** A notebook's session id is `nb:<uri>` (./notebook/kernelRunner): its folder is the notebook's. */
function notebookUri(sessionId: string): string | undefined {
  return sessionId.startsWith('nb:') ? sessionId.slice(3) : undefined;
}

export class NotebookRuns {
  constructor(private readonly deps: NotebookRunsDeps) {}

  async run(code: string, o: CellRunOptions, chatFolder: () => string | undefined): Promise<CodeInterpreterCallItem> {
    const d = this.deps;
    d.requireTrust('Running code');
    const uri = notebookUri(o.sessionId);
    const folder = (uri !== undefined ? d.folderOfUri?.(uri) : undefined) ?? chatFolder();
    const runtime = await d.runtimes.get(folder, o.sessionId);
    d.runtimes.documentSessions.set(o.sessionId, o.label);
    d.variables.shown = { id: o.sessionId, label: o.label };
    const request = { code, itemId: o.itemId, sessionId: o.sessionId, timeoutMs: d.settings(folder).timeoutMs };
    try {
      return await runtime.execute(request, { signal: o.signal, onToolCall: (await d.tools.gateway(true, folder)).handler, onEvent: o.onEvent });
    } finally {
      d.refreshVariables();
    }
  }

  async end(sessionId: string, how: 'restart' | 'close'): Promise<boolean> {
    const runtime = this.deps.runtimes.of(sessionId);
    const had = runtime?.sessions.has(sessionId) ?? false;
    await (how === 'restart' ? runtime?.sessions.restart(sessionId) : runtime?.sessions.close(sessionId));
    if (how === 'close') this.deps.runtimes.documentSessions.delete(sessionId);
    this.deps.refreshVariables();
    return had;
  }
}
