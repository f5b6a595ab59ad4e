/**
 * Which workspace folder a chat turn belongs to, in a multi-root workspace. A conversation remembers its
 * folder (`workspace` in its transcript's meta) and its turns use it, with that folder's settings, tools and
 * runtime (workspace mount, command tools' working directory). A new conversation takes the folder the person
 * picked in the panel's folder bar, else the folder of the active editor (the last one that had a file of a
 * folder), else the first folder. A remembered folder that is no longer in the workspace is not replaced
 * silently by another: the turn is refused with what to do (./session), and the bar says so.
 * No `vscode` import: the folders come through {@link FolderApis}.
 */
import type { WorkspaceState } from '../common/protocol';
import type { Conversation } from '../core/agent/transcriptStore';

interface FolderInfo {
  name: string;
  /** The folder's fs path (the contract of issue 23: folders are absolute fs path strings). */
  path: string;
}

export interface FolderApis {
  /** The workspace's folders, in order (none: no folder open). */
  folders(): FolderInfo[];
  /** The folder of the active editor's file, or of the last editor that had one (undefined: none). */
  activeEditorFolder(): string | undefined;
}

/** A conversation's folder that is not open in this window. */
export class FolderGoneError extends Error {
  constructor(
    readonly folder: string,
    open: FolderInfo[],
  ) {
    super(
      `This conversation worked in the folder ${folder}, which is not open in this window` +
        (open.length
          ? `. Add it back (File > Add Folder to Workspace…), pick one of ${open.map((f) => `"${f.name}"`).join(', ')} in the panel's folder bar to continue there, or start a new conversation.`
          : `. Open it (File > Open Folder…) to continue, or start a new conversation.`),
    );
    this.name = 'FolderGoneError';
  }
}

/** Where a turn runs: a folder (its fs path) or none (no folder open); `gone`: the remembered folder is not open. */
type TurnFolder = { folder: string | undefined; gone?: boolean };

export class ChatFolder {
  /** The person's pick in the folder bar for the next new conversation (cleared by a new conversation). */
  private picked?: string;

  constructor(
    private readonly apis: FolderApis,
    private readonly conversation: () => Conversation | undefined,
  ) {}

  folders(): FolderInfo[] {
    return this.apis.folders();
  }

  private isOpen(folder: string): boolean {
    return this.apis.folders().some((f) => f.path === folder);
  }

  /** The folder a new conversation would take: the pick, the active editor's, the first. */
  private fresh(): string | undefined {
    if (this.picked !== undefined && this.isOpen(this.picked)) return this.picked;
    const active = this.apis.activeEditorFolder();
    if (active !== undefined && this.isOpen(active)) return active;
    return this.apis.folders()[0]?.path;
  }

  /** The folder of the chat's next turn: the open conversation's, or what a new one would take. */
  current(): TurnFolder {
    const remembered = this.conversation()?.meta.workspace;
    if (remembered !== undefined) return this.isOpen(remembered) ? { folder: remembered } : { folder: remembered, gone: true };
    return { folder: this.fresh() };
  }

  /** The folder to run in, or a {@link FolderGoneError} when the conversation's folder is not open. */
  require(): string | undefined {
    const c = this.current();
    if (c.gone) throw new FolderGoneError(c.folder!, this.apis.folders());
    return c.folder;
  }

  /** The folder a new conversation takes (its meta remembers it). */
  forNewConversation(): string | undefined {
    return this.fresh();
  }

  /**
   * The person picked a folder in the bar: the open conversation moves there (its later turns run there, in
   * a fresh session of that folder's runtime), else the next new conversation takes it. Returns whether the
   * open conversation moved.
   */
  pick(folder: string): boolean {
    if (!this.isOpen(folder)) throw new Error(`${folder} is not a folder of this workspace.`);
    const convo = this.conversation();
    this.picked = convo ? undefined : folder;
    if (!convo || convo.meta.workspace === folder) return false;
    convo.update({ workspace: folder });
    return true;
  }

  /** A new conversation starts: it follows the active editor again until the person picks. */
  reset(): void {
    this.picked = undefined;
  }

  /** What the panel's folder bar shows (absent: one folder or none, and nothing is gone). */
  state(): WorkspaceState | undefined {
    const folders = this.apis.folders();
    const c = this.current();
    if (folders.length < 2 && !c.gone) return undefined;
    const name =
      c.folder === undefined ? undefined : (folders.find((f) => f.path === c.folder)?.name ?? c.folder.split(/[\\/]/).filter(Boolean).pop() ?? c.folder);
    return {
      folders: folders.map((f) => ({ name: f.name, path: f.path })),
      ...(c.folder !== undefined ? { folder: { name: name!, path: c.folder, ...(c.gone ? { gone: true } : {}) } } : {}),
    };
  }
}
