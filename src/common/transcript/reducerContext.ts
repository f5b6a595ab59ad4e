/** The reducer's working context for one event: it creates and finds items, and records what changed. */
import { keepsCheckpoints } from '../runtimes';
import type { CodeInterpreterCallItem, FileOutput, FunctionCallItem, FunctionCallOutputItem, MessageItem, OutputItem, TextEditorItem } from '../events';
import {
  CODE_TOOL_NAMES,
  callAliasKey,
  execKey,
  functionKey,
  messageKey,
  type ApprovalView,
  type ExecView,
  type FunctionView,
  type ItemView,
  type MessageView,
  type TranscriptChange,
  type TranscriptModel,
  type TurnView,
  findTurn,
} from './model';
import { takeItemDisplays } from './displayList';
import { appendOutput, emptyTail } from './outputTail';

export class Ctx {
  readonly changes: TranscriptChange[] = [];
  /** The turn the event names (a saved event carries `turn_id`): its items go there, whatever runs last. */
  readonly owner?: TurnView;

  constructor(
    private readonly model: TranscriptModel,
    turnId?: string,
  ) {
    if (turnId) this.owner = findTurn(model, turnId);
  }

  turnChanged(turn: TurnView): void {
    turn.rev++;
    if (!this.changes.some((c) => c.kind === 'turn' && c.id === turn.id)) this.changes.push({ kind: 'turn', id: turn.id, added: false });
  }

  itemChanged(item: ItemView): void {
    item.rev++;
    if (!this.changes.some((c) => c.kind === 'item' && c.key === item.key))
      this.changes.push({ kind: 'item', key: item.key, turnId: item.turnId, added: false });
  }

  addItem(turn: TurnView, item: ItemView): void {
    this.model.items[item.key] = item;
    turn.itemKeys.push(item.key);
    this.changes.push({ kind: 'item', key: item.key, turnId: turn.id, added: true });
  }

  /** The turn new items go to: the running turn, else an implicit one (reopened if it was the last). */
  turnForNewItem(): TurnView {
    if (this.owner) return this.owner;
    const model = this.model;
    const last = model.turns[model.turns.length - 1];
    if (last && last.status === 'running') return last;
    if (last && last.implicit) {
      last.status = 'running';
      this.turnChanged(last);
      return last;
    }
    const turn: TurnView = { id: `t:${++model.serial}`, implicit: true, status: 'running', itemKeys: [], responses: 0, rev: 1 };
    model.turns.push(turn);
    this.changes.push({ kind: 'turn', id: turn.id, added: true });
    return turn;
  }

  /**
   * The turn a background job's question goes to: the event's own turn, else the last turn as it is (a job may
   * ask between turns: nothing is reopened or shown as working), else a new one.
   */
  turnForJobItem(): TurnView {
    return this.owner ?? this.model.turns[this.model.turns.length - 1] ?? this.turnForNewItem();
  }

  /**
   * The view an item key names now: in transcripts saved before our ids were minted, a later turn may reuse a
   * provider's id (`exec_call_0` in turn 1 and in turn 2); its item then got a key of its own, which
   * `aliases` points the old key at.
   */
  lookup(key: string): ItemView | undefined {
    return this.model.items[this.model.aliases[key] ?? key];
  }

  /**
   * The view for `key`, unless it belongs to an earlier turn while a later one runs: the id was then reused
   * (old transcripts), and the running turn gets a view of its own instead of overwriting the earlier one.
   */
  private current(key: string): ItemView | undefined {
    const view = this.lookup(key);
    if (!view) return undefined;
    const last = this.owner ?? this.model.turns[this.model.turns.length - 1];
    if (last && !last.implicit && (last === this.owner || last.status === 'running') && view.turnId !== last.id) return undefined;
    return view;
  }

  /** The key of a new view: `key`, or, when an earlier turn holds `key`, a fresh key that `key` now points at. */
  private freshKey(key: string): string {
    if (!this.model.items[key] && !this.model.aliases[key]) return key;
    const fresh = `${key}#${++this.model.serial}`;
    this.model.aliases[key] = fresh;
    return fresh;
  }

