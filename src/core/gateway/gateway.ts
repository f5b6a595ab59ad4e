/**
 * The tool gateway: the trust boundary between guest code and the host. Only allowlisted tools run;
 * arguments are validated before a tool is invoked and results after; the approval policy applies;
 * every call is recorded. Guest input is untrusted: names and arguments are checked, never trusted.
 */
import type { ToolCallRecord } from '../../common/events';
import type { ApprovalPolicy, JsonSchema, ToolExposure } from '../../common/tools';
import type { ToolCallHandler, ToolCallRequest } from '../runtime/types';
import { isDiscoveryCall, ToolDiscovery } from '../tools/discovery';
import type { ToolCatalog } from '../tools/toolCatalog';
import { compileSchema, type Validator } from './schema';

export interface ToolInvokeContext {
  signal: AbortSignal;
  callId: string;
}

export interface ManagedTool {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  approval: ApprovalPolicy;
  expose: ToolExposure;
  /** Where the tool comes from: `command`, `http`, `mcp`, `lmTool`, or a host's own. */
  source: string;
  invoke(args: Record<string, unknown>, context: ToolInvokeContext): Promise<unknown>;
}

export interface ApprovalRequest {
  tool: ManagedTool;
  arguments: Record<string, unknown>;
  itemId: string;
  callId: string;
  signal: AbortSignal;
}

/** Decides an `ask` call. Resolves true to run it. Implemented by the extension (a card or a modal). */
export type Approver = (request: ApprovalRequest) => Promise<boolean>;

export interface GatewayOptions {
  approver?: Approver;
  /** Overrides per tool (for example "Allow for this session"); `deny` always wins over everything. */
  policyOverride?: (tool: ManagedTool) => ApprovalPolicy | undefined;
  log?: (line: string) => void;
  onRecord?: (record: ToolCallRecord) => void;
  /** Largest result accepted from a tool, serialised; default 16 MiB. */
  maxResultBytes?: number;
}

export class ToolError extends Error {
  constructor(message: string, readonly code: 'unknown_tool' | 'invalid_arguments' | 'invalid_result' | 'denied' | 'failed') {
    super(message);
    this.name = 'ToolError';
  }
}

interface Entry {
  tool: ManagedTool;
  input: Validator;
  output?: Validator;
}

export class ToolGateway {
  private readonly entries = new Map<string, Entry>();
  readonly records: ToolCallRecord[] = [];

  constructor(tools: ManagedTool[], private readonly options: GatewayOptions = {}) {
    for (const tool of tools) {
      this.entries.set(tool.name, {
        tool,
        input: compileSchema(tool.inputSchema),
        output: tool.outputSchema === undefined ? undefined : compileSchema(tool.outputSchema),
      });
    }
  }

  names(): string[] {
    return [...this.entries.keys()].sort();
  }

  tools(): ManagedTool[] {
    return this.names().map((n) => this.entries.get(n)!.tool);
  }

  get(name: string): ManagedTool | undefined {
    return this.entries.get(name)?.tool;
  }

  /**
   * Pass this as the runtime's `onToolCall`. Reserved discovery names (`codeact.search_tools`,
   * `codeact.describe_tool`, `codeact.tool_catalog`) are answered from the tool list (see ../tools/discovery);
   * every other name is a managed-tool call.
   */
  readonly handler: ToolCallHandler = (request, signal) => (isDiscoveryCall(request.name) ? this.discover(request) : this.call(request, signal));

  private discovery?: ToolDiscovery;

  /** Answers a discovery call: no approval, no tool runs, not recorded as a tool call; bounded answers. */
  async discover(request: ToolCallRequest): Promise<unknown> {
    this.discovery ??= new ToolDiscovery(this.tools());
    const started = performance.now();
    try {
      return this.discovery.handle(String(request.name), request.arguments);
    } finally {
      this.options.log?.(`discovery ${request.name} in ${Math.round((performance.now() - started) * 100) / 100} ms`);
    }
  }

