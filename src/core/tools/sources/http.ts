/**
 * `http` tools: a method, a URL template with encoded `{param}` substitution, an allowlist of hosts
 * (also enforced on every redirect), headers that may reference `${env:NAME}` (resolved here on the
 * host; the guest never sees them), a response size cap, and non-2xx as an error with a snippet.
 *
 * Credentials stay where they were meant to go: `Authorization`, `Cookie`, `Proxy-Authorization` and
 * every header built from `${env:…}` are dropped once a redirect leaves the URL's origin, as browsers
 * and curl do. Query parameters fixed in the URL template cannot be overridden by arguments.
 */
import type { HttpSource } from '../../../common/tools';
import { overCap } from '../../../common/format';
import { readBodyOrThrow } from '../../util/readBodyCapped';

const HTTP_DEFAULTS = { timeoutMs: 30_000, maxResponseBytes: 4 * 1024 * 1024, maxRedirects: 5 };

interface HttpRunOptions {
  signal: AbortSignal;
  hostEnv?: NodeJS.ProcessEnv;
}

/** Says what is wrong with a declaration's `http` object, each thing on its own. */
export function checkHttpSource(h: HttpSource | undefined, say: (reason: string) => void): void {
  if (!h || typeof h !== 'object') return say('"http" must be an object');
  if (typeof h.url !== 'string' || !/^https?:\/\//.test(h.url)) say('"http.url" must be an http(s) URL template');
  if (!Array.isArray(h.allowedHosts) || h.allowedHosts.length === 0 || !h.allowedHosts.every((x) => typeof x === 'string')) {
    say('"http.allowedHosts" must list the hosts the tool may reach');
  } else {
    const bad = h.allowedHosts.filter((x) => !parseHostRule(x));
    if (bad.length)
      say(`"http.allowedHosts" entries must be [http(s)://]host[:port] (host may be *.example.com), not ${bad.map((b) => JSON.stringify(b)).join(', ')}`);
  }
  if (h.method !== undefined && !['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(h.method)) say('"http.method" must be GET, POST, PUT, PATCH or DELETE');
}

/** Expands `{name}` from the arguments (URL-encoded); returns the URL and the arguments left over. */
function expandUrl(template: string, args: Record<string, unknown>): { url: string; rest: Record<string, unknown> } {
  const rest = { ...args };
  const url = template.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
    if (!(name in args)) throw new Error(`the URL needs the argument "${name}"`);
    const v = args[name];
    delete rest[name];
    const text = typeof v === 'string' ? v : JSON.stringify(v);
    // encodeURIComponent leaves "." alone: "{id}" = ".." would climb out of the template's path.
    if (text === '' || text === '.' || text === '..') throw new Error(`the argument "${name}" may not be ${JSON.stringify(text)} in the URL`);
    return encodeURIComponent(text);
  });
  return { url, rest };
}

/** Headers that carry credentials whatever their value. */
const CREDENTIAL_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization']);

/** The headers that must not follow a redirect to another origin: credentials, and anything built from `${env:…}`. */
function sensitiveHeaders(headers: Record<string, string> | undefined): Set<string> {
  const out = new Set<string>();
  for (const [k, v] of Object.entries(headers ?? {})) {
    if (CREDENTIAL_HEADERS.has(k.toLowerCase()) || /\$\{env:/.test(v)) out.add(k);
  }
  return out;
}

function resolveHeaders(headers: Record<string, string> | undefined, env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) {
    out[k] = v.replace(/\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
      const value = env[name];
      if (value === undefined) throw new Error(`header "${k}" needs the environment variable ${name}, which is not set`);
      return value;
    });
  }
  return out;
}

interface HostRule {
  /** `http:` or `https:` when the entry names one; then only that scheme matches. */
  scheme?: string;
  /** A host name, an IP address (IPv6 in brackets), or `*.suffix` for any subdomain. */
  host: string;
  /** The port when the entry names one; then only that port matches (the scheme's default counts). */
  port?: string;
}

