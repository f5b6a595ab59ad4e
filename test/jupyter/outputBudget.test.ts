/**
 * The output budget on a real Jupyter kernel: a 60,000-character output that ends in an
 * exception reaches the model as its beginning and end with an exact count, in both protocols, and a
 * follow-up run in the same kernel reads the whole text with output_of(1).
 */
import * as assert from 'node:assert/strict';
import type { FunctionCallOutputItem } from '../../src/common/events';
import { quoteBlock } from '../../src/common/quoteData';
import type { AgentOptions } from '../../src/core/agent/agent';
import { forgetToolRejections } from '../../src/core/agent/textProtocol';
import type { ConversationItem, ProviderId } from '../../src/core/providers/shared/types';
import { JupyterRuntime } from '../../src/core/runtime/jupyter/jupyterRuntime';
import { SKIP_MESSAGE, findJupyterServer, startJupyterServer, type JupyterServer } from '../support/jupyterServer';
import { EXCEPTION, FOLLOW_UP_CODE, LONG_FAILING_CODE, assertHeadAndTail, expectedFollowUp, expectedStdout } from '../support/longOutput';
import { messagesOf, unquoteBlock } from '../support/textWire';
import { resultsInRequest, startServerFor, wireAgent } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';
import { OBSERVATION } from '../../src/core/agent/textHistory';

const available = !!findJupyterServer();
if (!available) console.log(`  ${SKIP_MESSAGE}`);

