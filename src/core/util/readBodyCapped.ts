/**
 * A response body read whole, up to a cap: the bytes, or undefined as soon as they pass `cap` (the rest is
 * never read; the stream is cancelled), so that a server cannot make us hold more than we asked for.
 */
export async function readBodyCapped(body: ReadableStream<Uint8Array>, cap: number): Promise<Buffer | undefined> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > cap) {
      await reader.cancel().catch(() => {});
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