/** Reads an `allowedHosts` entry: `[scheme://]host[:port]`, host possibly `*.example.com`. Undefined when it is not one. */
function parseHostRule(entry: string): HostRule | undefined {
  const m = /^(?:(https?):\/\/)?(\*\.[a-z0-9.-]+|\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?\/?$/i.exec(entry.trim());
  if (!m) return undefined;
  const port = m[3] === undefined ? undefined : String(Number(m[3]));
  if (port !== undefined && Number(port) > 65535) return undefined;
  return { scheme: m[1] ? `${m[1].toLowerCase()}:` : undefined, host: m[2].toLowerCase(), port };
}

const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443' };

export function hostAllowed(url: URL, allowed: string[]): boolean {
  const host = url.hostname.toLowerCase();
  const port = url.port || DEFAULT_PORTS[url.protocol] || '';
  return allowed.some((entry) => {
    const rule = parseHostRule(entry);
    if (!rule) return false;
    if (rule.scheme && rule.scheme !== url.protocol) return false;
    if (rule.port !== undefined && rule.port !== port) return false;
    if (rule.host.startsWith('*.')) return host.endsWith(rule.host.slice(1)) && host !== rule.host.slice(2);
    return rule.host === host;
  });
}

export async function runHttpTool(toolName: string, source: HttpSource, args: Record<string, unknown>, options: HttpRunOptions): Promise<unknown> {
  const env = options.hostEnv ?? process.env;
  const method = source.method ?? 'GET';
  const fail = (msg: string) => new Error(`Tool "${toolName}": ${msg}`);
  let expanded: { url: string; rest: Record<string, unknown> };
  let headers: Record<string, string>;
  const sensitive = sensitiveHeaders(source.headers);
  try {
    expanded = expandUrl(source.url, args);
    headers = resolveHeaders(source.headers, env);
  } catch (e) {
    throw fail((e as Error).message);
  }
  let url: URL;
  try {
    url = new URL(expanded.url);
  } catch {
    throw fail(`"${expanded.url}" is not a valid URL`);
  }
  const sendsBody = (source.body ?? (method === 'GET' || method === 'DELETE' ? 'none' : 'json')) === 'json';
  if (!sendsBody) {
    const fixed = new Set(url.searchParams.keys());
    for (const [k, v] of Object.entries(expanded.rest)) {
      // The template's own query parameters (an API key, a version) are the declaration's, not the code's.
      if (fixed.has(k)) throw fail(`the argument "${k}" would override the query parameter "${k}" fixed in the URL template; it cannot be set by arguments`);
      url.searchParams.append(k, typeof v === 'string' ? v : JSON.stringify(v));
    }
  }
  const timeoutMs = source.timeoutMs ?? HTTP_DEFAULTS.timeoutMs;
  const timedOut = (phase: string) =>
    fail(`timed out after ${timeoutMs / 1000} s ${phase} (its timeoutMs is ${timeoutMs}; raise it in the declaration if the endpoint needs longer)`);
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = AbortSignal.any([options.signal, timeout]);
  const cap = source.maxResponseBytes ?? HTTP_DEFAULTS.maxResponseBytes;
  let currentMethod = method;
  let body: string | undefined = sendsBody ? JSON.stringify(expanded.rest) : undefined;
  const origin = url.origin;
  for (let hop = 0; ; hop++) {
    if (url.origin !== origin && sensitive.size) {
      // Left the origin: credentials stay behind, for this hop and every later one.
      for (const k of sensitive) delete headers[k];
      sensitive.clear();
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw fail(`only http and https URLs are allowed, not ${url.protocol}`);
    if (!hostAllowed(url, source.allowedHosts)) {
      throw fail(`${hop ? 'a redirect went' : 'the request goes'} to ${url.host}, which is not in allowedHosts (${source.allowedHosts.join(', ')})`);
    }
    let res: Response;
    try {
      res = await fetch(url, {
        method: currentMethod,
        headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
        body,
        redirect: 'manual',
        signal,
      });
    } catch (e) {
      if (timeout.aborted) throw timedOut(`waiting for ${url.host}`);
      if (options.signal.aborted) throw fail('was stopped');
      throw fail(`request to ${url.host} failed: ${((e as Error).cause as Error | undefined)?.message ?? (e as Error).message}`);
    }
    if (res.status >= 300 && res.status < 400 && res.headers.get('location')) {
      if (hop >= HTTP_DEFAULTS.maxRedirects) throw fail(`too many redirects (more than ${HTTP_DEFAULTS.maxRedirects})`);
      url = new URL(res.headers.get('location')!, url);
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && currentMethod === 'POST')) {
        currentMethod = 'GET';
        body = undefined;
      }
      await res.body?.cancel();
      continue;
    }
    let text: string;
    try {
      const tooLarge = () =>
        fail(
          `${url.host} sent ${overCap(cap)}, the tool's maxResponseBytes, so CodeAct stopped reading there and closed the connection. ` +
            "Raise maxResponseBytes in the tool's declaration if the endpoint's answers are this large, or ask it for less.",
        );
      text = (await readBodyOrThrow(res.body, cap, tooLarge)).toString('utf8');
    } catch (e) {
      if (timeout.aborted) throw timedOut(`reading the response from ${url.host}`);
      if (options.signal.aborted) throw fail('was stopped');
      if ((e as Error).message.startsWith(`Tool "${toolName}"`)) throw e;
      throw fail(`reading the response from ${url.host} failed: ${((e as Error).cause as Error | undefined)?.message ?? (e as Error).message}`);
    }
    if (!res.ok) {
      const snippet = text.trim().slice(0, 300);
      throw fail(`HTTP ${res.status} ${res.statusText}${snippet ? `: ${snippet}` : ''}`);
    }
    if (!text.trim()) return null;
    const type = res.headers.get('content-type') ?? '';
    if (/json/.test(type) || /^[[{"]/.test(text.trim())) {
      try {
        return JSON.parse(text);
      } catch {
        if (/json/.test(type)) throw fail(`the response is not valid JSON: ${JSON.stringify(text.slice(0, 200))}`);
      }
    }
    return text;
  }
}