(available ? describe : describe.skip)('output budget on a Jupyter kernel (real jupyter-server)', function () {
  this.timeout(120_000);
  let jupyter: JupyterServer;
  let runtime: JupyterRuntime;
  let server: WireServer | undefined;
  const full = expectedStdout();
  const logs: string[] = [];

  before(async () => {
    jupyter = await startJupyterServer();
    runtime = new JupyterRuntime({ url: jupyter.url, token: jupyter.token, log: (l) => logs.push(l) });
  });
  after(async () => {
    await runtime?.dispose();
    await jupyter?.stop();
  });
  afterEach(async () => {
    forgetToolRejections();
    await server?.close();
    server = undefined;
  });

  const agentFor = (provider: ProviderId, s: WireServer, extra: Partial<AgentOptions> = {}) =>
    wireAgent(provider, s, { runtime, sessionId: `kernel-budget-${provider}-${extra.protocol ?? 'tools'}`, ...extra });

  const stored = (items: ConversationItem[]) => items.filter((i): i is FunctionCallOutputItem & ConversationItem => i.type === 'function_call_output');

  it('openai (Responses), function calling: the exception and the tail reach the model, the count is exact, output_of(1) reads the whole text', async () => {
    server = await startServerFor('openai');
    server.push(
      turn().call('execute_tool_code', { code: LONG_FAILING_CODE }),
      turn().call('execute_tool_code', { code: FOLLOW_UP_CODE }),
      turn().text('Done.'),
    );
    const agent = await agentFor('openai', server);
    const result = await agent.run([], 'Load the data and tell me what went wrong.');
    assert.equal(result.status, 'completed', JSON.stringify(result.error));
    const tools = server.turns[0].body.tools as { name: string; description: string }[];
    assert.match(
      tools.find((t) => t.name === 'execute_tool_code')!.description,
      /at most 20,000 characters of output[\s\S]*whole output with `output_of\(n\)`/,
    );
    const [first] = resultsInRequest('openai', server.turns[1].body);
    assert.equal(first, stored(result.items)[0].output);
    const summary = JSON.parse(first);
    assert.equal(summary.error.type, 'ValueError');
    assert.equal(summary.error.message, 'the data ran out');
    assert.match(summary.error.traceback, new RegExp(`${EXCEPTION}\\n?$`));
    assert.equal(assertHeadAndTail(summary.stdout, full, 20_000), 'output_of(1) in a later run returns the whole text');
    const second = JSON.parse(resultsInRequest('openai', server.turns[2].body)[1]);
    assert.equal(second.status, 'completed', JSON.stringify(second.error));
    assert.deepEqual(second.value, expectedFollowUp());
    assert.deepEqual(
      logs.filter((l) => /could not keep/.test(l)),
      [],
    );
  });

  it('openai-compatible, text protocol: the observation carries the cut text and the exception; the follow-up reads the whole text', async () => {
    server = await startServerFor('openai-compatible', 'ollama');
    const block = (code: string) => `\`\`\`python\n${code}\n\`\`\``;
    server.push(turn().text(block(LONG_FAILING_CODE)), turn().text(block(FOLLOW_UP_CODE)), turn().text('Done.'));
    const agent = await agentFor('openai-compatible', server, { protocol: 'text' });
    const result = await agent.run([], 'Load the data and tell me what went wrong.');
    assert.equal(result.status, 'completed', JSON.stringify(result.error));
    const observation = messagesOf('openai-compatible', server.turns[1].body).at(-1)!.text;
    assert.ok(observation.startsWith(`${OBSERVATION.failed('ValueError')}\n│ the data ran out\n${OBSERVATION.printed}\n`), observation);
    const printed = /\nPrinted output:\n([\s\S]*)\nTraceback:\n/.exec(observation)![1];
    assert.equal(printed, quoteBlock(JSON.parse(stored(result.items)[0].output).stdout));
    assertHeadAndTail(`${unquoteBlock(printed)}\n`, full, 20_000);
    assert.ok(observation.includes(EXCEPTION), 'the exception reaches the model');
    const value = /\nReturned value: (.*)$/m.exec(messagesOf('openai-compatible', server.turns[2].body).at(-1)!.text)![1];
    assert.deepEqual(JSON.parse(value), expectedFollowUp());
  });

  it('the next run files the kept output before its code: a run that never reached the kernel loses nothing, a stopped run is kept', async () => {
    const sessionId = 'kernel-budget-order';
    const first = await runtime.execute({ code: 'print("one")', sessionId, execution: 1 });
    assert.equal(first.status, 'completed');
    // Stopped before it started: no cell of it reaches the kernel, so execution 1's output waits for the next one.
    const refused = await runtime.execute({ code: 'print("never")', sessionId, execution: 2 }, { signal: AbortSignal.abort() });
    assert.equal(refused.status, 'incomplete');
    const stop = new AbortController();
    const stopped = await runtime.execute(
      { code: 'import time\nprint("before the stop", flush=True)\ntime.sleep(60)', sessionId, execution: 3 },
      { signal: stop.signal, onEvent: (e) => e.type === 'codeact.output.delta' && stop.abort() },
    );
    assert.notEqual(stopped.status, 'completed');
    const read = await runtime.execute({ code: 'return [output_of(1), output_of(3), last_output()]', sessionId, execution: 4 });
    assert.equal(read.status, 'completed', JSON.stringify(read.error));
    assert.deepEqual(read.value, ['one\n', 'before the stop\n', 'before the stop\n']);
    const missing = await runtime.execute({ code: 'output_of(2)', sessionId, execution: 5 });
    assert.match(missing.error?.message ?? '', /No output of execution 2 in this session; it keeps executions 1, 3, 4/);
  });

  it('a kernel keeps the output of its own runs only: a restart starts empty, and output_of says why', async () => {
    const sessionId = 'kernel-budget-restart';
    const first = await runtime.execute({ code: 'print("kept")', sessionId, execution: 1 });
    assert.equal(first.status, 'completed');
    const read = await runtime.execute({ code: 'return output_of(1)', sessionId, execution: 2 });
    assert.equal(read.value, 'kept\n');
    await runtime.sessions.restart(sessionId);
    const gone = await runtime.execute({ code: 'output_of(1)', sessionId, execution: 3 });
    assert.equal(gone.error?.type, 'LookupError');
    assert.match(gone.error!.message, /this session has no earlier run's output \(it is new, or it was restarted since\)/);
  });
});
