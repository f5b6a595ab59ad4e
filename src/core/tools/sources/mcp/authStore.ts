/**
 * Where MCP sign-ins are kept: per server, the OAuth client registration (dynamic or pre-registered)
 * and the tokens. The host supplies a secret key-value store ({@link McpSecretStore}): VS Code's
 * SecretStorage in the extension, a 0600 file in the config folder for the CLI (src/cli/mcpAuth.ts).
 * An index entry lists the servers that have something stored, for "Sign Out of MCP Server…".
 */
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

/** A secret key-value store (values are JSON text). */
export interface McpSecretStore {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
}

/** What is kept for one server. */
export interface McpAuthRecord {
  /** The MCP endpoint. */
  serverUrl: string;
  /** Its label, for the sign-out list. */
  label: string;
  /** The dynamic registration (absent for a pre-registered client id). */
  client?: OAuthClientInformationMixed;
  tokens?: OAuthTokens;
  /** When the tokens were saved (ms since the epoch): with `expires_in`, when they expire. */
  savedAt?: number;
}

/** Largest record read back; larger is treated as corrupt (and replaced on the next save). */
const RECORD_MAX_CHARS = 256 * 1024;
/** Most servers kept in the index. */
const INDEX_MAX = 500;
const INDEX_KEY = 'codeact.mcp.oauth.index';

/** The store key of a server (its URL, and the configured client id, if any). */
export function authRecordKey(serverUrl: string, clientId?: string): string {
  return `codeact.mcp.oauth:${serverUrl}${clientId ? `#${clientId}` : ''}`;
}

/** Reads and writes {@link McpAuthRecord}s and the index of signed-in servers in a secret store. */
export class McpAuthRecords {
  constructor(readonly secrets: McpSecretStore) {}

  async get(key: string): Promise<McpAuthRecord | undefined> {
    const text = await this.secrets.get(key);
    if (!text || text.length > RECORD_MAX_CHARS) return undefined;
    try {
      const r = JSON.parse(text) as McpAuthRecord;
      return r && typeof r === 'object' && typeof r.serverUrl === 'string' ? r : undefined;
    } catch {
      return undefined;
    }
  }

  async set(key: string, record: McpAuthRecord): Promise<void> {
    await this.secrets.set(key, JSON.stringify(record));
    const index = await this.keys();
    if (!index.includes(key)) await this.secrets.set(INDEX_KEY, JSON.stringify([...index, key].slice(-INDEX_MAX)));
  }

  /** Forgets a server: its tokens and its client registration. */
  async delete(key: string): Promise<void> {
    await this.secrets.delete(key);
    const index = await this.keys();
    if (index.includes(key)) await this.secrets.set(INDEX_KEY, JSON.stringify(index.filter((k) => k !== key)));
  }

  /** Keys of the servers that have something stored. */
  async keys(): Promise<string[]> {
    const text = await this.secrets.get(INDEX_KEY);
    if (!text || text.length > RECORD_MAX_CHARS) return [];
    try {
      const v = JSON.parse(text) as unknown;
      return Array.isArray(v) ? v.filter((k): k is string => typeof k === 'string').slice(0, INDEX_MAX) : [];
    } catch {
      return [];
    }
  }

  /** The servers with stored tokens or a registration, for a sign-out list. */
  async list(): Promise<Array<{ key: string; record: McpAuthRecord }>> {
    const out: Array<{ key: string; record: McpAuthRecord }> = [];
    for (const key of await this.keys()) {
      const record = await this.get(key);
      if (record) out.push({ key, record });
    }
    return out;
  }
}

/** A store in memory (tests, and hosts that keep nothing). */
export function memorySecretStore(): McpSecretStore & { readonly map: Map<string, string> } {
  const map = new Map<string, string>();
  return {
    map,
    get: async (k) => map.get(k),
    set: async (k, v) => void map.set(k, v),
    delete: async (k) => void map.delete(k),
  };
}
