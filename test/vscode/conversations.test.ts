/**
 * The chat's conversations on their own (src/vscode/conversations.ts), over a real transcript store and fakes
 * of the rest: restored at start, reopened from the history with what the person and the model are told,
 * left (the session closed, never under a running turn), a document's own conversation, delete and clear.
 */
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { conversationsOfFolders } from '../../src/core/agent/conversationCopy';
import { TranscriptStore, type Conversation } from '../../src/core/agent/transcriptStore';
import { CONTINUED_NOTE } from '../../src/core/turn/turns';
import { ConversationMemory, SESSION_GONE_NOTICE } from '../../src/vscode/conversationMemory';
import { BUSY_SWITCH, Conversations, type ConversationsDeps } from '../../src/vscode/conversations';

/** A conversation whose code ran in a local session (its variables die with the session). */
function ranCode(store: TranscriptStore, title: string): Conversation {
  const convo = store.create({ title });
  convo.appendEvent({
    type: 'response.output_item.done',
    item: { type: 'code_interpreter_call', id: 'exec_1', status: 'completed', code: 'a = 1', runtime: 'local', outputs: [] },
  });
  convo.flush();
  return convo;
}

interface Fixture {
  conversations: Conversations;
  store: TranscriptStore;
  state: Map<string, unknown>;
  live: Set<string>;
  closed: string[];
  adopted: [string, string][];
  changed: number;
  refreshed: number;
  resets: number;
  busy: boolean;
  variables: ConversationsDeps['variables'];
  build(): Conversations;
}

