/**
 * Reads recorded provider streams for replay: pydantic-ai VCR cassettes (YAML) and raw SSE files.
 *
 * Only what replay needs is parsed, by hand (no YAML dependency): per interaction the request
 * `method`/`uri`, the response `status.code`, `headers` and `body.string`. `body.string` is the raw
 * HTTP body; PyYAML writes it either as a block literal (`|+`, `|`, `|-`: OpenAI and Anthropic SSE)
 * or as a double-quoted, line-folded scalar with escapes (Gemini, whose body contains `\r`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { replay, type RawResponse } from './turn';

export interface CassetteInteraction {
  request: { method?: string; uri?: string };
  response: { status: number; headers: Record<string, string[]>; body: string };
}

/** `<repo>/../shared/fixtures/providers`, next to the repository (the shared folder of the project). */
export function fixturesDir(): string {
  return path.resolve(__dirname, '../../../../shared/fixtures/providers');
}

export function loadCassette(file: string): CassetteInteraction[] {
  return parseCassette(fs.readFileSync(file, 'utf8'));
}

/** A recorded interaction as a wire-server response (hop-by-hop and length headers dropped). */
export function cassetteResponse(i: CassetteInteraction, o: { chunkBytes?: number } = {}): RawResponse {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(i.response.headers)) {
    if (/^(transfer-encoding|content-length|content-encoding|connection|keep-alive)$/i.test(k)) continue;
    headers[k] = v.join(', ');
  }
  headers['content-type'] ??= 'text/event-stream';
  return replay(i.response.body, { status: i.response.status, headers, chunkBytes: o.chunkBytes });
}

export function parseCassette(text: string): CassetteInteraction[] {
  const lines = text.split('\n');
  const out: CassetteInteraction[] = [];
  let cur: CassetteInteraction | undefined;
  let section: 'request' | 'response' | undefined;
  let sub: string | undefined;
  let headerName: string | undefined;
  // Character offset of the start of each line.
  const offsets: number[] = [];
  let acc = 0;
  for (const l of lines) {
    offsets.push(acc);
    acc += l.length + 1;
  }
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n];
    if (/^- request:\s*$/.test(line)) {
      cur = { request: {}, response: { status: 200, headers: {}, body: '' } };
      out.push(cur);
      section = 'request';
      sub = undefined;
      continue;
    }
    if (!cur) continue;
    if (/^ {2}response:\s*$/.test(line)) {
      section = 'response';
      sub = undefined;
      continue;
    }
    if (/^\S/.test(line)) {
      section = undefined;
      continue;
    }
    const key4 = /^ {4}([A-Za-z_]+):\s*(.*)$/.exec(line);
    if (key4) {
      sub = key4[1];
      headerName = undefined;
      if (section === 'request' && (sub === 'method' || sub === 'uri')) cur.request[sub] = plain(key4[2]);
      continue;
    }
    if (section !== 'response') continue;
    if (sub === 'body') {
      const m = /^ {6}string:\s?(.*)$/.exec(line);
      if (m) {
        const valueStart = offsets[n] + line.indexOf('string:') + 'string:'.length;
        const { value, endLine } = parseScalar(text, valueStart, lines, n, 6);
        cur.response.body = value;
        n = endLine;
      }
      continue;
    }
    if (sub === 'status') {
      const m = /^ {6}code:\s*(\d+)/.exec(line);
      if (m) cur.response.status = Number(m[1]);
      continue;
    }
    if (sub === 'headers') {
      const name = /^ {6}([^\s:][^:]*):\s*$/.exec(line);
      if (name) {
        headerName = name[1].toLowerCase();
        cur.response.headers[headerName] = [];
        continue;
      }
      const val = /^ {6}- (.*)$/.exec(line);
      if (val && headerName) cur.response.headers[headerName].push(plain(val[1]));
    }
  }
  return out;
}

function plain(v: string): string {
  const t = v.trim();
  if (t.startsWith("'") && t.endsWith("'")) return t.slice(1, -1).replace(/''/g, "'");
  if (t.startsWith('"') && t.endsWith('"')) return JSON.parse(t) as string;
  return t;
}

/** Parses the scalar that starts at `pos` (just after `key:`); `lineNo` is its line, `parentIndent` the key's indent. */
function parseScalar(text: string, pos: number, lines: string[], lineNo: number, parentIndent: number): { value: string; endLine: number } {
  let i = pos;
  while (text[i] === ' ') i++;
  const c = text[i];
  if (c === '|' || c === '>') return parseBlock(text.slice(i, text.indexOf('\n', i)), lines, lineNo, parentIndent);
  if (c === '"') return parseDoubleQuoted(text, i + 1);
  if (c === "'") return parseSingleQuoted(text, i + 1);
  return { value: text.slice(i, text.indexOf('\n', i)).trim(), endLine: lineNo };
}

