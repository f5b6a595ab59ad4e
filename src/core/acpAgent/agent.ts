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
 * - Approvals, installs and code review are permission requests (./asking).
 * - `session/cancel` stops the turn (the run's whole process tree with it); the prompt answers `cancelled`.
 */
import { agent, PROTOCOL_VERSION, RequestError, type AgentApp, type AgentContext, type ContentBlock, type PromptResponse } from '@agentclientprotocol/sdk';
import * as path from 'node:path';
import type { TranscriptEvent } from '../../common/transcript';
import { MODES } from '../../common/runtimes';
import type { Conversation, TranscriptStore } from '../agent/transcriptStore';
import { titleFrom } from '../agent/transcriptStore';
import type { EngineConfig } from '../config/resolve';
import type { ToolGateway } from '../gateway/gateway';
import type { Provider } from '../providers/shared/types';
import type { Runtime } from '../runtime/types';
import { runChatTurn } from '../turn/turns';
import { CODEACT_VERSION } from '../util/version';
import { AcpAsking } from './asking';
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
  /** Opens the folder at an absolute path (its settings, tools, trust and runtime); throws saying what is wrong. */
  open: (cwd: string) => Promise<AcpFolder>;
  /** How long a permission request waits for the person (default ./asking). */
  answerMs?: number;
  /** Where the door's own problems are said (stderr: stdout is the protocol's). */
  log?: (line: string) => void;
}

/** The longest prompt one `session/prompt` may carry (a bound before any work). */
const MAX_PROMPT_CHARS = 1_000_000;
/** Sessions one connection may have open at once. */
const MAX_SESSIONS = 16;

interface Session {
  convo: Conversation;
  folder: AcpFolder;
  asking: AcpAsking;
  /** The turn going on: how to stop it. */
  turn?: AbortController;
}

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
  let client: AgentContext | undefined;

  const close = async (id: string) => {
    const s = sessions.get(id);
    if (!s) return;
    sessions.delete(id);
    s.turn?.abort();
    const rt = s.folder.runtime;
    // A session host keeps the Python session for `codeact chat --continue`; else it ends with the ACP session.
    if (!rt.sessions.outlivesClient) await rt.sessions.close(s.convo.id).catch(() => {});
    await s.folder.dispose().catch((e: Error) => o.log?.(`closing the session ${id}: ${e.message}`));
  };

  const app = agent({ name: 'codeact' })
    .onConnect((c) => {
      client = c.client;
    })
    .onRequest('initialize', () => ({
      protocolVersion: PROTOCOL_VERSION,
      agentCapabilities: { loadSession: false, promptCapabilities: { image: false, audio: false, embeddedContext: true } },
      agentInfo: { name: 'codeact', title: 'CodeAct', version: CODEACT_VERSION },
      authMethods: [],
    }))
    .onRequest('session/new', async ({ params }) => {
      if (!path.isAbsolute(params.cwd)) throw RequestError.invalidParams(undefined, `cwd must be an absolute path (got "${params.cwd.slice(0, 200)}")`);
      if (sessions.size >= MAX_SESSIONS)
        throw new RequestError(-32603, `This agent already has ${MAX_SESSIONS} sessions open; close one (session/close) first.`);
      let folder: AcpFolder;
      try {
        folder = await o.open(params.cwd);
      } catch (e) {
        throw new RequestError(-32603, (e as Error).message);
      }
      if (!folder.trusted) {
        await folder.dispose().catch(() => {});
        throw new RequestError(-32603, folder.untrusted);
      }
      const { config } = folder;
      const convo = o.store.create({ title: 'ACP session', provider: config.provider, model: config.model, mode: config.mode, workspace: folder.dir });
      const asking = new AcpAsking(
        convo.id,
        (request, signal) => client!.request('session/request_permission', request, { cancellationSignal: signal }),
        o.answerMs,
      );
      sessions.set(convo.id, { convo, folder, asking });
      return { sessionId: convo.id };
    })
    .onRequest('session/prompt', async ({ params }): Promise<PromptResponse> => {
      const s = sessions.get(params.sessionId);
      if (!s) throw new RequestError(-32002, `No session "${params.sessionId.slice(0, 100)}" here (it was closed, or never made by this agent).`);
      if (s.turn) throw RequestError.invalidRequest(undefined, 'A prompt is already running in this session; wait for it or cancel it (session/cancel).');
      const prompt = promptText(params.prompt);
      if (!prompt.trim()) throw RequestError.invalidParams(undefined, 'The prompt has no text.');
      if (prompt.length > MAX_PROMPT_CHARS)
        throw RequestError.invalidParams(undefined, `The prompt is over ${MAX_PROMPT_CHARS.toLocaleString('en-US')} characters.`);
      const controller = new AbortController();
      s.turn = controller;
      const { folder, convo, asking } = s;
      if (convo.meta.title === 'ACP session') convo.update({ title: titleFrom(prompt) });
      const updates = new AcpUpdates(
        (update) => void client!.notify('session/update', { sessionId: convo.id, update }).catch((e: Error) => o.log?.(`session/update: ${e.message}`)),
        { folder: folder.dir, outputChars: folder.config.outputModelChars },
      );
      try {
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
          signal: controller.signal,
          onEvent: (e: TranscriptEvent) => updates.on(e),
        });
        updates.end();
        if (controller.signal.aborted) return { stopReason: 'cancelled' };
        const result = turn.result;
        if (!result) throw new RequestError(-32603, turn.error?.message ?? 'The turn failed before the model answered.');
        if (result.status === 'cancelled') return { stopReason: 'cancelled' };
        if (result.status === 'max_turns') return { stopReason: 'max_turn_requests' };
        if (result.status === 'failed') throw new RequestError(-32603, result.error?.message ?? 'The turn failed.');
        return { stopReason: 'end_turn' };
      } finally {
        s.turn = undefined;
      }
    })
    .onNotification('session/cancel', ({ params }) => {
      sessions.get(params.sessionId)?.turn?.abort();
    })
    .onRequest('session/close', async ({ params }) => {
      await close(params.sessionId);
    });

  return { app, end: async () => void (await Promise.all([...sessions.keys()].map(close))) };
}
