/**
 * call_tool from a background job (guest/codeact_jobtools.py, local/jobTools.ts), on the real runtime with real
 * python3 in its sandbox and a real command tool: the job's calls reach the gateway of the execution that
 * started it while no run is going on; approvals say which job asks; a refusal reaches the job; stop_job and
 * the session's end settle a call still waiting for the person.
 */
import assert from 'node:assert/strict';
import type { CodeInterpreterCallItem, JobToolCall } from '../../src/common/events';
import { REFUSALS, ToolGateway, type ApprovalOutcome, type ApprovalRequest } from '../../src/core/gateway/gateway';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import type { ExecuteRequest } from '../../src/core/runtime/types';
import { runCommandTool } from '../../src/core/tools/sources/command';
import { managedTool } from '../support/managedTool';
import { waitFor } from '../support/wait';

/** A command tool: the text upper-cased, by a real process (JSON on stdin, JSON on stdout). */
const UPPER = "import json, sys\na = json.load(sys.stdin)\nprint(json.dumps({'up': a['text'].upper()}))";

interface Asked {
  request: ApprovalRequest;
  answer: (outcome: ApprovalOutcome) => void;
}

describe('call_tool from a background job (a local session)', function () {
  this.timeout(90_000);
  const rt = new LocalRuntime({ sandbox: { kind: 'auto' }, zygote: true });
  after(() => rt.dispose());
  const asked: Asked[] = [];
  const gateway = new ToolGateway(
    [
      managedTool({
        name: 'upper',
        inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
        invoke: (args, o) => runCommandTool('upper', { argv: ['python3', '-c', UPPER] }, args, { workspace: process.cwd(), signal: o.signal }),
      }),
      managedTool({ name: 'send_note', approval: 'ask', invoke: async (args) => ({ sent: args.text }) }),
    ],
    {
      approver: (request) =>
        new Promise<ApprovalOutcome>((answer) => {
          asked.push({ request, answer });
          request.signal.addEventListener('abort', () => answer({ unanswered: 'no answer: the job ended' }), { once: true });
        }),
    },
  );
  let session = 0;
  const run = (code: string, extra: Partial<ExecuteRequest> = {}): Promise<CodeInterpreterCallItem> =>
    rt.execute({ code, sessionId: `s${session}`, ...extra }, { onToolCall: gateway.handler });
  const ok = (item: CodeInterpreterCallItem): unknown => {
    assert.equal(item.status, 'completed', JSON.stringify(item.error));
    return item.value;
  };
  const waitJob = async (n: number) => ok(await run(`wait_job(${n}, timeout=60)`)) as { status: string; value?: unknown; error?: string };
  beforeEach(() => {
    session++;
    asked.length = 0;
  });

  it("calls a command tool and gets its result; an unknown tool is refused by the gateway, in the job's own error", async () => {
    const code =
      'r = await call_tool("upper", text="from job")\ntry:\n    await call_tool("no_such_tool")\nexcept RuntimeError as e:\n    err = str(e)\n{"r": r, "err": err}';
    const tools: JobToolCall[] = [];
    const off = rt.onJobOutput((e) => void (e.session_id === `s${session}` && e.job === 1 && e.tool && tools.push(e.tool)));
    assert.deepEqual(ok(await run(code, { background: true })), { job: 1, status: 'running' });
    const done = await waitJob(1);
    off();
    assert.equal(done.status, 'done', JSON.stringify(done));
    // Its card lists its calls: each one's start, then its end (the result, or the gateway's refusal).
    assert.deepEqual(
      tools.map((t) => [t.name, t.status, t.status === 'running' ? t.arguments : t.status === 'ok' ? t.output : t.error?.slice(0, 20)]),
      [
        ['upper', 'running', { text: 'from job' }],
        ['upper', 'ok', { up: 'FROM JOB' }],
        ['no_such_tool', 'running', {}],
        ['no_such_tool', 'error', REFUSALS.unknownTool('no_such_tool').slice(0, 20)],
      ],
    );
    assert.equal(new Set(tools.map((t) => t.call_id)).size, 2, 'one id per call');
    const value = done.value as { r: unknown; err: string };
    assert.deepEqual(value.r, { up: 'FROM JOB' });
    assert.ok(value.err.startsWith(REFUSALS.unknownTool('no_such_tool')), value.err);
    const recorded = gateway.records.slice(-2).map((r) => [r.name, r.ok, r.call_id.includes(':job1.')]);
    assert.deepEqual(recorded, [
      ['upper', true, true],
      ['no_such_tool', false, true],
    ]);
  });

  it('asks the person while no run is going on, says which job asks; allowed gives the result, denied reaches the job as a refusal', async () => {
    const code =
      'a = await call_tool("send_note", text="one")\ntry:\n    await call_tool("send_note", text="two")\n    b = "ran"\nexcept RuntimeError as e:\n    b = str(e)\n{"a": a, "b": b}';
    ok(await run(code, { background: true }));
    // The first call waits for the person; no execution runs meanwhile.
    await waitFor(() => asked.length === 1, { timeoutMs: 60_000, what: "the job's first approval" });
    assert.equal(asked[0].request.job, 1);
    assert.equal(asked[0].request.tool.name, 'send_note');
    assert.deepEqual(asked[0].request.arguments, { text: 'one' });
    asked[0].answer('allowed');
    await waitFor(() => asked.length === 2, { timeoutMs: 60_000, what: "the job's second approval" });
    assert.equal(asked[1].request.job, 1);
    asked[1].answer('denied');
    const done = await waitJob(1);
    assert.equal(done.status, 'done', JSON.stringify(done));
    assert.deepEqual(done.value, { a: { sent: 'one' }, b: REFUSALS.userDenied('send_note') });
  });

  it('a job that writes on its tool channel what call_tool never writes is killed, and its output says why', async () => {
    // The job's end of its socket, found as untrusted code could find it: through call_tool's closure.
    const raw = (line: string) =>
      `import os\nfd = call_tool.__closure__[0].cell_contents.call.__self__.fd\nos.write(fd, ${line})\nimport time\ntime.sleep(600)`;
    ok(await run(raw('b"not json\\n"'), { background: true }));
    const malformed = await waitJob(1);
    assert.equal(malformed.status, 'failed', JSON.stringify(malformed));
    assert.match(String(ok(await run('job_output(1)'))), /background job 1 was killed: it wrote a malformed frame on its tool channel/);
    ok(await run(raw('b"x" * (17 << 20)'), { background: true }));
    assert.equal((await waitJob(2)).status, 'failed');
    assert.match(
      String(ok(await run('job_output(2)'))),
      /background job 2 was killed: it wrote a line of [\d,]+ bytes on its tool channel \(the limit is [\d,]+\)/,
    );
  });

  it("stop_job settles the job's call still waiting for the person, and so does the session's end", async () => {
    ok(await run('await call_tool("send_note", text="never")', { background: true }));
    await waitFor(() => asked.length === 1, { timeoutMs: 60_000, what: "the job's approval" });
    const stopped = ok(await run('stop_job(1)')) as { status: string };
    assert.equal(stopped.status, 'stopped');
    await waitFor(() => asked[0].request.signal.aborted, { timeoutMs: 60_000, what: 'the approval to be settled' });
    ok(await run('await call_tool("send_note", text="never either")', { background: true }));
    await waitFor(() => asked.length === 2, { timeoutMs: 60_000, what: "the second job's approval" });
    assert.equal(asked[1].request.job, 2);
    await rt.sessions.close(`s${session}`);
    await waitFor(() => asked[1].request.signal.aborted, { timeoutMs: 60_000, what: 'the approval to be settled with the session' });
  });
});