function parseBlock(header: string, lines: string[], lineNo: number, parentIndent: number): { value: string; endLine: number } {
  const folded = header[0] === '>';
  const chomp = header.includes('+') ? 'keep' : header.includes('-') ? 'strip' : 'clip';
  const explicit = /\d/.exec(header);
  let indent = explicit ? parentIndent + Number(explicit[0]) : -1;
  const content: string[] = [];
  let n = lineNo + 1;
  for (; n < lines.length; n++) {
    const l = lines[n];
    if (l.trim() === '') {
      content.push('');
      continue;
    }
    const lead = l.length - l.trimStart().length;
    if (indent < 0) indent = lead;
    if (lead < indent || lead <= parentIndent) break;
    content.push(l.slice(indent));
  }
  // Trailing blank lines belong to the scalar only with "keep"; the last line break too unless "strip".
  let trailing = 0;
  while (content.length > 0 && content[content.length - 1] === '') {
    content.pop();
    trailing++;
  }
  // The final line of the file has no "\n" after it; a blank entry from it is not content.
  if (n >= lines.length && trailing > 0 && lines[lines.length - 1] === '') trailing--;
  let value = folded ? content.join(' ') : content.join('\n');
  if (content.length > 0) {
    if (chomp === 'keep') value += '\n' + '\n'.repeat(trailing);
    else if (chomp === 'clip') value += '\n';
  }
  return { value, endLine: n - 1 };
}

const ESCAPES: Record<string, string> = {
  '0': '\0',
  a: '\x07',
  b: '\b',
  t: '\t',
  '\t': '\t',
  n: '\n',
  v: '\x0b',
  f: '\f',
  r: '\r',
  e: '\x1b',
  ' ': ' ',
  '"': '"',
  '/': '/',
  '\\': '\\',
  N: '\x85',
  _: '\xa0',
  L: '\u2028',
  P: '\u2029',
};

function parseDoubleQuoted(text: string, start: number): { value: string; endLine: number } {
  let out = '';
  let protectedLen = 0;
  let i = start;
  for (;;) {
    const c = text[i];
    if (c === undefined) throw new Error('unterminated double-quoted scalar in cassette');
    if (c === '"') break;
    if (c === '\\') {
      const e = text[i + 1];
      if (e === '\n') {
        i += 2;
        while (text[i] === ' ' || text[i] === '\t') i++;
        continue;
      }
      if (e === 'x' || e === 'u' || e === 'U') {
        const len = e === 'x' ? 2 : e === 'u' ? 4 : 8;
        out += String.fromCodePoint(parseInt(text.slice(i + 2, i + 2 + len), 16));
        i += 2 + len;
      } else {
        const v = ESCAPES[e];
        if (v === undefined) throw new Error(`unknown escape \\${e} in cassette`);
        out += v;
        i += 2;
      }
      protectedLen = out.length;
      continue;
    }
    if (c === '\n') {
      // Line folding: trailing white space goes, one break becomes a space, n empty lines become n breaks.
      let end = out.length;
      while (end > protectedLen && (out[end - 1] === ' ' || out[end - 1] === '\t')) end--;
      out = out.slice(0, end);
      const folded = foldBreak(text, i);
      i = folded.next;
      out += folded.text;
      continue;
    }
    out += c;
    i++;
  }
  const endLine = text.slice(0, i).split('\n').length - 1;
  return { value: out, endLine };
}

/**
 * YAML line folding inside a flow scalar, at the line break `text[at]`: the leading white space of the
 * next lines goes, one break becomes a space, and n empty lines become n breaks.
 */
function foldBreak(text: string, at: number): { next: number; text: string } {
  let i = at + 1;
  let empty = 0;
  for (;;) {
    let j = i;
    while (text[j] === ' ' || text[j] === '\t') j++;
    if (text[j] !== '\n') return { next: j, text: empty > 0 ? '\n'.repeat(empty) : ' ' };
    empty++;
    i = j + 1;
  }
}

function parseSingleQuoted(text: string, start: number): { value: string; endLine: number } {
  let out = '';
  let i = start;
  for (;;) {
    const c = text[i];
    if (c === undefined) throw new Error('unterminated single-quoted scalar in cassette');
    if (c === "'") {
      if (text[i + 1] === "'") {
        out += "'";
        i += 2;
        continue;
      }
      break;
    }
    if (c === '\n') {
      out = out.replace(/[ \t]+$/, '');
      const folded = foldBreak(text, i);
      i = folded.next;
      out += folded.text;
      continue;
    }
    out += c;
    i++;
  }
  return { value: out, endLine: text.slice(0, i).split('\n').length - 1 };
}

/** Splits an SSE body into events (`event` name or null, `data` text), for computing expectations. */
export function parseSse(body: string): { event: string | null; data: string }[] {
  const out: { event: string | null; data: string }[] = [];
  for (const block of body.split(/\r\n\r\n|\n\n|\r\r/)) {
    let event: string | null = null;
    const data: string[] = [];
    for (const line of block.split(/\r\n|\n|\r/)) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (data.length > 0) out.push({ event, data: data.join('\n') });
  }
  return out;
}
