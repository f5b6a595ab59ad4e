/**
 * Runs a sequence of executions on the real local runtime in a child Node process, optionally as
 * another (unprivileged) user, each in the session it names: sessions stay alive between steps, so two
 * guests live at the same time. A step's code may use the values earlier steps returned, as `prev`
 * (a list, in order). The child reports every item and the runtime's warnings and log lines.
 */
import * as path from 'node:path';
import type { CodeInterpreterCallItem } from '../../../src/common/events';
import type { LocalRuntimeOptions } from '../../../src/core/runtime/local/localRuntime';
import { runScriptInChild } from './asUser';

const REPO = path.resolve(__dirname, '..', '..', '..');

const SCRIPT = String.raw`
import { LocalRuntime } from '${REPO}/src/core/runtime/local/localRuntime';
(async () => {
  const { steps, options } = JSON.parse(process.argv[2]);
  const warnings: string[] = [];
  const log: string[] = [];
  const rt = new LocalRuntime({ ...options, onWarning: (m: string) => warnings.push(m), log: (l: string) => log.push(l) });
  const items = [];
  const prev = [];
  for (const step of steps) {
    const code = 'prev = ' + JSON.stringify(JSON.stringify(prev)) + '\nimport json as _j\nprev = _j.loads(prev)\n' + step.code;
    const item = await rt.execute({ code, sessionId: step.session, timeoutMs: 120_000 });
    items.push(item);
    prev.push(item.value ?? null);
  }
  await rt.dispose();
  console.log(JSON.stringify({ items, warnings, log }));
})();
`;

export interface SessionsOutcome {
  items: CodeInterpreterCallItem[];
  warnings: string[];
  log: string[];
}

export interface Step {
  session: string;
  code: string;
}

/** Runs `steps` in a fresh runtime with `options` (JSON-able) in a child process, as `user` when given. */
export function runSessionsInChild(steps: Step[], options: LocalRuntimeOptions, user?: { uid: number; gid: number }): Promise<SessionsOutcome> {
  return runScriptInChild<SessionsOutcome>(SCRIPT, { steps, options }, user);
}
