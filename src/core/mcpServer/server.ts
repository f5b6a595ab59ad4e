/**
 * CodeAct as an MCP server (issue 36): another agent (Claude Code, Codex, Gemini CLI, VS Code's agent) runs
 * Python in a live, sandboxed, stateful session of the workspace, whose code reaches the workspace's managed
 * tools only through the gateway (schemas, limits, approvals, deny wins). One session per MCP session.
 *
 * Tools: `execute_tool_code` and `execute_code` (the descriptions the panel's model reads, core/tools/modelTools),
 * `list_variables` and `restart_session`. A result is the text the panel's model reads of the execution
 * (core/agent/executionResult), its images as MCP image content, within the vision budgets, and the files its code
 * created or changed in the workspace as resource links. While code runs,
 * each chunk of output is a progress notification (when the call asked for progress); cancelling the call stops
 * the run and its whole process tree.
 *
 * Approvals and code review are asked of the person through the client's elicitation (./asking). In a folder that
 * is not trusted nothing runs: every code tool says so and how to trust it.
 */
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type ResourceLink, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { CodeActEvent, CodeInterpreterCallItem } from '../../common/events';
import type { TranscriptEvent } from '../../common/transcript';
import { heldBy } from '../agent/conversationLock';
import { titleFrom, type Conversation, type TranscriptStore } from '../agent/transcriptStore';
import { runCodeTurn } from '../turn/turns';
import { mimeOfExtension } from '../../common/mimeTypes';
import { jobNotesText } from '../agent/agent';
import { executionImages, executionSummary, withinPixelCap } from '../agent/executionResult';
import type { ToolGateway } from '../gateway/gateway';
import type { ImageBudget } from '../providers/shared/types';
import type { Runtime } from '../runtime/types';
import { EXECUTE_CODE, EXECUTE_TOOL_CODE, executeCodeSpec, executeToolCodeSpec, jobsAvailable } from '../tools/modelTools';
import { newId } from '../util/ids';
import { CODEACT_VERSION } from '../util/version';
import { McpAsking, type Asked } from './asking';

const LIST_VARIABLES = 'list_variables';
const RESTART_SESSION = 'restart_session';

/** Files a result links at most (the text lists the changes, with their count). */
const MAX_FILE_LINKS = 50;
/** The longest code one call may send (a bound before any work). */
const MAX_CODE_CHARS = 1_000_000;
/** Progress notifications one call sends at most (output chunks beyond it are in the result only). */
const MAX_PROGRESS = 2000;
/** The longest progress message (a chunk of output is cut to it). */
const PROGRESS_CHARS = 500;

interface McpServerOptions {
  runtime: Runtime;
  /** The gateway of this MCP session's code, built with the approver the door gives (./asking). */
  gateway: (asking: McpAsking) => ToolGateway;
  /** Whole-run timeout of each execution (codeact.timeoutSeconds). */
  timeoutMs: number;
  /** The output budget of a result (codeact.outputs.modelChars). */
  outputChars?: number;
  /** Images in one result (codeact.vision.*, codeact.outputs.maxImageMegapixels). */
  images: ImageBudget;
  /** codeact.jobs.maxPerSession (0: off). */
  maxJobs?: number;
  /** codeact.toolDiscovery.inlineLimit. */
  inlineLimit?: number;
  /** codeact.approval.reviewCode: the person sees each execution's code before it runs. */
  reviewCode?: boolean;
  /** Set when the folder is not trusted: every code tool refuses with it and nothing runs. */
  refusal?: string;
  /** How long an approval waits for the person (default ./asking DEFAULT_ANSWER_MS). */
  answerMs?: number;
  /**
   * `codeact mcp serve --keep-session NAME`: every MCP session runs in this one Python session, which outlives them (and
   * the server, in the folder's session host): the next server with the same name finds its variables.
   */
  session?: string;
  /**
   * Where each MCP session is kept as a conversation (`codeact chat`'s store; its folder): every execution a code
   * turn of it, under the Python session's id, so the panel (CodeAct: Continue a Conversation from the CLI or ACP…)
   * and `codeact chat --continue ID` can go on with it. None: nothing is kept.
   */
  transcript?: { store: TranscriptStore; workspace: string };
  /**
   * Runs go to another door's Python session instead of one of this server's (VS Code's agent sharing the panel's open
   * conversation, issue 36 point 3): that door runs them as its own turns, with its approvals and its transcript, and the
   * person sees them there. `restart_session` is not offered (the person restarts it where it lives).
   */
  shared?: SharedSession;
}

