/**
 * CodeAct as an ACP agent (issue 36): an editor that hosts agents over the Agent Client Protocol (Zed, JetBrains,
 * marimo, Jupyter AI, …) runs CodeAct as its agent. Built on the official `@agentclientprotocol/sdk`.
 *
 * - `session/new` opens the folder (its `cwd`) as `codeact chat` opens one: its settings, managed tools and trust.
 *   A folder that is not trusted gets no session (the error says how to trust it). The session is a conversation of
 *   the transcript store, under our own id: `codeact chat --continue ID` goes on with it.
 * - `session/prompt` runs one chat turn through the one turn lifecycle (core/turn/turns.ts), with the same
 *   providers, settings and gateway as `codeact chat`. What the turn does streams as `session/update`s
 *   (./updates): the model's text, each execution as a tool call with its code, live output, result and the files
 *   it changed.
 * - `session/load` reopens a conversation of the store (of this agent, of `codeact chat`, of the panel) by its id: what
 *   it said and ran is replayed as updates, and it goes on in its live Python session when the folder's session host
 *   kept it (else the model is told the session is new, as `codeact chat --continue` tells it).
 * - Approvals, installs and code review are permission requests (./asking).
 * - `session/cancel` stops the turn (the run's whole process tree with it); the prompt answers `cancelled`.
 */
import {
  agent,
  PROTOCOL_VERSION,
  RequestError,
  type AgentApp,
  type AgentContext,
  type ContentBlock,
  type PromptResponse,
  type SessionUpdate,
} from '@agentclientprotocol/sdk';
import { realpathSync } from 'node:fs';
import * as path from 'node:path';
import type { TranscriptEvent } from '../../common/transcript';
import { MODES } from '../../common/runtimes';
import type { Conversation, TranscriptStore } from '../agent/transcriptStore';
import { titleFrom } from '../agent/transcriptStore';
import type { EngineConfig } from '../config/resolve';
import type { ToolGateway } from '../gateway/gateway';
import type { Provider } from '../providers/shared/types';
import type { Runtime } from '../runtime/types';
import { CONTINUED_NOTE, runChatTurn } from '../turn/turns';
import { CODEACT_VERSION } from '../util/version';
import { AcpAsking, permissionRequester } from './asking';
import { AcpUpdates } from './updates';

/** A folder opened for one ACP session, as the host (the CLI) opens it. */
export interface AcpFolder {
  dir: string;
  config: EngineConfig;
  trusted: boolean;
  /** What the error of a session/new in a folder that is not trusted says (how to trust it). */
  untrusted: string;
  runtime: Runtime;
  /** The gateway of this session's code, with the door's asking. */
  gateway: (asking: AcpAsking) => ToolGateway;
  provider: () => Promise<Provider>;
  dispose(): Promise<void>;
}

interface AcpAgentOptions {
  store: TranscriptStore;
  /**
   * Opens the folder at an absolute path (its settings, tools, trust and runtime); throws saying what is wrong. A
   * reopened conversation's provider, model and mode apply unless the agent's flags say otherwise.
   */
  open: (cwd: string, earlier?: { provider?: string; model?: string; mode?: string }) => Promise<AcpFolder>;
  /** How long a permission request waits for the person (default ./asking). */
  answerMs?: number;
  /** Where the door's own problems are said (stderr: stdout is the protocol's). */
  log?: (line: string) => void;
}

/** The turns of a reopened conversation replayed to the editor, at most (the latest). */
const MAX_REPLAYED_TURNS = 50;

/** The same folder, links resolved (else as written, resolved). */
function sameFolder(a: string, b: string): boolean {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  return real(a) === real(b);
}

/** The longest prompt one `session/prompt` may carry (a bound before any work). */
const MAX_PROMPT_CHARS = 1_000_000;
/** Sessions one connection may have open at once. */
const MAX_SESSIONS = 16;

