/**
 * Expired hosted containers. OpenAI (Responses `code_interpreter`) and Anthropic (code execution) keep a
 * conversation's files and variables in a container that the next turn reuses by id. A container expires
 * (OpenAI: after about 20 minutes idle; Anthropic: its `expires_at`), and a request that still names it is
 * refused: OpenAI answers HTTP 400 "Container is expired." (404 "Container not found." for one it no longer
 * knows); Anthropic refuses it with an `invalid_request_error`/`not_found_error` that names the container,
 * or, inside a response, a code execution result with `error_code: "container_expired"`. Without help,
 * every later turn names the same container again and fails the same way.
 *
 * `recoverExpiredContainers` wraps a provider: a request refused because its container expired is sent
 * once more without the container id (a new container), with the history's replay data that names the
 * container dropped (those earlier items go as neutral text instead), and a `codeact.retry` event says so.
 * The expired ids are remembered (the conversation's meta keeps them) so that no later request names them.
 */
import type { CodeActEvent } from '../../../common/events';
import { ProviderError } from './errors';
import type { ConversationItem, EmitFn, Provider, TurnRequest, TurnResult } from './types';

export const EXPIRED_CONTAINER_MESSAGE =
  'The code container of this conversation expired; continuing in a new one. Files and variables from earlier runs are gone.';

/** Expired ids a conversation remembers, at most (the newest are kept). */
export const MAX_EXPIRED_CONTAINERS = 20;

/** Providers whose hosted code runs in a reusable container. */
const CONTAINER_PROVIDERS = new Set(['openai', 'anthropic']);

/** The provider's own error text says its container is gone (bounded: the text is the provider's). */
const EXPIRED_TEXT =
  /\bcontainer[_ ]expired\b|\bexpired container\b|\bcontainer\b[^\n]{0,120}?\b(?:is expired|has expired|expired|not found|no longer exists|does not exist|was deleted)\b/i;

function rawErrorOf(err: ProviderError): { code?: unknown; type?: unknown } | undefined {
  const body = (err.cause as { error?: unknown } | undefined)?.error;
  if (!body || typeof body !== 'object') return undefined;
  const inner = (body as { error?: unknown }).error;
  return (inner && typeof inner === 'object' ? inner : body) as { code?: unknown; type?: unknown };
}

/** True when `err` is the provider refusing a request because the container it names has expired. */
export function isExpiredContainerError(err: unknown): boolean {
  if (!(err instanceof ProviderError) || !CONTAINER_PROVIDERS.has(err.provider)) return false;
  if (err.status !== 400 && err.status !== 404) return false;
  const raw = rawErrorOf(err);
  if (raw?.code === 'container_expired' || raw?.type === 'container_expired') return true;
  return EXPIRED_TEXT.test((err.detail ?? err.message).slice(0, 2000));
}

/** True when a finished turn's hosted code failed because the container expired (Anthropic `container_expired`). */
function expiredInResult(result: TurnResult): boolean {
  return result.items.some((i) => i.type === 'code_interpreter_call' && i.error?.type === 'container_expired');
}

/** Nodes looked at per item when searching replay data for a container id (a transcript is read from disk). */
const MAX_NODES = 5000;

/** Whether `value` holds the string `id` anywhere (bounded walk). */
function mentions(value: unknown, ids: ReadonlySet<string>): boolean {
  const stack: unknown[] = [value];
  for (let seen = 0; stack.length > 0 && seen < MAX_NODES; seen++) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (ids.has(v)) return true;
    } else if (v && typeof v === 'object') {
      for (const child of Array.isArray(v) ? v : Object.values(v)) if (child && (typeof child === 'object' || typeof child === 'string')) stack.push(child);
    }
  }
  return false;
}

function scrubItem(item: ConversationItem, ids: ReadonlySet<string>): ConversationItem {
  const { replay: _replay, ...rest } = item;
  if (rest.type !== 'code_interpreter_call') return rest;
  return {
    ...rest,
    container_id: rest.container_id && ids.has(rest.container_id) ? null : rest.container_id,
    outputs: rest.outputs.map((o) => {
      if (o.type !== 'file' || !o.container_id || !ids.has(o.container_id)) return o;
      const { container_id: _gone, ...file } = o;
      return file;
    }),
  };
}

/**
 * The history without the expired containers: every item of a response whose replay data or items name
 * one of `ids` loses its replay data (it goes to the provider as neutral text, never verbatim), and the
 * code items lose the id. Other items are the same objects. The saved conversation is not changed.
 */
