/**
 * VS Code's own agent: the `execute_tool_code` language-model tool (with a confirmation that shows all the
 * code, ./lmToolReview) and the `@codeact` chat participant. Both run the same engine and stream the same events.
 */
import * as vscode from 'vscode';
import { logsOf, type CodeActEvent } from '../common/events';
import { executionSummary } from '../core/agent/agent';
import { executionImages, sessionContext, withinPixelCap } from '../core/agent/executionResult';
import { imageBudgetFrom } from '../core/config/engine';
import { displayModelText, displaysOf } from '../common/displays';
import type { CodeActController } from './controller';
import { confirmationMarkdown, tooLongToReview } from './lmToolReview';
import { untrustedMessage } from './untrusted';

interface ToolInput {
  code: string;
}

export function registerLanguageModelTool(controller: CodeActController): vscode.Disposable {
  if (!vscode.lm?.registerTool) return new vscode.Disposable(() => {});
  return vscode.lm.registerTool<ToolInput>('execute_tool_code', {
    prepareInvocation(options) {
      const code = String(options.input?.code ?? '');
      // All of the code, as it will run: a person approves only what they can read (too long: it will not run).
      const md = new vscode.MarkdownString(
        confirmationMarkdown(
          code,
          controller.toolSet().tools.map((t) => t.name),
        ),
      );
      return {
        invocationMessage: 'Running Python with managed tools',
        confirmationMessages: { title: 'CodeAct: run Python with managed tools?', message: md },
      };
    },
    async invoke(options, token) {
      const refused = controller.trustGate('Running code');
      if (refused) throw new Error(untrustedMessage(refused.what));
      const code = String(options.input?.code ?? '');
      if (!code.trim()) throw new Error('execute_tool_code needs a non-empty "code" string.');
      const tooLong = tooLongToReview(code);
      if (tooLong) throw new Error(tooLong);
      const item = await controller.runCode(code, 'Language model tool: execute_tool_code', 'lm_tool', { token });
      const budget = imageBudgetFrom(controller.settings);
      const seen = withinPixelCap(item, budget.maxPixels);
      const parts: vscode.LanguageModelTextPart[] = [
        new vscode.LanguageModelTextPart(executionSummary(seen, { outputChars: controller.settings.outputModelChars, ...sessionContext(seen) })),
      ];
      // Its images as data parts, where this VS Code has them (newer than the claimed 1.100); the summary names them either way.
      const data = dataPart();
      if (data) for (const img of executionImages(seen, 'this execution', budget)) parts.push(data.image(Buffer.from(img.data, 'base64'), img.mime_type));
      return new vscode.LanguageModelToolResult(parts);
    },
  });
}

/** `vscode.LanguageModelDataPart` (newer VS Code; the claimed minimum, 1.100, has none): images in a tool's result. */
function dataPart(): { image(data: Uint8Array, mime: string): vscode.LanguageModelTextPart } | undefined {
  return (vscode as unknown as { LanguageModelDataPart?: { image(data: Uint8Array, mime: string): vscode.LanguageModelTextPart } }).LanguageModelDataPart;
}

export function registerChatParticipant(controller: CodeActController, context: vscode.ExtensionContext): vscode.Disposable {
  if (!vscode.chat?.createChatParticipant) return new vscode.Disposable(() => {});
  const participant = vscode.chat.createChatParticipant('codeact.agent', async (request, _ctx, stream, token) => {
    if (request.command === 'tools') {
      const { tools, errors } = controller.toolSet();
      const refused = controller.trustGate('Using workspace tools');
      if (refused) stream.markdown(untrustedMessage(refused.what) + '\n');
      else if (!tools.length) stream.markdown('No managed tools are declared. Add `codeact.tools` to `.vscode/settings.json`.\n');
      for (const t of tools) stream.markdown(`- **${t.name}** (${t.source}${t.approval !== 'auto' ? `, ${t.approval}` : ''}): ${t.description}\n`);
      for (const e of errors) stream.markdown(`- ⚠️ codeact.tools[${e.index}]: ${e.message}\n`);
      return {};
    }
    // /run is code; a prompt in hosted mode runs its code at the provider (the controller's gate decides).
    const refused = controller.trustGate('Running code', request.command === 'run' ? 'code' : 'prompt');
    if (refused) {
      stream.markdown(untrustedMessage(refused.what));
      stream.button({ command: 'workbench.trust.manage', title: 'Manage Workspace Trust' });
      return {};
    }
    if (controller.busy) {
      stream.markdown('CodeAct is already running something. Stop it first with **CodeAct: Stop**.');
      return {};
    }
    const render = participantRenderer(stream);
    if (request.command === 'run') {
      const editor = vscode.window.activeTextEditor;
      const code = editor ? (editor.selection.isEmpty ? editor.document.getText() : editor.document.getText(editor.selection)) : request.prompt;
      if (!code.trim()) {
        stream.markdown('Select Python code in the editor (or type it after `/run`).');
        return {};
      }
      stream.markdown('```python\n' + code.replace(/\n$/, '') + '\n```\n');
      await controller.runCode(code, '@codeact /run', 'participant', { token, onEvent: render });
      return {};
    }
    const result = await controller.send(request.prompt, 'participant', { token, onEvent: render });
    if (result?.error && result.status !== 'cancelled') return { errorDetails: { message: result.error.message } };
    return {};
  });
  participant.iconPath = vscode.Uri.joinPath(context.extensionUri, 'media', 'codeact.svg');
  return participant;
}

/** Streams the event vocabulary into a chat response: answer text, code, output, tool calls. */
function participantRenderer(stream: vscode.ChatResponseStream): (e: CodeActEvent) => void {
  const code = new Map<string, string>();
  return (e) => {
    switch (e.type) {
      case 'response.output_text.delta':
        if (!e.thinking) stream.markdown(e.delta);
        break;
      case 'response.code_interpreter_call_code.delta':
        code.set(e.item_id, (code.get(e.item_id) ?? '') + e.delta);
        break;
      case 'response.code_interpreter_call.interpreting':
        stream.progress('Running the code…');
        break;
      case 'codeact.tool_call.started':
        stream.progress(`Calling ${e.name}…`);
        break;
      case 'response.output_item.done': {
        if (e.item.type !== 'code_interpreter_call') break;
        const it = e.item;
        const src = code.get(it.id) ?? it.code;
        if (src && !code.has(`shown:${it.id}`)) stream.markdown('\n```python\n' + src.replace(/\n$/, '') + '\n```\n');
        const out = logsOf(it, 'both');
        if (out.trim()) stream.markdown('```text\n' + (out.length > 4000 ? out.slice(0, 4000) + '\n…' : out.replace(/\n$/, '')) + '\n```\n');
        // Rich outputs as their text (a table's summary, "[image 640×480, PNG]"): the panel draws them.
        const shown = displaysOf(it)
          .slice(0, 20)
          .map((d) => displayModelText(d, 1500));
        if (shown.length)
          stream.markdown(
            shown.map((t) => (t.startsWith('[') ? `_${t}_ (open the CodeAct panel to see it)` : '```text\n' + t + '\n```')).join('\n\n') + '\n\n',
          );
        if (it.status === 'completed') stream.markdown(`**Result:** \`${JSON.stringify(it.value ?? null).slice(0, 500)}\`\n\n`);
        else stream.markdown(`**${it.error?.type ?? 'Error'}:** ${it.error?.message ?? ''}\n\n`);
        break;
      }
      case 'codeact.retry':
        stream.progress(e.message);
        break;
      default:
        // The other events show nothing in the chat response.
        break;
    }
  };
}
