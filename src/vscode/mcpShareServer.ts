/**
 * The MCP server through which VS Code's agent shares the panel's open conversation (./mcpShare says when): CodeAct's
 * MCP server (core/mcpServer) on Streamable HTTP in this extension host, loopback only, with a bearer token made per
 * start that only VS Code is given. Its code tools run each execution as a turn of the panel's open conversation
 * (the controller's runCode, as the language-model tool does): the panel shows it headed "MCP client", the panel's
 * trust check, approvals and code review apply, and its variables are the panel's. A turn already running in the
 * panel refuses the call, saying so. No `vscode` here: tests drive it with a controller over fakes.
 */
import { serveMcpHttp } from '../core/mcpServer/http';
import type { SharedSession } from '../core/mcpServer/server';
import { imageBudgetFrom } from '../core/config/engine';
import type { ToolGateway } from '../core/gateway/gateway';
import type { CodeActController } from './controller';

/** What the MCP server calls the session it shares. */
export const PANEL_SESSION = "the CodeAct panel's open conversation";

export interface PanelShareServer {
  /** Where VS Code connects: http://127.0.0.1:PORT/mcp */
  readonly url: string;
  /** The bearer token of this start (VS Code sends it as `Authorization: Bearer …`). */
  readonly token: string;
  /** Reads the declared tools again (their list is in the tools' descriptions; each run uses the panel's own). */
  refresh(): Promise<void>;
  close(): Promise<void>;
}

export async function servePanelShare(c: CodeActController): Promise<PanelShareServer> {
  const gatewayNow = () => c.tools.gateway(false, c.folders.current().folder);
  let gateway: ToolGateway = await gatewayNow();
  const shared: SharedSession = {
    what: PANEL_SESSION,
    run: (code, o) => {
      const refused = c.trustGate('Running code');
      if (refused) throw refused;
      const token = { onCancellationRequested: (listener: () => void) => onAbort(o.signal, listener) };
      const request = { tools: o.tools, ...(o.background ? { background: true } : {}) };
      return c.runCode(code, `VS Code agent (MCP): ${o.tools ? 'execute_tool_code' : 'execute_code'}`, 'mcp', { token, onEvent: o.onEvent, request });
    },
    where: () => {
      const id = c.currentConversation?.id;
      const runtime = id ? c.runtimes.of(id) : undefined;
      return id && runtime ? { runtime, sessionId: id } : undefined;
    },
  };
  const server = await serveMcpHttp({
    // What the tools' descriptions say of the runtime (its kind, whether state is kept); each run goes to the folder's own.
    runtime: await c.runtimes.get(c.folders.current().folder),
    gateway: () => gateway,
    // The settings as they are when each call is answered.
    get timeoutMs() {
      return c.settings.timeoutMs;
    },
    get outputChars() {
      return c.settings.outputModelChars;
    },
    get images() {
      return imageBudgetFrom(c.settings);
    },
    get maxJobs() {
      return c.settings.maxJobs;
    },
    get inlineLimit() {
      return c.settings.toolsInlineLimit;
    },
    shared,
  });
  return {
    url: server.url,
    token: server.token,
    refresh: async () => {
      gateway = await gatewayNow();
    },
    close: () => server.close(),
  };
}

/** A VS Code-like cancellation subscription on an AbortSignal. */
function onAbort(signal: AbortSignal, listener: () => void): { dispose(): void } {
  if (signal.aborted) {
    queueMicrotask(listener);
    return { dispose: () => {} };
  }
  signal.addEventListener('abort', listener, { once: true });
  return { dispose: () => signal.removeEventListener('abort', listener) };
}
