/**
 * "CodeAct: Continue a Conversation from the CLI or ACP…": a conversation that `codeact chat` or an editor's
 * `codeact acp` agent had in one of this workspace's folders goes on in the panel. It is copied into the panel's
 * history under its id (core/agent/conversationCopy; the CLI's file stays as it was) and opened; its Python
 * session, kept by the folder's session host, is taken up live, so its variables are there. A session that is gone
 * is said, as for any reopened conversation.
 */
import * as vscode from 'vscode';
import { cliConversationsDir, conversationsOfFolders } from '../core/agent/conversationCopy';
import { TranscriptStore } from '../core/agent/transcriptStore';
import { formatCount, relativeTime } from '../common/format';
import { forDisplay } from '../common/untrusted';
import type { CodeActController } from './controller';

const turnsOf = (n: number) => `${formatCount(n)} ${n === 1 ? 'turn' : 'turns'}`;

/** What the picker shows of a stored title (the person's prompt): one line, invisible marks shown, `$(name)` escaped as VS Code escapes icons. */
const shown = (title: string) => forDisplay(title.slice(0, 200)).replace(/\$\(/g, '\\$(');

/** The command: pick one of the CLI's conversations of this workspace, and open it in the panel. Returns its id, if one was opened. */
export async function continueCliConversation(controller: CodeActController, reveal: () => Promise<void>): Promise<string | undefined> {
  const from = new TranscriptStore(cliConversationsDir());
  const folders = controller.folders.folders();
  const listed = conversationsOfFolders(from, folders);
  if (!listed.length) {
    void vscode.window.showInformationMessage(
      `CodeAct: no conversation of codeact chat or an ACP editor in ${folders.length === 1 ? 'this folder' : "this workspace's folders"} (looked in ${forDisplay(from.dir)}).`,
    );
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(
    listed.map((c) => ({
      label: shown(c.title),
      description: [turnsOf(c.turns), c.model && shown(c.model)].filter(Boolean).join(' · '),
      detail: `${folders.length > 1 ? `${shown(c.folderName)} · ` : ''}${relativeTime(c.updatedAt)} · ${c.id}`,
      conversation: c,
    })),
    {
      title: 'CodeAct: Continue a Conversation from the CLI or ACP',
      placeHolder: 'Conversations of codeact chat and ACP editors in this workspace: one goes on in the panel, with its Python session',
      matchOnDetail: true,
    },
  );
  if (!pick) return undefined;
  const c = pick.conversation;
  let replace = false;
  if (controller.store.exists(c.id)) {
    const here = controller.store.list().find((x) => x.id === c.id);
    const answer = await vscode.window.showWarningMessage(
      `The panel already has "${forDisplay(c.title.slice(0, 200))}" (continued earlier, ${formatCount(here?.turns ?? 0)} ${here?.turns === 1 ? 'turn' : 'turns'}). Replace the panel's copy with the CLI's (${formatCount(c.turns)} ${c.turns === 1 ? 'turn' : 'turns'})?`,
      { modal: true, detail: "Turns the panel added to its copy are lost. The CLI's file is not changed." },
      'Replace',
      "Open the Panel's Copy",
    );
    if (!answer) return undefined;
    replace = answer === 'Replace';
    if (!replace) {
      await open(controller, reveal, c.id);
      return c.id;
    }
  }
  await open(controller, reveal, c.id, { store: from, replace });
  return c.id;
}

async function open(controller: CodeActController, reveal: () => Promise<void>, id: string, from?: { store: TranscriptStore; replace: boolean }) {
  const { conversation, notice } = await controller.openConversation(id, from);
  await reveal();
  if (notice) void vscode.window.showInformationMessage(`CodeAct: ${forDisplay(notice)}`);
  else controller.log.info(`conversation ${id} ("${forDisplay(conversation.meta.title)}") continued in the panel from ${from ? from.store.dir : 'its copy'}`);
}