interface Session {
  convo: Conversation;
  folder: AcpFolder;
  asking: AcpAsking;
  /** Sends one of its updates to the client that made it. */
  notify: (update: SessionUpdate) => void;
  /** When it was last made or prompted (the one unused longest gives its place). */
  used: number;
  /** The turn going on: how to stop it, and its end. */
  turn?: { controller: AbortController; done: Promise<unknown> };
  /** Said to the model at the next turn (a reopened conversation whose Python session is gone). */
  note?: string;
}

/** A session's title until its first prompt names it. */
const NEW_TITLE = 'ACP session';
let clock = 0;

/** The prompt's blocks as the text of a user message: text as it is, links named; what it cannot read is said. */
function promptText(blocks: ContentBlock[]): string {
  const parts: string[] = [];
  for (const b of blocks) {
    if (b.type === 'text') parts.push(b.text);
    else if (b.type === 'resource_link') parts.push(`[${b.title ?? b.name}](${b.uri})`);
    else if (b.type === 'resource' && 'text' in b.resource) parts.push(`${b.resource.uri}:\n${b.resource.text}`);
    else parts.push(`(a ${b.type} was attached here; CodeAct reads only text and links in a prompt)`);
  }
  return parts.join('\n\n');
}

/** The ACP agent of one connection (connect it to a stream); `end` stops its turns and closes its sessions. */
export function codeActAcpAgent(o: AcpAgentOptions): { app: AgentApp; end: () => Promise<void> } {
  const sessions = new Map<string, Session>();
  /** Sessions being opened (counted against {@link MAX_SESSIONS} with the open ones). */
  let opening = 0;
  /** Conversations being loaded (a second load of one waits for nothing: it is refused). */
  const loading = new Set<string>();

  /**
   * A reopened conversation as updates: its last {@link MAX_REPLAYED_TURNS} turns (the count of the earlier ones
   * said), each prompt as the person's message, runs of text merged into one chunk, executions whole.
   */
  const replay = (convo: Conversation, s: Session) => {
    const updates = new AcpUpdates(s.notify, { folder: s.folder.dir, outputChars: s.folder.config.outputModelChars, replay: true });
    const events = convo.events;
    const starts = events.flatMap((e, i) => (e.type === 'codeact.turn.started' ? [i] : []));
    const from = starts.length > MAX_REPLAYED_TURNS ? starts[starts.length - MAX_REPLAYED_TURNS] : 0;
    if (from)
      s.notify({
        sessionUpdate: 'agent_message_chunk',
        content: { type: 'text', text: `(${starts.length - MAX_REPLAYED_TURNS} earlier turns of this conversation are not shown here.)\n\n` },
      });
    let text: { delta: string; thinking: boolean; item_id: string } | undefined;
    const flush = () => {
      if (text) updates.on({ type: 'response.output_text.delta', item_id: text.item_id, delta: text.delta, ...(text.thinking ? { thinking: true } : {}) });
      text = undefined;
    };
    for (let i = from; i < events.length; i++) {
      const e = events[i];
      if (e.type === 'response.output_text.delta') {
        if (text && text.thinking === !!e.thinking) text.delta += e.delta;
        else {
          flush();
          text = { delta: e.delta, thinking: !!e.thinking, item_id: e.item_id };
        }
        continue;
      }
      flush();
      if (e.type === 'codeact.turn.started') updates.user(e.prompt);
      else updates.on(e);
    }
    flush();
    updates.end();
  };

  const close = async (id: string) => {
    const s = sessions.get(id);
    if (!s) return;
    sessions.delete(id);
    // Its turn ends first (stopped), then its runtime goes.
    s.turn?.controller.abort();
    await s.turn?.done;
    const rt = s.folder.runtime;
    // A session host keeps the Python session for `codeact chat --continue`; else it ends with the ACP session.
    if (!rt.sessions.outlivesClient) await rt.sessions.close(s.convo.id).catch(() => {});
    await s.folder.dispose().catch((e: Error) => o.log?.(`closing the session ${id}: ${e.message}`));
  };

  /** Room for one more session: the one unused longest with no turn going on gives its place; false when all are busy. */
  const room = async () => {
    if (sessions.size + opening < MAX_SESSIONS) return true;
    const idle = [...sessions.entries()].filter(([, s]) => !s.turn).sort((a, b) => a[1].used - b[1].used)[0];
    if (!idle) return false;
    await close(idle[0]);
    return sessions.size + opening < MAX_SESSIONS;
  };

  /** Opens the folder of `cwd` and makes (or reopens) the session's conversation in it; its id. */
  const openSession = async (
    cwd: string,
    client: AgentContext,
    conversation: (folder: AcpFolder) => Conversation,
    earlier?: Conversation['meta'],
  ): Promise<string> => {
    if (!path.isAbsolute(cwd)) throw RequestError.invalidParams(undefined, `cwd must be an absolute path (got "${cwd.slice(0, 200)}")`);
    if (!(await room()))
      throw new RequestError(-32603, `This agent's ${MAX_SESSIONS} sessions all have a prompt running; cancel one, or close one (session/close).`);
    opening++;
    let folder: AcpFolder;
    try {
      folder = await o.open(cwd, earlier);
    } catch (e) {
      opening--;
      throw new RequestError(-32603, (e as Error).message);
    }
    try {
      // The host refuses an untrusted folder before opening anything; a folder opened untrusted all the same gets no session.
      if (!folder.trusted) throw new Error(folder.untrusted);
      const convo = conversation(folder);
      // Its questions and updates go to the client that made it.
      const asking = new AcpAsking(convo.id, permissionRequester(client), o.answerMs);
      const notify = (update: SessionUpdate) =>
        void client.notify('session/update', { sessionId: convo.id, update }).catch((e: Error) => o.log?.(`session/update: ${e.message}`));
      // A conversation that ran code whose Python session is gone is told so at its next turn (as codeact chat does).
      const ranCode = convo.events.some((e) => e.type === 'response.output_item.done' && e.item.type === 'code_interpreter_call');
      const lost = ranCode && folder.runtime.sessions.persist && !folder.runtime.sessions.has(convo.id);
      sessions.set(convo.id, { convo, folder, asking, notify, used: ++clock, ...(lost ? { note: CONTINUED_NOTE } : {}) });
      return convo.id;
    } catch (e) {
      await folder.dispose().catch(() => {});
      throw e instanceof RequestError ? e : new RequestError(-32603, (e as Error).message);
    } finally {
      opening--;
    }
  };

  const app = agent({ name: 'codeact' })
    .onRequest('initialize', () => ({
      protocolVersion: PROTOCOL_VERSION,
      agentCapabilities: {
        loadSession: true,
        promptCapabilities: { image: false, audio: false, embeddedContext: true },
        sessionCapabilities: { close: {} },
      },
      agentInfo: { name: 'codeact', title: 'CodeAct', version: CODEACT_VERSION },
      authMethods: [],
    }))
    .onRequest('session/new', async ({ params, client }) => {
      const id = await openSession(params.cwd, client, (folder) => {
        const { config } = folder;
        return o.store.create({ title: NEW_TITLE, provider: config.provider, model: config.model, mode: config.mode, workspace: folder.dir });
      });
      return { sessionId: id };
    })
    // An earlier conversation (of this agent, of `codeact chat` or of the panel) opened in the editor: what it said and
    // ran is replayed as updates, then it goes on, in its live Python session when the folder's session host kept it.
    .onRequest('session/load', async ({ params, client }) => {
      const id = params.sessionId;
      if (sessions.has(id) || loading.has(id)) throw RequestError.invalidRequest(undefined, 'That session is open already.');
      if (!o.store.exists(id)) throw RequestError.sessionNotFound(id.slice(0, 100));
      loading.add(id);
      try {
        const convo = o.store.open(id);
        // It goes on in its own folder (its session host, settings and rewind points are there), with its provider and model.
        const home = convo.meta.workspace;
        if (typeof home === 'string' && !sameFolder(home, params.cwd))
          throw RequestError.invalidParams(undefined, `This conversation works in ${home}: load it with that folder as cwd.`);
        await openSession(params.cwd, client, () => convo, convo.meta);
        replay(convo, sessions.get(id)!);
      } finally {
        loading.delete(id);
      }
      return {};
    })
    .onRequest('session/prompt', async ({ params, signal }): Promise<PromptResponse> => {
      const s = sessions.get(params.sessionId);
      if (!s) throw RequestError.sessionNotFound(params.sessionId.slice(0, 100));
      if (s.turn) throw RequestError.invalidRequest(undefined, 'A prompt is already running in this session; wait for it or cancel it (session/cancel).');
      const prompt = promptText(params.prompt);
      if (!prompt.trim()) throw RequestError.invalidParams(undefined, 'The prompt has no text.');
      if (prompt.length > MAX_PROMPT_CHARS)
        throw RequestError.invalidParams(undefined, `The prompt is over ${MAX_PROMPT_CHARS.toLocaleString('en-US')} characters.`);
      const controller = new AbortController();
      // session/cancel, or the client cancelling the request itself ($/cancel_request).
      const onAbort = () => controller.abort();
      signal.addEventListener('abort', onAbort, { once: true });
      const { folder, convo, asking } = s;
      s.used = ++clock;
      const updates = new AcpUpdates(s.notify, { folder: folder.dir, outputChars: folder.config.outputModelChars });
      const done = (async (): Promise<PromptResponse> => {
        if (convo.meta.title === NEW_TITLE) convo.update({ title: titleFrom(prompt) });
        const turn = await runChatTurn({
          conversation: convo,
          prompt,
          source: 'acp',
          config: folder.config,
          provider: folder.provider,
          runtime: folder.runtime,
          gateway: folder.gateway(asking),
          // Hosted code runs in the provider's sandbox, where it cannot be stopped before it runs.
          ...(MODES[folder.config.mode].ourRuntime && folder.config.reviewCode ? { agent: { beforeRun: asking.review } } : {}),
          ...(s.note ? { sessionNote: s.note } : {}),
          signal: controller.signal,
          onEvent: (e: TranscriptEvent) => updates.on(e),
        });
        // Said once the model has read it (a turn that failed before its answer says it again next time).
        if (turn.result?.status === 'completed' || turn.result?.status === 'max_turns') s.note = undefined;
        if (controller.signal.aborted) return { stopReason: 'cancelled' };
        const result = turn.result;
        if (!result) throw new RequestError(-32603, turn.error?.message ?? 'The turn failed before the model answered.');
        if (result.status === 'cancelled') return { stopReason: 'cancelled' };
        if (result.status === 'max_turns') return { stopReason: 'max_turn_requests' };
        if (result.status === 'failed') throw new RequestError(-32603, result.error?.message ?? 'The turn failed.');
        return { stopReason: 'end_turn' };
      })();
      s.turn = { controller, done: done.catch(() => {}) };
      try {
        return await done;
      } catch (e) {
        throw e instanceof RequestError ? e : new RequestError(-32603, e instanceof Error ? e.message : String(e));
      } finally {
        // What is still open (an execution the model was writing when it was stopped) ends as failed; nothing after.
        updates.end();
        signal.removeEventListener('abort', onAbort);
        s.turn = undefined;
      }
    })
    .onNotification('session/cancel', ({ params }) => {
      sessions.get(params.sessionId)?.turn?.controller.abort();
    })
    .onRequest('session/close', async ({ params }) => {
      await close(params.sessionId);
    });

  return { app, end: async () => void (await Promise.all([...sessions.keys()].map(close))) };
}
