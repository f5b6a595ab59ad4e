/**
 * What a Jupyter run shows: stdout and stderr under the output cap, images under the same cap in bytes,
 * JSON and plain-text displays as stdout, and whether anything was dropped (here, or by the server's
 * IOPub rate limits).
 */
import type { CodeActEvent, CodeOutput, StreamName } from '../../../common/events';
import { formatBytes } from '../../../common/format';
import { OutputCapture } from '../execution';

export class RunOutput {
  private readonly output: OutputCapture;
  private readonly images: CodeOutput[] = [];
  private imageBytes = 0;
  private imagesDropped = false;
  private serverDropped = false;

  constructor(
    private readonly itemId: string,
    private readonly maxOutputBytes: number,
    private readonly emit: (event: CodeActEvent) => void,
  ) {
    this.output = new OutputCapture(maxOutputBytes);
  }

  /** A `stream` message of the kernel. */
  onStream(name: unknown, text: string): void {
    // Jupyter Server drops output over its IOPub rate limits and says so in a stream message.
    if (/^IOPub (data|message) rate exceeded\./.test(text)) this.serverDropped = true;
    this.onText(name === 'stderr' ? 'stderr' : 'stdout', text);
  }

  onDisplay(data: Record<string, unknown>): void {
    const image = pickImage(data);
    if (image) {
      if (this.imageBytes + image.length > this.maxOutputBytes) {
        if (!this.imagesDropped) {
          this.imagesDropped = true;
          this.onText('stderr', `\n[codeact: image output dropped after ${formatBytes(this.maxOutputBytes)} of images]\n`);
        }
        return;
      }
      this.imageBytes += image.length;
      this.images.push({ type: 'image', url: image });
      return;
    }
    if ('application/json' in data) {
      let text: string;
      try {
        text = JSON.stringify(data['application/json'], null, 2);
      } catch {
        text = String(data['application/json']);
      }
      this.onText('stdout', text + '\n');
      return;
    }
    const plain = data['text/plain'];
    if (typeof plain === 'string') this.onText('stdout', plain.endsWith('\n') ? plain : plain + '\n');
    else if (Array.isArray(plain)) this.onText('stdout', plain.join('') + '\n');
  }

  onText(stream: StreamName, text: string): void {
    const part = this.output.pushText(stream, text);
    if (part) this.emit({ type: 'codeact.output.delta', item_id: this.itemId, stream, delta: part });
  }

  outputs(): CodeOutput[] {
    return [...this.output.outputs(), ...this.images];
  }

  get truncated(): boolean {
    return this.output.truncated || this.imagesDropped || this.serverDropped;
  }
}

const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

function pickImage(data: Record<string, unknown>): string | undefined {
  for (const mime of IMAGE_TYPES) {
    const v = data[mime];
    if (typeof v === 'string' && v) return `data:${mime};base64,${v.replace(/\s+/g, '')}`;
  }
  const svg = data['image/svg+xml'];
  const text = typeof svg === 'string' ? svg : Array.isArray(svg) ? svg.join('') : undefined;
  if (text) return `data:image/svg+xml;base64,${Buffer.from(text, 'utf8').toString('base64')}`;
  return undefined;
}
