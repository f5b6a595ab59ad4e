/** The error of anything that would run code in a workspace that is not trusted (the front doors render it). */
import { CodeActError } from '../core/util/errors';

export class UntrustedWorkspaceError extends CodeActError {
  readonly category = 'config' as const;
  /** What was refused ("Running code"): the front doors say it in their own words (./trust). */
  constructor(readonly what: string) {
    super(`${what} is disabled because this workspace is not trusted: its settings could declare tools that run commands. Trust the workspace to allow it.`);
    this.name = 'UntrustedWorkspaceError';
  }
}
