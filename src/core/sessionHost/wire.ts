/**
 * The session host's protocol: one JSON object per line, each line at most {@link MAX_LINE_BYTES}, over a
 * Unix socket. Every message a host reads is checked here field by field (a socket is untrusted input); a
 * line that is too long, not JSON, or not a known message closes that connection, never the host.
 *
 * Client -> host: `hello` (the token; first, once), `execute` (a run), `tool_result` (the answer to a
 * `tool_call`), `tool_pause` (the person is deciding an approval: the run's clock stops), `stop` (a run),
 * `watch` (replay a session's current or last run, then its live rest), `ask` (has, variables, close, jobNotes,
 * restart, list, jobEvents, stopJob, detach, revert, rewind, and review mode's staged, keep, discard), `end` (the host ends).
 * Host -> client: `welcome` (the host, its live sessions), `event` (a run's event), `tool_call`,
 * `tool_cancel` (the run no longer waits for that call), `done` (a run's item), `reply` (to an `ask`),
 * `sessions` (the live sessions changed), `session` (a session started or ended), `job` (a background job started,
 * printed or ended), `refused` (then it closes).
 */
import type { Socket } from 'node:net';
import type { CodeActEvent, CodeInterpreterCallItem, JobChanged, JobOutput, SessionChanged } from '../../common/events';
import type { ExecuteRequest } from '../runtime/types';

/** Largest line either side sends: a run's event or a tool's result (the guest's own frame bound is 16 MiB). */
const MAX_LINE_BYTES = 64 * 1024 * 1024;

/** Questions about sessions a client may ask (`ask`). */
const ASKS = [
  'has',
  'variables',
  'close',
  'restart',
  'list',
  'jobNotes',
  'jobEvents',
  'stopJob',
  'detach',
  'revert',
  'rewind',
  'staged',
  'keep',
  'discard',
] as const;
/** The asks that may name workspace paths (a revert's; review mode's keep and discard). */
const WITH_PATHS: readonly string[] = ['revert', 'keep', 'discard'];
/** Paths one `revert` may name, at most. */
const MAX_REVERT_PATHS = 100_000;
export type Ask = (typeof ASKS)[number];

/** One live session as `list` reports it. */
export interface HostSessionInfo {
  id: string;
  workspace: string;
  /** ms since the epoch. */
  startedAt: number;
  lastRunAt: number;
  /** The item id of the run going on, if one is. */
  running?: string;
  /** Bytes resident in the session's process tree (VmRSS of the guest and its descendants), when it was found. */
  memoryBytes?: number;
  /** Its background jobs running now. */
  jobs?: number;
}

export type ClientMessage =
  | { type: 'hello'; token: string }
  | { type: 'execute'; rid: string; request: ExecuteRequest }
  | { type: 'tool_result'; rid: string; callId: string; ok: boolean; value?: unknown; message?: string }
  | { type: 'tool_pause'; rid: string; callId: string; paused: boolean }
  | { type: 'stop'; rid: string }
  | { type: 'watch'; rid: string; sessionId: string; tools: boolean }
  | { type: 'ask'; rid: string; ask: Ask; sessionId: string; job?: number; itemId?: string; paths?: string[] }
  | { type: 'end' };

export type HostMessage =
  | {
      type: 'welcome';
      pid: number;
      workspace: string;
      live: string[];
      persist: boolean;
      keepsOutputs: boolean;
      readsVariables: boolean;
      /** Review mode is on in the host (its runtime stages the code's writes: `staged` asks work). */
      staged?: boolean;
    }
  | { type: 'event'; rid: string; event: CodeActEvent }
  /** `job`: the call of the session's background job n (taken by a run of the session that takes tool calls). */
  | { type: 'tool_call'; rid: string; callId: string; itemId: string; name: string; arguments: unknown; job?: number }
  | { type: 'tool_cancel'; rid: string; callId: string }
  | { type: 'done'; rid: string; item: CodeInterpreterCallItem | null; error?: string; dropped?: number }
  | { type: 'reply'; rid: string; value?: unknown; error?: string }
  | { type: 'sessions'; live: string[] }
  | { type: 'session'; event: SessionChanged }
  | { type: 'job'; event: JobChanged | JobOutput }
  | { type: 'refused'; message: string };