  /** The signature catalogue of the tools, for the guest's `tools` module (also served as `codeact.tool_catalog`). */
  catalog(): ToolCatalog {
    this.discovery ??= new ToolDiscovery(this.tools());
    return this.discovery.catalog();
  }

  async call(request: ToolCallRequest, signal: AbortSignal): Promise<unknown> {
    const startedAt = Date.now();
    const t0 = performance.now();
    const record = (ok: boolean, output: unknown, error?: string): void => {
      const json = ok ? JSON.stringify(output ?? null) : '';
      const rec: ToolCallRecord = {
        call_id: request.callId,
        name: request.name,
        arguments: request.arguments,
        ok,
        ...(ok ? { output } : { error }),
        duration_ms: Math.round((performance.now() - t0) * 100) / 100,
        result_bytes: Buffer.byteLength(json),
        started_at: startedAt,
        ended_at: Date.now(),
      };
      this.records.push(rec);
      this.options.onRecord?.(rec);
      this.options.log?.(`tool ${request.name} ${ok ? 'ok' : 'error'} in ${rec.duration_ms} ms${ok ? '' : `: ${error}`}`);
    };
    try {
      const output = await this.run(request, signal);
      record(true, output);
      return output;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      record(false, undefined, message);
      throw err instanceof ToolError ? err : new ToolError(message, 'failed');
    }
  }

  private async run(request: ToolCallRequest, signal: AbortSignal): Promise<unknown> {
    const name = typeof request.name === 'string' ? request.name : String(request.name);
    const entry = this.entries.get(name);
    if (!entry) {
      const allowed = this.names();
      throw new ToolError(
        `Unknown tool "${name}". ` + (allowed.length ? `Allowed tools: ${allowed.join(', ')}.` : 'No managed tools are declared (codeact.tools in .vscode/settings.json).'),
        'unknown_tool',
      );
    }
    const args = request.arguments;
    if (!args || typeof args !== 'object' || Array.isArray(args)) {
      throw new ToolError(`Invalid arguments for "${name}": $ must be an object of keyword arguments.`, 'invalid_arguments');
    }
    const problems = entry.input(args);
    if (problems.length) throw new ToolError(`Invalid arguments for "${name}": ${problems.join('; ')}.`, 'invalid_arguments');

    const { tool } = entry;
    const override = this.options.policyOverride?.(tool);
    const policy: ApprovalPolicy = tool.approval === 'deny' || override === 'deny' ? 'deny' : (override ?? tool.approval);
    if (policy === 'deny') {
      this.options.log?.(`approval: ${name} denied by policy`);
      throw new ToolError(`The tool "${name}" is denied by its approval policy. Change "approval" in codeact.tools to allow it.`, 'denied');
    }
    if (policy === 'ask') {
      if (!this.options.approver) {
        throw new ToolError(`The tool "${name}" needs approval, and nobody can approve it here. Run it in VS Code, or set its "approval" to "auto".`, 'denied');
      }
      const allowed = await this.options.approver({ tool, arguments: args as Record<string, unknown>, itemId: request.itemId, callId: request.callId, signal });
      this.options.log?.(`approval: ${name} ${allowed ? 'allowed' : 'denied'} by the user`);
      if (!allowed) throw new ToolError(`The user denied the call to "${name}".`, 'denied');
    }
    if (signal.aborted) throw new ToolError('The run was stopped.', 'failed');
    const output = await tool.invoke(args as Record<string, unknown>, { signal, callId: request.callId });
    if (output === undefined) return null;
    const max = this.options.maxResultBytes ?? 16 * 1024 * 1024;
    const size = Buffer.byteLength(JSON.stringify(output));
    if (size > max) throw new ToolError(`The tool "${name}" returned ${size.toLocaleString('en-US')} bytes; the limit is ${max.toLocaleString('en-US')}.`, 'invalid_result');
    if (entry.output) {
      const bad = entry.output(output);
      if (bad.length) throw new ToolError(`The tool "${name}" returned an invalid result: ${bad.join('; ')}.`, 'invalid_result');
    }
    return output;
  }
}
