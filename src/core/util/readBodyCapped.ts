/**
 * The one reader of remote response bodies (Jupyter REST and contents, MCP over HTTP, OAuth metadata and
 * tokens, `http` tools, a compatible server's probe). Bytes are counted as they arrive; past the cap the
 * body is cancelled (the connection is closed, the rest is never read), whatever size the server declared:
 * a `Content-Length` is never trusted, and nothing is parsed before the whole body is known to be within
 * the cap. Never call `res.json()`, `res.text()` or `res.arrayBuffer()` on a body from elsewhere.
 */
/** A body that passed its cap; the message says whose body, the cap, and what to do. */
export class BodyTooLarge extends Error {
  constructor(
    message: string,
    readonly cap: number,
  ) {
    super(message);
    this.name = 'BodyTooLarge';
  }
}

interface CapOptions {
  /** Most bytes: of the whole body, or of each event when `perEvent`. */
  cap: number;
  /** The error for a body (or event) past the cap. */
  tooLarge: () => Error;
  /**
   * Count per server-sent event (the bytes between blank lines) instead of the whole body: a stream that
   * stays open carries any number of events, each one bounded.
   */
  perEvent?: boolean;
  /** Most `{` and `[` bytes (objects and arrays, what JSON.parse spends its time on), counted like the bytes. */
  maxNests?: number;
  /** The error for a body (or event) past `maxNests`. */
  tooNested?: () => Error;
}

/**
 * `body` passed through while it stays within the cap. The chunk that passes it is not delivered: the
 * stream errors with `tooLarge()` and the source is cancelled, so at most cap + one chunk is ever read.
 */
export function capBody(body: ReadableStream<Uint8Array>, options: CapOptions): ReadableStream<Uint8Array> {
  const { cap, perEvent } = options;
  const maxNests = options.maxNests ?? Infinity;
  let size = 0;
  let nests = 0;
  /** Per event: the last byte was a line feed (carriage returns in between ignored). */
  let lineEnd = false;
  /** The problem with `chunk`, if it takes its unit past a cap. */
  const check = (chunk: Uint8Array): Error | undefined => {
    if (!perEvent && maxNests === Infinity) return (size += chunk.byteLength) > cap ? options.tooLarge() : undefined;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i];
      if (perEvent && c === 0x0a) {
        if (lineEnd) size = nests = 0;
        lineEnd = true;
        continue;
      }
      if (c === 0x0d && perEvent) continue;
      lineEnd = false;
      if (++size > cap) return options.tooLarge();
      if ((c === 0x7b || c === 0x5b) && ++nests > maxNests) return (options.tooNested ?? options.tooLarge)();
    }
    return undefined;
  };
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const problem = check(chunk);
        if (problem) controller.error(problem);
        else controller.enqueue(chunk);
      },
    }),
  );
}

/** The whole body, or undefined as soon as it passes `cap` (the rest is never read; the body is cancelled). */
export async function readBodyCapped(body: ReadableStream<Uint8Array>, cap: number): Promise<Buffer | undefined> {
  const tooLarge = new BodyTooLarge('', cap);
  try {
    return await readAll(capBody(body, { cap, tooLarge: () => tooLarge }));
  } catch (e) {
    if (e === tooLarge) return undefined;
    throw e;
  }
}

/** The whole body, or the error `tooLarge()` as soon as it passes `cap`. */
export async function readBodyOrThrow(body: ReadableStream<Uint8Array> | null, cap: number, tooLarge: () => Error): Promise<Buffer> {
  return body ? readAll(capBody(body, { cap, tooLarge })) : Buffer.alloc(0);
}

/** The first `max` bytes of a body (an error page's reason is near its top); the rest is never read. */
export async function readBodyPrefix(body: ReadableStream<Uint8Array> | null, max: number): Promise<Buffer> {
  if (!body) return Buffer.alloc(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < max) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return Buffer.concat(chunks).subarray(0, max);
}

async function readAll(body: ReadableStream<Uint8Array>): Promise<Buffer> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