/**
 * What a socket has yet to send. Lines go out together, in order, in one write: messages at the end of this tick
 * of the event loop, a run's events at the latest {@link EVENT_DELAY_MS} later (sooner with the next message,
 * or past {@link MAX_HELD_BYTES}). A short run's events and its `done` then cost the other side one wake-up,
 * not one per line (syscalls that wake another process are most of what the host adds to a run).
 */
interface Held {
  lines: string[];
  bytes: number;
  timer?: NodeJS.Timeout;
  tick: boolean;
}
const held = new WeakMap<Socket, Held>();
/** Longest a run's event waits to go out with what follows it (well under a frame of the panel). */
const EVENT_DELAY_MS = 4;
/** Held bytes past which they go out at the end of this tick. */
const MAX_HELD_BYTES = 1024 * 1024;

function hold(socket: Socket, line: string, soon: boolean): void {
  if (socket.destroyed || !socket.writable) return;
  let h = held.get(socket);
  if (!h) held.set(socket, (h = { lines: [], bytes: 0, tick: false }));
  h.lines.push(line);
  h.bytes += line.length;
  if (soon || h.bytes > MAX_HELD_BYTES) {
    if (!h.tick) {
      h.tick = true;
      process.nextTick(flush, socket);
    }
  } else if (!h.timer && !h.tick) h.timer = setTimeout(flush, EVENT_DELAY_MS, socket);
}

/** Writes what `socket` holds now (dropped when the socket is gone). */
function flush(socket: Socket): void {
  const h = held.get(socket);
  if (!h) return;
  held.delete(socket);
  clearTimeout(h.timer);
  if (socket.destroyed || !socket.writable) return;
  socket.write(h.lines.length === 1 ? h.lines[0] : h.lines.join(''));
}

/** Sends one message at the end of this tick (dropped when the socket is gone: a client that went away misses it, the journal keeps it). */
export function send(socket: Socket, message: ClientMessage | HostMessage): void {
  hold(socket, JSON.stringify(message) + '\n', true);
}

/** Writes one line of a run's events: with what follows within {@link EVENT_DELAY_MS}, in order. */
export function writeEvent(socket: Socket, line: string): void {
  hold(socket, line, false);
}

/** Sends what the socket holds, then closes it once written. */
export function endSocket(socket: Socket): void {
  flush(socket);
  socket.end();
  socket.destroySoon();
}

/**
 * Reads lines of JSON from a socket, each bounded: `onMessage` gets each parsed value, `onBad` the reason
 * when a line is too long or not JSON (the caller closes the connection).
 */
export function readLines(socket: Socket, onMessage: (value: unknown) => void, onBad: (why: string) => void, max = MAX_LINE_BYTES): void {
  let parts: Buffer[] = [];
  let size = 0;
  let bad = false;
  socket.on('data', (chunk: Buffer) => {
    if (bad) return;
    let start = 0;
    for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, nl);
      start = nl + 1;
      if (size + piece.length > max) return fail(`a message longer than ${max} bytes`);
      const line = size ? Buffer.concat([...parts, piece]).toString('utf8') : piece.toString('utf8');
      parts = [];
      size = 0;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        return fail('a message that is not JSON');
      }
      onMessage(value);
      if (bad || socket.destroyed) return;
    }
    const rest = chunk.subarray(start);
    if (size + rest.length > max) return fail(`a message longer than ${max} bytes`);
    if (rest.length) {
      parts.push(rest);
      size += rest.length;
    }
  });
  function fail(why: string) {
    bad = true;
    parts = [];
    onBad(why);
  }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown, max: number): v is string => typeof v === 'string' && v.length <= max;
const optStr = (v: unknown, max: number) => v === undefined || str(v, max);
const optBool = (v: unknown) => v === undefined || typeof v === 'boolean';
const optNum = (v: unknown) => v === undefined || (typeof v === 'number' && Number.isFinite(v) && v >= 0);
const ID = 256;

function checkRequest(r: unknown): ExecuteRequest | string {
  if (!isObj(r)) return 'execute without a request';
  if (!str(r.code, MAX_LINE_BYTES)) return 'execute without its code';
  if (!optStr(r.itemId, ID) || !optStr(r.sessionId, ID)) return 'an itemId or sessionId that is not a short string';
  if (!optNum(r.timeoutMs) || !optNum(r.execution)) return 'a timeoutMs or execution that is not a number';
  if (!optBool(r.tools) || !optBool(r.announced) || !optBool(r.background)) return 'tools, announced or background that is not a boolean';
  const { code, itemId, sessionId, timeoutMs, execution, tools, announced, background } = r;
  return { code, itemId, sessionId, timeoutMs, execution, tools, announced, background } as ExecuteRequest;
}

