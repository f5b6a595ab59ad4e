/**
 * `codeact sessions`: the Python sessions this user's session hosts keep alive (codeact.session.host "auto"),
 * with their conversation, folder, age, the run going on, memory (RSS of the guest's tree) and running jobs;
 * `codeact sessions end ID|--all` ends one session, or every host (and so every session, their process trees killed).
 */
import { approxBytes } from '../common/outputLabels';
import { forTerminal } from '../common/untrusted';
import { everyHost } from '../core/sessionHost/launch';
import type { HostSessionInfo } from '../core/sessionHost/wire';
import { parse, UsageError } from './args';

const SESSIONS_USAGE = `Usage: codeact sessions [--json]
       codeact sessions end ID|--all

Lists the Python sessions kept by session hosts (codeact.session.host "auto", codeact chat --session-host auto):
the conversation, its folder, its age, the run going on, the memory of its process tree (resident, as ps shows it)
and its background jobs running. "end ID" ends one session; "end --all" ends every session host of yours.`;

const ago = (ms: number) => {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${Math.round(s / 3600)} h`;
};

export async function sessionsCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse({
    args: argv,
    options: { json: { type: 'boolean' }, all: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const,
  });
  if (values.help) {
    process.stdout.write(SESSIONS_USAGE + '\n');
    return 0;
  }
  const [sub, id, ...rest] = positionals;
  if (rest.length || (sub !== undefined && sub !== 'end')) throw new UsageError(SESSIONS_USAGE);
  const hosts = await everyHost();
  try {
    if (sub === 'end') {
      if (values.all === !!id) throw new UsageError('codeact sessions end needs one session id, or --all.');
      if (values.all) {
        for (const h of hosts) h.end();
        process.stderr.write(`Ended ${hosts.length} session host${hosts.length === 1 ? '' : 's'}.\n`);
        return 0;
      }
      const holder = hosts.find((h) => h.live.has(id));
      if (!holder) {
        process.stderr.write(`codeact: no live session ${forTerminal(id, { line: true })} (codeact sessions lists them).\n`);
        return 1;
      }
      await holder.ask('close', id);
      process.stderr.write(`Ended the session of ${forTerminal(id, { line: true })}.\n`);
      return 0;
    }
    const rows: Array<HostSessionInfo & { host: number }> = [];
    for (const h of hosts) for (const s of (await h.ask('list', '')) as HostSessionInfo[]) rows.push({ ...s, host: h.welcome.pid });
    if (values.json) process.stdout.write(JSON.stringify(rows) + '\n');
    else if (!rows.length) process.stdout.write('No live sessions.\n');
    else {
      const now = Date.now();
      for (const r of rows) {
        const state = r.running ? `running ${forTerminal(r.running, { line: true })}` : `idle ${ago(now - r.lastRunAt)}`;
        const memory = typeof r.memoryBytes === 'number' ? `  ${approxBytes(r.memoryBytes)}` : '';
        const jobs = r.jobs ? `  ${r.jobs} background job${r.jobs === 1 ? '' : 's'} running` : '';
        process.stdout.write(
          `${forTerminal(r.id, { line: true })}  ${forTerminal(r.workspace, { line: true })}  started ${ago(now - r.startedAt)} ago  ${state}${memory}${jobs}\n`,
        );
      }
    }
    return 0;
  } finally {
    for (const h of hosts) h.close();
  }
}