/** Another door's Python session that this server's runs go to (McpServerOptions.shared). */
export interface SharedSession {
  /** What it is, for the tools' descriptions and refusals: "the CodeAct panel's open conversation". */
  readonly what: string;
  /** Runs one execution there; rejects with why it cannot (a turn already runs there, the folder is not trusted). */
  run(code: string, o: { tools: boolean; background?: boolean; signal: AbortSignal; onEvent?: (e: CodeActEvent) => void }): Promise<CodeInterpreterCallItem>;
  /** The runtime and Python session its runs go to now; undefined while there is none. */
  where(): { runtime: Runtime; sessionId: string } | undefined;
}

/** The MCP server of one MCP session (connect it to a transport). `sessionId`: our id of its Python session. */
export function codeActMcpServer(o: McpServerOptions, sessionId = o.session ?? newId('mcp')): Server {
  const server = new Server({ name: 'codeact', version: CODEACT_VERSION }, { capabilities: { tools: {} } });
  const calls = new Map<string, Asked>();
  const asking = new McpAsking(server, (itemId) => calls.get(itemId), o.answerMs);
  const gateway = o.gateway(asking);
  const { runtime, shared } = o;
  const persistent = runtime.sessions.persist;
  // Executions are numbered per Python session (the guest keeps each run's output under its number): a shared one
  // (--keep-session) numbers them across the server's MCP sessions.
  const executions = o.session ? sharedCount(o.session) : { n: 0 };

  const ctx = () => ({
    runtime: runtime.kind,
    persistent,
    keepsOutputs: runtime.sessions.keepsOutputs,
    outputChars: o.outputChars,
    inlineLimit: o.inlineLimit,
    seesImages: o.images.maxImages > 0,
    installs: gateway.installs,
    unusable: gateway.unusable(),
    maxJobs: o.maxJobs,
  });

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const specs = [executeToolCodeSpec(gateway.tools(), ctx()), executeCodeSpec(ctx())];
    const sharing = shared ? `\n\nThe code runs in the Python session of ${shared.what}, which the person sees and uses too.` : '';
    const tools: Tool[] = specs.map((s) => ({ name: s.name, description: s.description + sharing, inputSchema: s.parameters as Tool['inputSchema'] }));
    tools.push({
      name: LIST_VARIABLES,
      description: shared
        ? `The variables of the Python session of ${shared.what} (names, types, short values, shapes), read without running any code.`
        : "The variables of this MCP session's Python session (names, types, short values, shapes), read without running any code.",
      inputSchema: { type: 'object', properties: {} },
      annotations: { readOnlyHint: true },
    });
    if (!shared)
      tools.push({
        name: RESTART_SESSION,
        description: o.session
          ? `Restarts the Python session that every MCP session of this server shares (${o.session}): every variable, import and background job is gone, a run another MCP session has going too; the next code starts fresh.`
          : "Restarts this MCP session's Python session: every variable, import and background job is gone; the next code starts fresh.",
        inputSchema: { type: 'object', properties: {} },
        annotations: { destructiveHint: true },
      });
    return { tools };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name } = request.params;
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    if (name === LIST_VARIABLES) return listVariables();
    if (name === RESTART_SESSION) {
      if (o.refusal) return failed(o.refusal);
      if (shared) return failed(`This server runs code in ${shared.what}: the person restarts its Python session there.`);
      const was = await runtime.sessions.restart(sessionId);
      return text(
        was
          ? 'The Python session was restarted: its variables, imports and background jobs are gone.'
          : 'There was no live Python session; the next code starts fresh.',
      );
    }
    if (name !== EXECUTE_TOOL_CODE && name !== EXECUTE_CODE)
      return failed(
        `Unknown tool "${String(name).slice(0, 100)}". This server has ${EXECUTE_TOOL_CODE}, ${EXECUTE_CODE}, ${LIST_VARIABLES} and ${RESTART_SESSION}.`,
      );
    if (o.refusal) return failed(o.refusal);
    const code = args.code;
    if (typeof code !== 'string' || !code.trim()) return failed(`${name} needs a non-empty "code" string argument.`);
    if (code.length > MAX_CODE_CHARS)
      return failed(`The code is too long (${code.length.toLocaleString('en-US')} characters; at most ${MAX_CODE_CHARS.toLocaleString('en-US')}).`);
    const background = args.background === true;
    if (background) {
      const jobs = jobsAvailable({ runtime: runtime.kind, persistent, maxJobs: o.maxJobs });
      if (jobs !== true) return failed(jobs.unavailable);
    }
    const withTools = name === EXECUTE_TOOL_CODE;
    const itemId = newId('exec');
    // A shared session's runs are numbered by the door that runs them (for its own model's output_of): none is promised here.
    const execution = shared ? undefined : ++executions.n;
    calls.set(itemId, { relatedRequestId: extra.requestId, signal: extra.signal });
    const progress = progressOf(extra);
    try {
      let item: CodeInterpreterCallItem;
      if (shared) {
        try {
          item = await shared.run(code, { tools: withTools, signal: extra.signal, onEvent: progress, ...(background ? { background } : {}) });
        } catch (e) {
          return failed(`Nothing ran: ${e instanceof Error ? e.message : String(e)}`);
        }
      } else {
        // One turn lifecycle for every door: the execution is a code turn of this MCP session's conversation (if kept).
        ({ item } = await runCodeTurn({
          source: 'mcp',
          runtime,
          conversation: conversation(),
          code,
          label: `${clientName()}: ${name}`,
          gateway,
          timeoutMs: o.timeoutMs,
          sessionId,
          signal: extra.signal,
          onEvent: progress as ((e: TranscriptEvent) => void) | undefined,
          ...(o.reviewCode ? { beforeRun: asking.review } : {}),
          request: { itemId, tools: withTools, execution, ...(background ? { background } : {}) },
        }));
      }
      const seen = withinPixelCap(item, o.images.maxPixels);
      const told = shared ? undefined : (item.session?.execution ?? execution); // its session's number for it
      const summary = executionSummary(seen, {
        execution: told,
        outputChars: o.outputChars,
        kept: !shared && runtime.sessions.keepsOutputs && !item.session?.state_lost,
        installs: withTools && gateway.installs,
      });
      // A shared session's job notes are its own door's (told to its model at its next step).
      const notes = shared ? [] : ((await runtime.sessions.takeJobNotes?.(sessionId)) ?? []);
      const content: CallToolResult['content'] = [{ type: 'text', text: notes.length ? `${jobNotesText(notes)}\n\n${summary}` : summary }];
      for (const img of executionImages(seen, told ? `execution ${told}` : 'this execution', o.images))
        content.push({ type: 'image', data: img.data, mimeType: img.mime_type });
      content.push(...fileLinks(item));
      return { content, ...(item.status !== 'completed' ? { isError: true } : {}) };
    } finally {
      calls.delete(itemId);
    }
  });

  /** The client as it named itself (outside text: kept as data, shown through each medium's sanitiser). */
  function clientName(): string {
    const n = server.getClientVersion()?.name;
    return typeof n === 'string' && n.trim() ? n.trim().slice(0, 80) : 'MCP client';
  }

  /**
   * This MCP session's conversation, made at its first execution; a shared session's (--keep-session) is one per
   * process, found again by its name, and goes on in the file an earlier server made.
   */
  let own: Conversation | undefined;
  function conversation(): Conversation | undefined {
    const t = o.transcript;
    if (!t) return undefined;
    try {
      const meta = () => ({ title: titleFrom(`${clientName()} (MCP)`), workspace: t.workspace });
      const convo = o.session ? sharedConversation(t.store, sessionId, meta) : (own ??= t.store.create({ ...meta(), id: sessionId }));
      // Open in another process now (`codeact chat --continue` of a shared session): this run is not kept, it still runs.
      return heldBy(convo.file) ? undefined : convo;
    } catch {
      // Not kept (a full disk, a damaged file, a name that is no conversation id): the execution runs all the same.
      return undefined;
    }
  }

  async function listVariables(): Promise<CallToolResult> {
    const at = shared ? shared.where() : { runtime, sessionId };
    const none = shared
      ? `No Python session yet: nothing has run in ${shared.what} (or it was restarted).`
      : 'No Python session yet: nothing has run in this MCP session (or it was restarted).';
    if (!at) return text(none);
    if (!at.runtime.sessions.readsVariables) return text(`This runtime (${at.runtime.kind}) does not list variables; run code that prints them instead.`);
    if (!at.runtime.sessions.has(at.sessionId)) return text(none);
    const summary = await at.runtime.sessions.variables(at.sessionId);
    if (!summary) return text('The variables cannot be read while code runs; ask again once it ends.');
    return text(JSON.stringify(summary, null, 1));
  }

  /** Output as progress notifications, for a call that asked for them (bounded in count and size). */
  function progressOf(extra: { _meta?: { progressToken?: string | number }; sendNotification: (n: never) => Promise<void> }) {
    const token = extra._meta?.progressToken;
    if (token === undefined) return undefined;
    let sent = 0;
    return (e: CodeActEvent) => {
      if (sent >= MAX_PROGRESS) return;
      let message: string | undefined;
      if (e.type === 'codeact.output.delta') message = e.delta.trim() ? e.delta : undefined;
      else if (e.type === 'codeact.tool_call.started') message = `calling ${e.name}`;
      if (!message) return;
      sent++;
      void extra
        .sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress: sent, message: message.slice(0, PROGRESS_CHARS) },
        } as never)
        .catch(() => {});
    };
  }

  return server;
}