/** A client's message, checked; a string says what is wrong with it. */
export function parseClientMessage(v: unknown): ClientMessage | string {
  if (!isObj(v) || typeof v.type !== 'string') return 'a message without a type';
  if (v.type === 'hello') return str(v.token, 1024) ? { type: 'hello', token: v.token } : 'hello without a token';
  if (v.type === 'end') return { type: 'end' };
  if (!str(v.rid, 64)) return `${v.type.slice(0, 40)} without its rid`;
  const rid = v.rid;
  switch (v.type) {
    case 'execute': {
      const request = checkRequest(v.request);
      return typeof request === 'string' ? request : { type: 'execute', rid, request };
    }
    case 'tool_result':
      if (!str(v.callId, ID) || typeof v.ok !== 'boolean' || !optStr(v.message, MAX_LINE_BYTES)) return 'a tool_result without its callId, ok or message';
      return { type: 'tool_result', rid, callId: v.callId, ok: v.ok, value: v.value, message: v.message };
    case 'tool_pause':
      if (!str(v.callId, ID) || typeof v.paused !== 'boolean') return 'a tool_pause without its callId or paused';
      return { type: 'tool_pause', rid, callId: v.callId, paused: v.paused };
    case 'stop':
      return { type: 'stop', rid };
    case 'watch':
      if (!str(v.sessionId, ID) || typeof v.tools !== 'boolean') return 'a watch without its sessionId or tools';
      return { type: 'watch', rid, sessionId: v.sessionId, tools: v.tools };
    case 'ask':
      if (!(ASKS as readonly unknown[]).includes(v.ask) || !str(v.sessionId, ID)) return 'an ask that is not one of ' + ASKS.join(', ');
      if (v.ask === 'stopJob' && !(Number.isSafeInteger(v.job) && (v.job as number) > 0)) return 'a stopJob without its job number';
      if ((v.ask === 'detach' || v.ask === 'revert' || v.ask === 'rewind') && !str(v.itemId, ID)) return `a ${v.ask} without its itemId`;
      if (
        WITH_PATHS.includes(v.ask as string) &&
        v.paths !== undefined &&
        !(Array.isArray(v.paths) && v.paths.length <= MAX_REVERT_PATHS && v.paths.every((p) => str(p, 4096)))
      )
        return `a ${v.ask} whose paths are not a list of paths`;
      return {
        type: 'ask',
        rid,
        ask: v.ask as Ask,
        sessionId: v.sessionId,
        ...(v.ask === 'stopJob' ? { job: v.job as number } : {}),
        ...(v.ask === 'detach' || v.ask === 'revert' || v.ask === 'rewind' ? { itemId: v.itemId as string } : {}),
        ...(WITH_PATHS.includes(v.ask as string) && v.paths !== undefined ? { paths: v.paths as string[] } : {}),
      };
    default:
      return `an unknown message type "${v.type.slice(0, 40)}"`;
  }
}

/** A host's message, checked for what the client reads (the host is ours, behind the token, but a line is still data). */
export function parseHostMessage(v: unknown): HostMessage | string {
  if (!isObj(v) || typeof v.type !== 'string') return 'a message without a type';
  const known = ['welcome', 'event', 'tool_call', 'tool_cancel', 'done', 'reply', 'sessions', 'session', 'job', 'refused'];
  if (!known.includes(v.type)) return `an unknown message type "${v.type.slice(0, 40)}"`;
  if (!['welcome', 'sessions', 'session', 'job', 'refused'].includes(v.type) && !str(v.rid, 64)) return `${v.type} without its rid`;
  if ((v.type === 'tool_call' || v.type === 'tool_cancel') && !str(v.callId, ID)) return `${v.type} without its callId`;
  if ((v.type === 'welcome' || v.type === 'sessions') && !(Array.isArray(v.live) && v.live.every((s) => str(s, ID))))
    return `${v.type} without its live sessions`;
  return v as HostMessage;
}
