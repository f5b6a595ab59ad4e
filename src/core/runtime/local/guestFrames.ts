/**
 * The private channel between the host and a local guest: JSON frames, one a line, each at most
 * `maxFrameBytes` (the guest's frames are untrusted input: a frame over the cap ends the guest).
 */
import type { Writable } from 'node:stream';
import type { VariablesSummary } from '../../../common/events';
import { formatBytes } from '../../../common/format';

/** Writes one frame, unless the channel is gone. */
export function sendFrame(proto: Writable, frame: unknown): void {
  sendLine(proto, JSON.stringify(frame));
}

/** A frame already serialised (one line of JSON, without its newline). */
export function sendLine(proto: Writable, line: string): void {
  if (proto.destroyed || !proto.writable) return;
  proto.write(line + '\n');
}

export interface FrameHandlers {
  frame(line: string): void;
  /** The guest broke the protocol (here: a frame over the cap). */
  violation(what: string): void;
  /** True once no more frames should be read (the guest is dead). */
  stopped(): boolean;
}

/** Splits the protocol channel into lines, holding a partial frame until its newline arrives. */
export class FrameReader {
  private parts: Buffer[] = [];
  private length = 0;

  constructor(
    private readonly max: number,
    private readonly h: FrameHandlers,
  ) {}

  push(chunk: Buffer): void {
    // Once the guest is stopped (a frame broke the protocol, mid-chunk) nothing more is read.
    if (this.h.stopped()) return;
    let start = 0;
    const max = this.max;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) break;
      const piece = chunk.subarray(start, nl);
      if (this.length + piece.length > max) return this.h.violation(tooLarge(max));
      const line = this.parts.length ? Buffer.concat([...this.parts, piece]).toString('utf8') : piece.toString('utf8');
      this.parts = [];
      this.length = 0;
      this.h.frame(line);
      if (this.h.stopped()) return;
      start = nl + 1;
    }
    const rest = chunk.subarray(start);
    if (rest.length) {
      this.length += rest.length;
      if (this.length > max) return this.h.violation(tooLarge(max));
      this.parts.push(Buffer.from(rest));
    }
  }
}

function tooLarge(max: number): string {
  return `a protocol frame over ${formatBytes(max)} (a call_tool argument that large is refused)`;
}

/** The guest's variables frame, checked field by field (it is untrusted input). */
export function normaliseVariables(raw: any): VariablesSummary {
  const list = Array.isArray(raw?.variables) ? raw.variables.slice(0, 500) : [];
  const str = (v: unknown, n: number) => (typeof v === 'string' ? v.slice(0, n) : undefined);
  return {
    total: Number.isSafeInteger(raw?.total) ? raw.total : list.length,
    variables: list
      .filter((v: any) => v && typeof v.name === 'string')
      .map((v: any) => ({
        name: v.name.slice(0, 200),
        type: str(v.type, 200) ?? '',
        ...(str(v.summary, 300) !== undefined ? { summary: str(v.summary, 300) } : {}),
        ...(Array.isArray(v.shape) && v.shape.every((n: unknown) => Number.isSafeInteger(n)) ? { shape: v.shape.slice(0, 8) } : {}),
        ...(Number.isSafeInteger(v.len) ? { len: v.len } : {}),
      })),
  };
}