/** The conversations of the shared (named) Python sessions of this process, by id: one object per file, which their MCP sessions write through. */
const sharedConversations = new Map<string, Conversation>();
function sharedConversation(store: TranscriptStore, id: string, meta: () => { title: string; workspace: string }): Conversation {
  let c = sharedConversations.get(id);
  if (!c) {
    c = store.exists(id) ? store.open(id) : store.create({ ...meta(), id });
    sharedConversations.set(id, c);
  }
  return c;
}

/** The execution counters of the shared (named) Python sessions of this process, by name. */
const sharedCounts = new Map<string, { n: number }>();
function sharedCount(name: string): { n: number } {
  let c = sharedCounts.get(name);
  if (!c) sharedCounts.set(name, (c = { n: 0 }));
  return c;
}

/**
 * The files the execution's code created or changed in the workspace, as MCP resource links the client can open
 * (`file:` URIs under the workspace root; deleted files are only in the text's list of changes). At most
 * MAX_FILE_LINKS: the text's list says how many there were.
 */
function fileLinks(item: CodeInterpreterCallItem): ResourceLink[] {
  const c = item.changes;
  if (!c) return [];
  const root = path.resolve(c.root);
  const links: ResourceLink[] = [];
  for (const change of c.changes) {
    if (links.length >= MAX_FILE_LINKS) break;
    if (change.kind === 'deleted') continue;
    const file = path.resolve(root, ...change.path.split('/'));
    // Only a path inside the workspace (a changeset from a damaged or strange store could say anything).
    const rel = path.relative(root, file);
    if (!rel || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) continue;
    const mime = mimeOfExtension(path.extname(file).slice(1));
    links.push({
      type: 'resource_link',
      uri: pathToFileURL(file).href,
      name: change.path,
      description: `${change.kind} by this execution`,
      ...(mime ? { mimeType: mime } : {}),
    });
  }
  return links;
}

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });
const failed = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }], isError: true });
