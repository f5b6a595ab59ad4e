/** The error of anything that would run code in a workspace that is not trusted (the front doors render it), and how they say it. */
import { CodeActError } from '../core/util/errors';

export const MANAGE_TRUST = 'Manage Workspace Trust';

export function untrustedMessage(what: string): string {
  return `CodeAct: ${what} is disabled because this workspace is not trusted. Its settings could declare tools that run commands on your machine. Trust the workspace to allow it.`;
}

export class UntrustedWorkspaceError extends CodeActError {
  readonly category = 'config' as const;
  /** What was refused ("Running code"): the front doors say it in their own words (./trust). */
  constructor(readonly what: string) {
    super(`${what} is disabled because this workspace is not trusted: its settings could declare tools that run commands. Trust the workspace to allow it.`);
    this.name = 'UntrustedWorkspaceError';
  }
}
