/**
 * What one run of the agent loop gathers: the items it appends to the history, each turn's usage, the hosted
 * container, the last answer's text, and the numbering of the conversation's code executions.
 */
import type { MessageItem, Usage } from '../../common/events';
import type { ConversationItem, TurnResult } from '../providers/shared/types';
import { countExecutions } from './executionResult';
import { newId } from '../util/ids';

export type AgentStatus = 'completed' | 'failed' | 'cancelled' | 'max_turns';

export interface AgentResult {
  status: AgentStatus;
  /** The final answer's text (the last assistant message of the last turn). */
  text: string;
  /** Items this run appended to the history (user message included), in order. */
  items: ConversationItem[];
  usage: { turns: Usage[]; total: Usage };
  containerId?: string | null;
  error?: { message: string; code: string };
}

function addUsage(a: Usage, b: Usage | undefined): Usage {
  if (!b) return a;
  return {
    input_tokens: a.input_tokens + (b.input_tokens ?? 0),
    output_tokens: a.output_tokens + (b.output_tokens ?? 0),
    total_tokens: (a.total_tokens ?? 0) + (b.total_tokens ?? (b.input_tokens ?? 0) + (b.output_tokens ?? 0)),
  };
}

export class RunState {
  /** Items this run appended (the user's message first). */
  readonly items: ConversationItem[] = [];
  private readonly turns: Usage[] = [];
  private total: Usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
  /** The latest non-empty answer text of the run. */
  private lastText = '';
  private executions: number;

  constructor(
    /** The earlier items of the conversation. */
    readonly history: ConversationItem[],
    prompt: string,
    public containerId: string | null,
    /** Saves items the moment they are final (./turnJournal): the prompt, each response's items, each output. */
    private readonly journal?: (items: ConversationItem[]) => void,
  ) {
    this.executions = countExecutions(history);
    const user: MessageItem = { type: 'message', id: newId('msg_user'), role: 'user', text: prompt };
    this.append(user);
  }

  /** Items saved ahead of `append` (an output saved as its call finished, while others still run). */
  private readonly saved = new Set<ConversationItem>();

  /** Appends items to the run (and saves those not saved yet). */
  append(...items: ConversationItem[]): void {
    this.items.push(...items);
    const unsaved = items.filter((i) => !this.saved.has(i));
    if (unsaved.length) this.save(unsaved);
  }

  /** Saves a finished item now; it is appended (in its place) later. */
  save(items: ConversationItem[]): void {
    for (const i of items) this.saved.add(i);
    try {
      this.journal?.(items);
    } catch {
      // A failed save is the store's to report; the run goes on.
    }
  }

  /** The conversation as the next request sees it, before any compaction. */
  all(): ConversationItem[] {
    return [...this.history, ...this.items];
  }

  /**
   * The number of the next code execution of the conversation ("execution 3"). Taken before the call's
   * first await, so parallel calls are numbered in the order the model made them.
   */
  nextExecution(): number {
    return ++this.executions;
  }

  /** Counts the usage of a model request that is no turn of its own (a compaction's summary) in the total. */
  countRequest(usage: Usage): void {
    this.total = addUsage(this.total, usage);
  }

  /** Adds a finished turn (its items, usage and container); returns the turn's answer text. */
  addTurn(result: TurnResult): string {
    this.append(...result.items);
    if (result.usage) {
      this.turns.push(result.usage);
      this.total = addUsage(this.total, result.usage);
    }
    if (result.containerId) this.containerId = result.containerId;
    const text = result.items
      .filter((i) => i.type === 'message' && i.role === 'assistant' && !i.thinking)
      .map((i) => (i as MessageItem).text)
      .join('');
    if (text) this.lastText = text;
    return text;
  }

  result(status: AgentStatus, error?: AgentResult['error']): AgentResult {
    return {
      status,
      text: this.lastText,
      items: this.items,
      usage: { turns: this.turns, total: this.total },
      containerId: this.containerId,
      ...(error ? { error } : {}),
    };
  }
}