  message(itemId: string, thinking: boolean): MessageView {
    const existing = this.current(messageKey(itemId));
    if (existing && existing.kind === 'message') return existing;
    const turn = this.turnForNewItem();
    const key = this.freshKey(messageKey(itemId));
    const view: MessageView = { kind: 'message', key, turnId: turn.id, id: itemId, role: 'assistant', text: '', thinking, done: false, rev: 0 };
    this.addItem(turn, view);
    return view;
  }

  exec(itemId: string): ExecView {
    const existing = this.current(execKey(itemId));
    if (existing && existing.kind === 'exec') return existing;
    const turn = this.turnForNewItem();
    const key = this.freshKey(execKey(itemId));
    const view: ExecView = {
      kind: 'exec',
      key,
      turnId: turn.id,
      id: itemId,
      status: 'writing',
      runtime: turn.runtime,
      code: '',
      codeDone: false,
      output: emptyTail(),
      liveOutput: false,
      images: [],
      displays: [],
      files: [],
      hasValue: false,
      truncated: false,
      tools: [],
      awaiting: 0,
      rev: 0,
    };
    this.addItem(turn, view);
    return view;
  }

  /**
   * The function-call view of our item id (made, with `name`, if there is none yet); undefined for the code
   * tools, which are shown as cards. Never found by the provider's call id: servers reuse those.
   */
  functionCall(itemId: string, name?: string, callId?: string): FunctionView | undefined {
    const view = this.current(functionKey(itemId));
    if (view && view.kind === 'function') return view;
    if (!name || CODE_TOOL_NAMES.includes(name)) return undefined;
    return this.addFunction({ type: 'function_call', id: itemId, call_id: callId ?? itemId, name, status: 'in_progress' });
  }

  addFunction(item: FunctionCallItem): FunctionView | undefined {
    if (CODE_TOOL_NAMES.includes(item.name)) return undefined;
    const turn = this.turnForNewItem();
    const view: FunctionView = {
      kind: 'function',
      key: this.freshKey(functionKey(item.id ?? item.call_id)),
      turnId: turn.id,
      callId: item.call_id,
      name: item.name,
      arguments: item.arguments ?? '',
      status: item.status === 'completed' ? 'completed' : 'in_progress',
      rev: 1,
    };
    this.addItem(turn, view);
    // Outputs saved before ids were ours name only the provider's call id: they answer the latest call with it.
    this.model.aliases[callAliasKey(item.call_id)] = view.key;
    return view;
  }

  outputItem(item: OutputItem, done: boolean): void {
    switch (item.type) {
      case 'message':
        return this.messageItem(item, done);
      case 'reasoning':
        return this.messageItem({ type: 'message', id: item.id, role: 'assistant', text: item.text, thinking: true }, done);
      case 'code_interpreter_call':
        return this.codeItem(item, done);
      case 'function_call':
        return this.functionItem(item, done);
      case 'function_call_output':
        return this.functionOutput(item);
      case 'text_editor_call':
        return this.editorItem(item);
    }
  }

  private messageItem(item: MessageItem, done: boolean): void {
    const msg = this.message(item.id, item.thinking === true);
    msg.role = item.role;
    if (done || item.text) msg.text = item.text;
    if (done) msg.done = true;
    this.itemChanged(msg);
  }

  private codeItem(item: CodeInterpreterCallItem, done: boolean): void {
    const exec = this.exec(item.id);
    exec.runtime = item.runtime ?? exec.runtime;
    if (item.sandbox) exec.sandbox = item.sandbox;
    if (item.tool) exec.tool = item.tool;
    if (item.container_id !== undefined) exec.containerId = item.container_id;
    if (item.code && (done || item.code.length >= exec.code.length)) exec.code = item.code;
    if (!done) {
      if (item.status === 'interpreting') {
        exec.status = 'running';
        // A run a window let go of (a reload) and the next one watches again: it runs, its earlier end was not one.
        exec.error = undefined;
      }
      this.itemChanged(exec);
      return;
    }
    exec.codeDone = true;
    exec.exitCode = item.exit_code;
    if (item.duration_ms !== undefined) exec.durationMs = item.duration_ms;
    if (item.truncated) exec.truncated = true;
    if (item.changes) exec.changes = item.changes;
    if (item.session && keepsCheckpoints(item.runtime) && !item.session.state_lost) exec.rewindable = true;
    // A stopped run (status "incomplete") is shown as stopped, not as an error with a null result.
    // (A later end replaces an earlier one: a run left running when a window reloaded, then watched to its end.)
    exec.error = item.error && item.status !== 'incomplete' ? item.error : undefined;
    if (item.value !== undefined && item.status === 'completed') {
      exec.hasValue = true;
      exec.value = item.value;
    }
    for (const out of item.outputs ?? []) {
      if (out.type === 'logs') {
        if (!exec.liveOutput) appendOutput(exec.output, out.stream === 'stderr' ? 'stderr' : 'stdout', out.logs);
      } else if (out.type === 'image') {
        if (!exec.images.includes(out.url)) exec.images.push(out.url);
      } else if (out.type === 'file') {
        if (!exec.files.some((f) => sameFile(f, out))) exec.files.push(out);
      }
    }
    takeItemDisplays(exec, item.outputs ?? []);
    exec.status = item.status === 'incomplete' ? 'stopped' : item.status === 'failed' || item.error ? 'failed' : 'done';
    for (const call of exec.tools) {
      if (call.status === 'running') {
        call.status = 'stopped';
        call.rev++;
      }
    }
    this.itemChanged(exec);
  }

