/**
 * Typed error categories. Callers branch on `errorCategory(e)` or `instanceof`, never on `e.name`
 * strings or message text. A category tells a host what to do with a failure:
 *
 * - `usage`: the command line was wrong (the CLI prints its usage, exit 2);
 * - `config`: a setting is malformed or not allowed (show it and name the setting to fix);
 * - `environment`: something the machine lacks (Python, bubblewrap, a reachable server);
 * - `cancelled`: the user stopped it; never an error to report;
 * - `timeout`: a limit passed;
 * - `provider`: the model provider refused or failed (see `ProviderError.code`);
 * - `tool`: a managed tool call was refused or failed (see `ToolError.code`);
 * - `runtime`: the runtime (guest, kernel, sandbox) failed.
 */
export type ErrorCategory = 'usage' | 'config' | 'environment' | 'cancelled' | 'timeout' | 'provider' | 'tool' | 'runtime';

/** The base of our errors: each says its category. */
export abstract class CodeActError extends Error {
  abstract readonly category: ErrorCategory;
}

/** The user (or a caller's AbortSignal) stopped the work. Named `AbortError` like the platform's. */
export class CancelledError extends CodeActError {
  readonly category = 'cancelled' as const;
  constructor(message = 'The run was stopped.') {
    super(message);
    this.name = 'AbortError';
  }
}

/**
 * The category of any thrown value: ours say it; the platform's and the SDKs' aborts and timeouts
 * (`AbortError`, `APIUserAbortError`, `TimeoutError` from `AbortSignal.timeout`) are mapped here, in
 * the one place that looks at foreign error names. Undefined for anything else.
 */
export function errorCategory(e: unknown): ErrorCategory | undefined {
  if (e instanceof CodeActError) return e.category;
  if (!e || typeof e !== 'object') return undefined;
  const name = (e as { name?: unknown }).name;
  const ctor = (e as object).constructor?.name;
  if (name === 'AbortError' || name === 'APIUserAbortError' || ctor === 'APIUserAbortError') return 'cancelled';
  if (name === 'TimeoutError') return 'timeout';
  return undefined;
}

/** True when `e` means "stopped", from us, the platform or an SDK. */
export function isCancellation(e: unknown): boolean {
  return errorCategory(e) === 'cancelled';
}