function withoutContainers(history: ConversationItem[], ids: ReadonlySet<string>): ConversationItem[] {
  if (ids.size === 0) return history;
  const tainted = new Set<string>();
  for (const item of history) {
    const turn = item.replay?.turn;
    if (turn === undefined || tainted.has(turn)) continue;
    if ((item.type === 'code_interpreter_call' && item.container_id && ids.has(item.container_id)) || mentions(item.replay?.parts, ids)) tainted.add(turn);
  }
  return history.map((item) => {
    if (item.replay && tainted.has(item.replay.turn)) return scrubItem(item, ids);
    if (item.type === 'code_interpreter_call' && item.container_id && ids.has(item.container_id)) return scrubItem(item, ids);
    return item;
  });
}

interface ContainerRecovery {
  /** The provider to give the agent loop. */
  provider: Provider;
  /** Every container found expired so far (the ones it started with included), oldest first. */
  readonly expired: string[];
  /** The container to save after the turn: `null` when the one the loop ended with has expired. */
  containerAfter(containerId: string | null | undefined): string | null | undefined;
}

/**
 * Wraps `inner`: requests never name an expired container (`known` ones or ones found during the turn),
 * their history is scrubbed of them, and a request refused because its container expired is sent once
 * more in a new container, after a `codeact.retry` event with EXPIRED_CONTAINER_MESSAGE.
 */
export function recoverExpiredContainers(inner: Provider, known: readonly string[] = [], onEvent?: (e: CodeActEvent) => void): ContainerRecovery {
  // `known` comes from a file on disk: only short strings, the newest MAX_EXPIRED_CONTAINERS.
  const expired = new Set(
    (Array.isArray(known) ? known : []).filter((id) => typeof id === 'string' && id.length > 0 && id.length <= 200).slice(-MAX_EXPIRED_CONTAINERS),
  );
  const found = (id: string): void => {
    expired.delete(id);
    expired.add(id);
    while (expired.size > MAX_EXPIRED_CONTAINERS) expired.delete(expired.values().next().value as string);
  };
  const prepare = (req: TurnRequest): TurnRequest => {
    if (expired.size === 0) return req;
    const hosted = req.hosted?.containerId && expired.has(req.hosted.containerId) ? { ...req.hosted, containerId: null } : req.hosted;
    return { ...req, hosted, history: withoutContainers(req.history, expired) };
  };
  const provider: Provider = Object.create(inner, {
    streamTurn: {
      value: async (req: TurnRequest, emit: EmitFn): Promise<TurnResult> => {
        const first = prepare(req);
        const used = first.hosted?.enabled ? (first.hosted.containerId ?? null) : null;
        try {
          const result = await inner.streamTurn(first, emit);
          if (used && expiredInResult(result)) {
            // The response ran, but its code could not: the next request starts a new container.
            found(used);
            (onEvent ?? emit)({ type: 'codeact.retry', attempt: 1, delay_ms: 0, message: EXPIRED_CONTAINER_MESSAGE });
            return { ...result, containerId: result.containerId === used ? null : result.containerId };
          }
          return result;
        } catch (err) {
          if (!used || !isExpiredContainerError(err) || (err as ProviderError).partial?.items.length || req.signal?.aborted) throw err;
          found(used);
          (onEvent ?? emit)({ type: 'codeact.retry', attempt: 1, delay_ms: 0, status: (err as ProviderError).status, message: EXPIRED_CONTAINER_MESSAGE });
          // One retry: if the new container fails too, that error is the turn's.
          try {
            return await inner.streamTurn(prepare(req), emit);
          } catch (again) {
            if (!isExpiredContainerError(again)) throw again;
            const e = again as ProviderError;
            const refused = new ProviderError({
              code: e.code,
              provider: e.provider,
              status: e.status,
              detail: e.detail,
              cause: e,
              retryable: false,
              message: `The code container of this conversation expired, and the request in a new container was refused too (HTTP ${e.status}: ${(e.detail ?? '').slice(0, 200)}). Send the message again; if it keeps failing, start a new conversation.`,
            });
            refused.partial = e.partial;
            throw refused;
          }
        }
      },
    },
  });
  return {
    provider,
    get expired() {
      return [...expired];
    },
    containerAfter: (id) => (id && expired.has(id) ? null : id),
  };
}