describe('vscode conversations (fake seams)', () => {
  let dir: string;
  let f: Fixture;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'codeact-conversations-'));
    const store = new TranscriptStore(path.join(dir, 'store'));
    const state = new Map<string, unknown>();
    const memory = new ConversationMemory(store, { get: <T>(k: string) => state.get(k) as T, update: async (k, v) => void state.set(k, v) });
    f = {
      store,
      state,
      live: new Set(),
      closed: [],
      adopted: [],
      changed: 0,
      refreshed: 0,
      resets: 0,
      busy: false,
      variables: {},
      build: () =>
        new Conversations({
          store,
          memory,
          folders: { forNewConversation: () => '/work/a', reset: () => void f.resets++ },
          settingsFor: () => ({ provider: 'openai', model: 'gpt-test', mode: 'code' }),
          busy: () => f.busy,
          sessions: () => ({
            has: (id) => f.live.has(id),
            close: async (id) => void (f.closed.push(id), f.live.delete(id)),
            handover: {
              idOf: () => undefined,
              adopt: (id, kernel) => void f.adopted.push([id, kernel]),
              release: async () => {},
              idleMs: 0,
              endLeft: async () => 'kept' as const,
            },
          }),
          variables: f.variables,
          changed: () => void f.changed++,
          refreshVariables: () => void f.refreshed++,
        }),
      conversations: undefined as never,
    };
    f.conversations = f.build();
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('the open conversation is remembered and comes back at start; one whose code ran tells the model its session is gone, until a turn runs', () => {
    const c = f.conversations;
    assert.equal(c.current, undefined);
    const made = c.ensure('Which orders are late?');
    assert.equal(made.meta.title, 'Which orders are late?');
    assert.equal(made.meta.workspace, '/work/a', 'a new conversation takes the folder for new ones');
    assert.equal(made.meta.model, 'gpt-test');
    assert.equal(c.ensure('another prompt'), made, 'the open one is kept');
    assert.equal(f.state.get('codeact.openConversation'), made.id);
    assert.equal(c.sessionNote(made.id), undefined, 'a new conversation has nothing to be told');

    const old = ranCode(f.store, 'ran code');
    f.state.set('codeact.openConversation', old.id);
    const restored = f.build();
    assert.equal(restored.current?.id, old.id);
    assert.equal(restored.sessionNote(old.id), CONTINUED_NOTE);
    restored.ran(old.id);
    assert.equal(restored.sessionNote(old.id), undefined);
  });

  it('reopening from the history leaves the open one (its session closed), says a gone session to the person and the model; a live one says nothing', () => {
    const c = f.conversations;
    const first = ranCode(f.store, 'first');
    const open = c.ensure('open');
    f.variables.shown = { id: 'doc_x', label: 'x.py' };
    const { conversation, notice } = c.reopen(first.id);
    assert.equal(conversation.id, first.id);
    assert.equal(c.current?.id, first.id);
    assert.deepEqual(f.closed, [open.id], "the left conversation's session is closed");
    assert.equal(f.variables.shown, undefined, 'the variables view shows the reopened conversation');
    assert.ok((notice ?? '').includes(SESSION_GONE_NOTICE), notice ?? '');
    assert.equal(c.sessionNote(first.id), CONTINUED_NOTE);
    assert.equal(f.state.get('codeact.openConversation'), first.id);
    assert.ok(f.refreshed > 0 && f.changed > 0);

    c.startNew();
    assert.equal(c.current, undefined);
    assert.equal(f.resets, 1, "a new conversation resets the folder bar's pick");
    assert.equal(c.sessionNote(first.id), undefined, 'leaving forgets what the model was to be told');
    f.live.add(first.id);
    const again = c.reopen(first.id);
    assert.equal(again.notice, undefined, 'its session lives: nothing to say');
    assert.equal(c.sessionNote(first.id), undefined);
  });

  it('a conversation whose Jupyter kernel was left running is not told its session is gone; leaving it forgets the kernel; deleting one ends its kernel', () => {
    const kept = ranCode(f.store, 'kernel left running');
    kept.update({ kernelId: 'k-1' });
    f.state.set('codeact.openConversation', kept.id);
    const memory = new ConversationMemory(f.store, { get: <T>(k: string) => f.state.get(k) as T, update: async () => {} });
    assert.equal(memory.restoreOpen()?.id, kept.id);
    assert.equal(memory.takeNotice(), undefined, 'nothing said to the person: the next run says whether the kernel came back');
    const c = f.build();
    assert.equal(c.sessionNote(kept.id), undefined, 'nor to the model');
    c.startNew();
    assert.deepEqual(f.closed, [kept.id]);
    assert.equal(f.store.open(kept.id).meta.kernelId, null, 'its kernel was closed with it: not to be taken back');
    const other = ranCode(f.store, 'another window left its kernel');
    other.update({ kernelId: 'k-2' });
    c.delete(other.id);
    assert.deepEqual(f.adopted, [[other.id, 'k-2']]);
    assert.deepEqual(f.closed, [kept.id, other.id], 'its kernel is shut down with it');
  });

  it('clear ends the kernels earlier windows left running for the conversations it deletes, as delete does', () => {
    const c = f.conversations;
    const open = c.ensure('open');
    const left = ranCode(f.store, 'another window left its kernel');
    left.update({ kernelId: 'k-3' });
    const none = ranCode(f.store, 'no kernel left');
    c.clear();
    assert.deepEqual(f.adopted, [[left.id, 'k-3']], 'only the conversation that remembers a kernel');
    assert.deepEqual(f.closed.sort(), [open.id, left.id].sort(), "the open one's session and the left kernel are shut down");
    assert.ok(!f.closed.includes(none.id));
    assert.deepEqual(c.list(), []);
  });

  it('never switches under a running turn', () => {
    const c = f.conversations;
    const open = c.ensure('open');
    const other = f.store.create({ title: 'other' });
    other.flush();
    f.busy = true;
    assert.throws(() => c.reopen(other.id), { message: BUSY_SWITCH });
    assert.throws(() => c.startNew(), { message: BUSY_SWITCH });
    assert.throws(() => c.delete(open.id), { message: BUSY_SWITCH });
    assert.throws(() => c.clear(), { message: BUSY_SWITCH });
    assert.equal(c.current?.id, open.id);
    assert.deepEqual(
      c
        .list()
        .map((s) => s.id)
        .sort(),
      [open.id, other.id].sort(),
    );
  });

  it("a document's runs go to its own conversation, named after it, kept across runs; the chat's session stays alive", () => {
    const c = f.conversations;
    const chat = c.ensure('chat');
    const doc = { uri: 'file:///work/b/report.py', name: 'report.py', folder: '/work/b' };
    const mine = c.ofDocument(doc);
    assert.notEqual(mine.id, chat.id);
    assert.equal(mine.meta.title, 'report.py');
    assert.equal(mine.meta.workspace, '/work/b', "the document's folder, not the chat's");
    assert.deepEqual(f.closed, [], "the chat's session is kept");
    assert.equal(c.ofDocument(doc), mine, 'the same conversation while it is open');
    c.reopen(chat.id);
    assert.equal(c.ofDocument(doc).id, mine.id, 'and after another was opened');
  });

  it('pick another folder: a conversation whose code ran tells the model its session moved', () => {
    const c = f.conversations;
    const chat = c.ensure('chat only');
    c.sessionMoved();
    assert.equal(c.sessionNote(chat.id), undefined, 'no code ran: nothing was lost');
    const ran = ranCode(f.store, 'ran');
    f.live.add(ran.id);
    c.reopen(ran.id);
    c.sessionMoved();
    assert.equal(c.sessionNote(ran.id), CONTINUED_NOTE);
  });

  it('delete leaves the open conversation only when it is the one deleted; clear leaves everything', () => {
    const c = f.conversations;
    const first = c.ensure('first');
    const second = f.store.create({ title: 'second' });
    second.flush();
    c.delete(second.id);
    assert.equal(c.current?.id, first.id);
    assert.deepEqual(
      c.list().map((s) => s.id),
      [first.id],
    );
    c.delete(first.id);
    assert.equal(c.current, undefined);
    assert.equal(f.state.get('codeact.openConversation'), undefined);
    c.ensure('third');
    c.clear();
    assert.equal(c.current, undefined);
    assert.deepEqual(c.list(), []);
  });

  it("continues a conversation of the CLI's store: copied whole under its id and opened; refused while another process has it; an earlier copy replaced only when asked, the open one keeping its session", () => {
    const cli = new TranscriptStore(path.join(dir, 'cli'));
    const theirs = ranCode(cli, 'from codeact chat');
    theirs.update({ workspace: '/work/a' });
    theirs.flush();
    const before = readFileSync(theirs.file);
    // A last line still being written is not a record: it is left out of the copy.
    appendFileSync(theirs.file, '{"t":1,"event":{"type":"codeact.');
    const c = f.conversations;
    const open = c.ensure('open');
    f.live.add(theirs.id);
    const { conversation, notice } = c.continueFrom(cli, theirs.id, false);
    assert.equal(conversation.id, theirs.id);
    assert.equal(c.current?.id, theirs.id);
    assert.deepEqual(readFileSync(f.store.file(theirs.id)), before, 'the whole records, as they were');
    assert.equal(notice, undefined, 'its session lives: nothing to say');
    assert.deepEqual(f.closed, [open.id]);
    assert.deepEqual(
      c
        .list()
        .map((x) => x.id)
        .sort(),
      [open.id, theirs.id].sort(),
    );
    assert.ok(cli.exists(theirs.id), "the CLI's file stays");

    // Already here: an error unless replacing; replacing the open one keeps its session.
    assert.throws(() => c.continueFrom(cli, theirs.id, false), /already in/);
    truncateSync(theirs.file, before.length);
    theirs.appendEvent({ type: 'codeact.turn.started', turn_id: 't2', prompt: 'and then' } as never);
    theirs.flush();
    c.continueFrom(cli, theirs.id, true);
    assert.deepEqual(f.closed, [open.id], 'the same session: not closed');
    assert.ok(
      c.current?.events.some((e) => 'turn_id' in e && e.turn_id === 't2'),
      "the CLI's later turn is in the panel's copy",
    );

    // Held by another live process (this test's parent): refused, saying by which and which lock.
    const other = ranCode(cli, 'open in an ACP editor');
    writeFileSync(other.file.replace(/\.jsonl$/, '.lock'), String(process.ppid));
    assert.throws(
      () => c.continueFrom(cli, other.id, false),
      (e: Error) => e.message.includes(`pid ${process.ppid}`),
    );
    assert.equal(f.store.exists(other.id), false);
    assert.equal(c.current?.id, theirs.id, 'nothing changed');

    // A running turn: no switching.
    f.busy = true;
    assert.throws(() => c.continueFrom(cli, theirs.id, true), new RegExp(BUSY_SWITCH.slice(0, 20)));
  });

  it("lists the CLI's conversations of the workspace's folders only (by real path), damaged ones left out", () => {
    const cli = new TranscriptStore(path.join(dir, 'cli'));
    const a = path.join(dir, 'a');
    mkdirSync(a);
    symlinkSync(a, path.join(dir, 'a-link'));
    const here = cli.create({ title: 'here', workspace: path.join(dir, 'a-link') });
    cli.create({ title: 'elsewhere', workspace: path.join(dir, 'b') });
    cli.create({ title: 'no folder' });
    writeFileSync(path.join(cli.dir, 'c_bad.jsonl'), 'not json\n');
    assert.deepEqual(
      conversationsOfFolders(cli, [{ name: 'a', path: a }]).map((x) => [x.id, x.folderName]),
      [[here.id, 'a']],
    );
  });
});
