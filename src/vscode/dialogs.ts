/**
 * The dialogs the panel and the commands share, written once: clearing the history, the session that was not
 * there to restart, and exporting a conversation as a notebook. VS Code is reached through ./panelHost.apis.
 */
import { conversationToNotebook } from '../common/notebook';
import type { CodeActController } from './controller';
import type { PanelHostApis } from './panelHost.apis';

/** Restart Session found no live session (the panel's notice; the command's toast says it after "CodeAct: "). */
export const NO_SESSION_TO_RESTART = 'There was no live session to restart: the next run starts a new one.';

/** Asks, then deletes every conversation (the panel's history view and CodeAct: Clear History). Resolves with whether it did. */
export async function clearHistory(controller: Pick<CodeActController, 'clearHistory'>, apis: Pick<PanelHostApis, 'showWarningMessage'>): Promise<boolean> {
  if (!(await apis.showWarningMessage('Delete every CodeAct conversation?', { modal: true }, 'Delete All'))) return false;
  controller.clearHistory();
  return true;
}

/** A conversation's title as a file name (letters, digits, spaces and dashes; at most 40). */
function fileNameOf(title: string): string {
  return (
    title
      .replace(/[^\w -]+/g, '')
      .trim()
      .slice(0, 40) || 'conversation'
  );
}

/** Exports a conversation (the open one when absent) as a Jupyter notebook where the person says, then offers to open it. */
export async function exportNotebook(
  controller: Pick<CodeActController, 'currentConversation' | 'store' | 'settings' | 'folders'>,
  apis: Pick<PanelHostApis, 'saveAs' | 'showInformationMessage' | 'relativePath' | 'openUri'>,
  conversationId?: string,
): Promise<void> {
  const convo =
    conversationId && conversationId !== controller.currentConversation?.id ? controller.store.open(conversationId) : controller.currentConversation;
  if (!convo) {
    void apis.showInformationMessage('CodeAct: there is no conversation to export yet.');
    return;
  }
  const target = await apis.saveAs(
    {
      folders: [convo.meta.workspace, controller.folders.folders()[0]?.path],
      name: `${fileNameOf(convo.meta.title)}.ipynb`,
      filters: { 'Jupyter Notebook': ['ipynb'] },
      title: 'Export Conversation as Notebook',
    },
    () => {
      const nb = conversationToNotebook(convo.events, {
        title: convo.meta.title,
        provider: convo.meta.provider,
        model: convo.meta.model,
        maxImagePixels: controller.settings.maxImagePixels,
      });
      return new TextEncoder().encode(JSON.stringify(nb, null, 1) + '\n');
    },
  );
  if (!target) return;
  const open = await apis.showInformationMessage(`CodeAct: exported to ${apis.relativePath(target)}.`, 'Open');
  if (open) await apis.openUri(target, 'jupyter-notebook');
}
