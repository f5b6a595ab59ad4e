/** How the pool tells a transport failure from a server's error, and says why a connection failed. */
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { raceAbort } from '../../../util/abort';
import { tail } from '../processes';

/** A failure of the connection itself (HTTP, a socket, a server that went away), not an answer of the server. */
export function isTransportFailure(e: unknown): boolean {
  const err = e as Error | undefined;
  return (
    e instanceof StreamableHTTPError ||
    (err instanceof TypeError && /fetch/i.test(err.message)) ||
    (err as NodeJS.ErrnoException | undefined)?.code !== undefined ||
    err?.message === 'the server is not running' ||
    err?.message === 'Not connected'
  );
}

/** Why a fetch failed, as Node names it (ECONNREFUSED, ENOTFOUND…) where it can. */
export function describeFetchError(e: Error | undefined): string {
  const cause = (e as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  if (cause?.code) return `${cause.code}${cause.message ? ` (${cause.message})` : ''}`;
  return e?.message ?? 'unknown error';
}

/** `p`, or a timeout error once `signal` aborts. */
export function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  return raceAbort(p, signal, () => new McpError(ErrorCode.RequestTimeout, 'aborted'));
}

/** The tail of what a stdio server wrote to stderr, as a part of a message ('' when nothing). */
export function stderrPart(stdio: { stderr: string } | undefined): string {
  const text = stdio?.stderr ?? '';
  return text.trim() ? `\nstderr:\n${tail(text)}` : '';
}