  private functionItem(item: FunctionCallItem, done: boolean): void {
    let fn = this.functionCall(item.id ?? item.call_id);
    if (!fn) fn = this.addFunction(item);
    if (!fn) return;
    if (item.arguments !== undefined && (done || item.arguments.length >= fn.arguments.length)) fn.arguments = item.arguments;
    if (done || item.status === 'completed') fn.status = 'completed';
    this.itemChanged(fn);
  }

  private functionOutput(item: FunctionCallOutputItem): void {
    const fn = this.lookup(item.item_id ? functionKey(item.item_id) : callAliasKey(item.call_id));
    if (!fn || fn.kind !== 'function') return;
    fn.output = item.output;
    fn.isError = item.is_error;
    fn.status = 'completed';
    this.itemChanged(fn);
  }

  private editorItem(item: TextEditorItem): void {
    const key = `t:${item.id}`;
    const existing = this.model.items[key];
    if (existing && existing.kind === 'editor') {
      existing.item = item;
      this.itemChanged(existing);
      return;
    }
    const turn = this.turnForNewItem();
    this.addItem(turn, { kind: 'editor', key, turnId: turn.id, id: item.id, item, rev: 1 });
  }

  releaseApproval(view: ApprovalView): void {
    if (!view.itemId) return;
    const exec = this.lookup(execKey(view.itemId));
    if (exec && exec.kind === 'exec' && exec.awaiting > 0) {
      exec.awaiting--;
      this.itemChanged(exec);
    }
  }

  /** Marks what still runs in a finished turn as stopped, and pending approvals as expired. */
  settleTurn(turn: TurnView, how: 'completed' | 'stopped'): void {
    for (const key of turn.itemKeys) {
      const item = this.model.items[key];
      if (!item) continue;
      if (item.kind === 'exec') {
        let changed = false;
        if (item.status === 'writing' || item.status === 'running') {
          // A turn that completed normally with an execution still "running" lost its final item: call it done.
          item.status = how === 'completed' && item.status === 'running' && !item.error ? 'done' : 'stopped';
          changed = true;
        }
        for (const call of item.tools) {
          if (call.status === 'running') {
            call.status = 'stopped';
            call.rev++;
            changed = true;
          }
        }
        if (item.awaiting) {
          item.awaiting = 0;
          changed = true;
        }
        if (changed) this.itemChanged(item);
      } else if (item.kind === 'message' && !item.done) {
        item.done = true;
        this.itemChanged(item);
      } else if (item.kind === 'approval' && item.status === 'pending' && item.job === undefined) {
        // (A background job's question outlives the turn it showed in: its job's end settles it.)
        item.status = 'expired';
        this.itemChanged(item);
      } else if (item.kind === 'function' && item.status === 'in_progress') {
        item.status = 'completed';
        this.itemChanged(item);
      }
    }
  }
}

function sameFile(a: FileOutput, b: FileOutput): boolean {
  return (
    (a.file_id !== undefined && a.file_id === b.file_id) ||
    (a.path !== undefined && a.path === b.path && a.container_id === b.container_id) ||
    (a.url !== undefined && a.url === b.url)
  );
}
