/**
 * Conversations of the command-line doors (`codeact chat`, `codeact acp`), continued in another store: the panel
 * keeps its own (the extension's storage), the CLI its one below. A copy is the other file's whole records, checked
 * as any stored conversation is read (a regular file within the cap, never a FIFO or a link), written under the
 * same id in one step; the original stays where it was. Its Python session is named by that id, so a door that
 * reaches the same session host takes it up live.
 */
import { mkdirSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import * as path from 'node:path';
import { writeFileAtomicSync } from '../util/atomicFile';
import { ConversationBusyError, heldBy } from './conversationLock';
import { readTranscript } from './transcriptFile';
import { wholeEnd, type ListedConversation, type TranscriptStore } from './transcriptStore';

/**
 * Where `codeact chat`, `codeact acp` and `codeact run` keep their conversations unless --storage says otherwise:
 * `$CODEACT_HOME/conversations`, else `$XDG_DATA_HOME/codeact/conversations` (`~/.local/share/codeact/…`).
 */
export function cliConversationsDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CODEACT_HOME) return path.join(env.CODEACT_HOME, 'conversations');
  const base = env.XDG_DATA_HOME || path.join(homedir(), '.local', 'share');
  return path.join(base, 'codeact', 'conversations');
}

/**
 * Copies conversation `id` of `from` into `to` under the same id: its whole records as they are now (a last line
 * still being written is left out). Refused while another process has it open (its turn would be copied half, and
 * its Python session is in use there). `replace`: an earlier copy in `to` is replaced; else one there is an error.
 */
export function copyConversation(from: TranscriptStore, to: TranscriptStore, id: string, o: { replace: boolean }): void {
  const source = from.file(id);
  const owner = heldBy(source);
  if (owner) throw new ConversationBusyError(id, owner.pid, owner.lockFile);
  const { bytes } = readTranscript(source);
  const whole = bytes.subarray(0, wholeEnd(bytes));
  if (!whole.length) throw new Error(`${source} has no whole record yet: nothing to continue.`);
  if (!o.replace && to.exists(id)) throw new Error(`conversation ${id} is already in ${to.dir}.`);
  mkdirSync(to.dir, { recursive: true });
  writeFileAtomicSync(to.file(id), whole, { mode: 0o600, exclusive: !o.replace });
}

/** Conversations {@link conversationsOfFolders} lists at most (the newest). */
const MAX_LISTED = 200;

const realOrSelf = (p: string) => {
  try {
    return realpathSync.native(p);
  } catch {
    return p;
  }
};

/** The store's conversations whose folder is one of `folders` (compared by real path), newest first; damaged ones left out. */
export function conversationsOfFolders(
  store: TranscriptStore,
  folders: readonly { name: string; path: string }[],
): (ListedConversation & { folderName: string })[] {
  const open = new Map(folders.map((f) => [realOrSelf(f.path), f.name]));
  const out: (ListedConversation & { folderName: string })[] = [];
  for (const c of store.list()) {
    if (out.length >= MAX_LISTED) break;
    const name = !c.damaged && typeof c.workspace === 'string' ? open.get(realOrSelf(c.workspace)) : undefined;
    if (name !== undefined) out.push({ ...c, folderName: name });
  }
  return out;
}
