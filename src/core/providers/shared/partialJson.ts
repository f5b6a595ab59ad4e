/**
 * Incremental extraction of one string field from a JSON object that arrives in fragments
 * (Anthropic `input_json_delta.partial_json`). Each `push` returns the newly decoded characters of the
 * field's value, unescaped, so that code can be shown as plain text while it streams: `\n`, `\"`,
 * `\\`, `\uXXXX` (including surrogate pairs) and escapes split across fragments are all handled.
 *
 * Only top-level keys are matched, and only the first occurrence of any of the wanted keys.
 */
export class JsonStringFieldExtractor {
  private depth = 0;
  private inString = false;
  private stringIsKey = false;
  private capturing = false;
  private expectKey = false;
  private keyBuf = '';
  private lastKey = '';
  private escape: string | null = null;
  private pendingHigh = '';
  private done = false;
  private captured = '';
  private matchedField: string | undefined;

  constructor(private readonly fields: readonly string[]) {}

  /** The field whose value is being (or was) extracted. */
  get field(): string | undefined {
    return this.matchedField;
  }

  /** Everything extracted so far. */
  get value(): string {
    return this.captured;
  }

  /** True once the field's closing quote was seen. */
  get complete(): boolean {
    return this.done;
  }

  push(fragment: string): string {
    let out = '';
    for (let i = 0; i < fragment.length; i++) {
      const c = fragment[i];
      if (this.inString) {
        if (this.escape !== null) {
          this.escape += c;
          const decoded = this.tryDecodeEscape();
          if (decoded !== undefined) {
            this.escape = null;
            out += this.appendChar(decoded);
          }
          continue;
        }
        if (c === '\\') {
          this.escape = '';
          continue;
        }
        if (c === '"') {
          this.inString = false;
          if (this.stringIsKey) {
            this.lastKey = this.keyBuf;
          } else if (this.capturing) {
            out += this.flushHigh();
            this.capturing = false;
            this.done = true;
          }
          continue;
        }
        out += this.appendChar(c);
        continue;
      }
      switch (c) {
        case '"':
          this.inString = true;
          this.stringIsKey = this.depth === 1 && this.expectKey;
          this.keyBuf = '';
          this.capturing = !this.stringIsKey && this.depth === 1 && !this.done && this.matchedField === undefined && this.fields.includes(this.lastKey);
          if (this.capturing) this.matchedField = this.lastKey;
          break;
        case '{':
          this.depth++;
          if (this.depth === 1) this.expectKey = true;
          break;
        case '[':
          this.depth++;
          break;
        case '}':
        case ']':
          this.depth--;
          break;
        case ':':
          if (this.depth === 1) this.expectKey = false;
          break;
        case ',':
          if (this.depth === 1) {
            this.expectKey = true;
            this.lastKey = '';
          }
          break;
        default:
          break;
      }
    }
    this.captured += out;
    return out;
  }

  /** Decodes `this.escape` (the characters after a backslash) when complete. */
  private tryDecodeEscape(): string | undefined {
    const e = this.escape as string;
    if (e[0] === 'u') {
      if (e.length < 5) return undefined;
      return String.fromCharCode(parseInt(e.slice(1, 5), 16));
    }
    switch (e) {
      case 'n':
        return '\n';
      case 't':
        return '\t';
      case 'r':
        return '\r';
      case 'b':
        return '\b';
      case 'f':
        return '\f';
      default:
        return e; // \" \\ \/ and anything else: the character itself
    }
  }

  /** Adds one UTF-16 unit to the current string; returns what becomes visible in the captured value. */
  private appendChar(ch: string): string {
    if (this.stringIsKey) {
      this.keyBuf += ch;
      return '';
    }
    if (!this.capturing) return '';
    const code = ch.charCodeAt(0);
    if (ch.length === 1 && code >= 0xd800 && code <= 0xdbff) {
      const prev = this.flushHigh();
      this.pendingHigh = ch;
      return prev;
    }
    if (this.pendingHigh) {
      const high = this.pendingHigh;
      this.pendingHigh = '';
      return high + ch;
    }
    return ch;
  }

  private flushHigh(): string {
    const h = this.pendingHigh;
    this.pendingHigh = '';
    return h;
  }
}
