/**
 * Managed-tool declarations, as written in `codeact.tools` (settings.json). Pure types and
 * constants shared by the engine, the extension and the webview.
 */

export type JsonSchema = Record<string, unknown> | boolean;

export type ApprovalPolicy = 'auto' | 'ask' | 'deny';
export type ToolExposure = 'code' | 'direct' | 'both';

export interface CommandSource {
  /** argv; the first element is the program. Run in the workspace folder. */
  argv: string[];
  /** Working directory relative to the workspace folder. */
  cwd?: string;
  /** Names of host environment variables passed through, on top of a minimal environment. */
  env?: string[];
  timeoutMs?: number;
  maxOutputBytes?: number;
}

export interface HttpSource {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** URL template; `{param}` is replaced by the URL-encoded argument of that name. */
  url: string;
  allowedHosts: string[];
  /** Header values may use `${env:NAME}`, resolved on the host, never sent to the guest. */
  headers?: Record<string, string>;
  /** `json` (the default for POST/PUT/PATCH) sends the remaining arguments as a JSON body. */
  body?: 'json' | 'none';
  timeoutMs?: number;
  maxResponseBytes?: number;
}

export interface McpSource {
  /** Server command (stdio) or URL (streamable HTTP). */
  command?: string[];
  url?: string;
  tool: string;
  env?: string[];
  /** OAuth of an HTTP server (`url`): a pre-registered client instead of dynamic client registration, and the scopes to ask for. */
  oauth?: McpOAuthConfig;
}

/** `mcp.oauth` of a declaration. Sign-in itself needs none of it: a server that asks for OAuth gets it (discovery + dynamic registration). */
export interface McpOAuthConfig {
  /** A client id registered with the server's authorization server (when it does not offer dynamic client registration). */
  clientId?: string;
  /** The secret of a confidential pre-registered client (most sign-ins use PKCE with no secret). */
  clientSecret?: string;
  /** Space-separated scopes to ask for when neither the server's 401 nor its metadata names any. */
  scope?: string;
}

/**
 * The sources a managed tool can come from: one field of a declaration each. A new kind of source is a field
 * here; the compiler then asks for its row in {@link TOOL_SOURCE_INFO} and its descriptor in `TOOL_SOURCES`
 * (core/tools/toolSources.ts).
 */
interface ToolSourceFields {
  command?: CommandSource | string[];
  http?: HttpSource;
  mcp?: McpSource;
  lmTool?: string;
}

/** The kind of a tool's source: the name of its field in a declaration. */
export type ToolSourceKind = keyof ToolSourceFields;

export interface ToolDeclaration extends ToolSourceFields {
  name: string;
  description?: string;
  inputSchema?: JsonSchema;
  outputSchema?: JsonSchema;
  approval?: ApprovalPolicy;
  expose?: ToolExposure;
}

/** What is said of a source kind where its tools are listed. */
interface ToolSourceInfo {
  /** The heading of its tools in the tool catalogue, when a tool has no group of its own (core/gateway/discovery/toolCatalog.ts). */
  group: string;
}

/** One row per source kind, in the order a declaration's sources are named in messages. */
export const TOOL_SOURCE_INFO: Record<ToolSourceKind, ToolSourceInfo> = {
  command: { group: 'command tools' },
  http: { group: 'HTTP tools' },
  mcp: { group: 'MCP tools' },
  lmTool: { group: 'VS Code language-model tools' },
};

/** Every source kind, in the catalogue's order. */
export const TOOL_SOURCE_KINDS = Object.keys(TOOL_SOURCE_INFO) as ToolSourceKind[];

export const TOOL_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/**
 * A program a tool runs on the host, as its source kind declares it (its descriptor's `launches` in core/tools/toolSources.ts): the sandbox
 * keeps what it runs inside the workspace read-only (core/runtime/local/hostFiles.ts).
 */
export interface HostLaunch {
  tool: string;
  argv: unknown[];
  /** The folder it runs in, relative to the workspace (default: the workspace). */
  cwd?: string;
}

/**
 * Reserved call names for tool discovery from inside the code (see core/gateway/discovery/toolDiscovery.ts). They all
 * start with `codeact.`, which no declared tool name can.
 */
export const SEARCH_TOOLS = 'codeact.search_tools';
export const DESCRIBE_TOOL = 'codeact.describe_tool';
export const TOOL_CATALOG = 'codeact.tool_catalog';
export const RESERVED_CALLS = { search: SEARCH_TOOLS, describe: DESCRIBE_TOOL, catalog: TOOL_CATALOG } as const;

/** The reserved call of the guest's `install_packages` (see core/runtime/install): approved by the person, never a tool. */
export const INSTALL_PACKAGES = 'codeact.install_packages';

/** Who asks when a background job's `call_tool` needs the person (an approval, a form): one wording everywhere. */
export const jobAsks = (job: number): string => `Background job ${job} asks`;

/** True for a reserved discovery name (never a managed tool). */
export function isDiscoveryCall(name: unknown): boolean {
  return typeof name === 'string' && name.startsWith('codeact.') && name !== INSTALL_PACKAGES;
}

/**
 * One thing wrong with a `codeact.tools` declaration, said so that a person can fix it: where (`field`, a
 * path in the declaration such as `inputSchema.properties.query.type`), the bad value as written (JSON), why
 * in plain words, and what to write instead. A problem without a field is one sentence of its own.
 */
export interface DeclarationProblem {
  field?: string;
  /** The value as written, as JSON (`"objekt"`); absent when the field is missing. */
  value?: string;
  reason: string;
  fix?: string;
}

/** `In inputSchema, "type": "objekt" is not a JSON Schema type. Fix: write "object" (…).` */
export function formatDeclarationProblem(p: DeclarationProblem): string {
  const end = (s: string) => (/[.!?]$/.test(s) ? s : `${s}.`);
  const fix = p.fix ? ` Fix: ${end(p.fix)}` : '';
  if (!p.field) return `${end(p.reason.charAt(0).toUpperCase() + p.reason.slice(1))}${fix}`;
  const at = p.field.lastIndexOf('.');
  const key = p.field.slice(at + 1);
  const parent = at > 0 ? p.field.slice(0, at) : '';
  const subject = p.value !== undefined ? `${JSON.stringify(key)}: ${p.value}` : JSON.stringify(key);
  return `${parent ? `In ${parent}, ` : ''}${subject} ${end(p.reason)}${fix}`;
}
