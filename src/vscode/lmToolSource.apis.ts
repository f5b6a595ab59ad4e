/**
 * The seam between the `lmTool` tool source (./lmToolSource) and VS Code's language-model tools
 * (`vscode.lm`), as an interface, and its implementation bound to `vscode`.
 */
import * as vscode from 'vscode';

/** A language-model tool another extension registered. */
export interface LmToolInfo {
  name: string;
  description: string;
  inputSchema?: object | undefined;
}

export interface LmToolApis {
  /** The registered language-model tools (none when this VS Code has no `vscode.lm`). */
  tools(): readonly LmToolInfo[];
  /** Invokes one and joins the text parts of its result; aborting `signal` cancels it. */
  invokeTool(name: string, input: Record<string, unknown>, signal: AbortSignal): Promise<string>;
}

export const vscodeLmToolApis: LmToolApis = {
  tools: () => vscode.lm?.tools ?? [],
  invokeTool: async (name, input, signal) => {
    const cts = new vscode.CancellationTokenSource();
    const onAbort = () => cts.cancel();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const result = await vscode.lm.invokeTool(name, { input, toolInvocationToken: undefined }, cts.token);
      return result.content.map((p) => (p instanceof vscode.LanguageModelTextPart ? p.value : '')).join('');
    } finally {
      signal.removeEventListener('abort', onAbort);
      cts.dispose();
    }
  },
};
