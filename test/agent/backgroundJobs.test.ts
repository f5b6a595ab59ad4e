/**
 * Background jobs through the agent loop: real SDK clients against loopback wire servers, the job in the real
 * local guest's session. The model starts a job, the conversation goes on while it runs (a FIFO holds it), and
 * the job's end reaches the model's next request once; no request says it ended before it did.
 */
import * as assert from 'node:assert/strict';
import type { ProviderId } from '../../src/core/providers/shared/types';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { ToolGateway } from '../../src/core/gateway/gateway';
import { AgentLoop } from '../../src/core/agent/agent';
import { JOBS_OFF } from '../../src/core/tools/modelTools';
import { JupyterRuntime } from '../../src/core/runtime/jupyter/jupyterRuntime';
import { DEFAULT_MODELS, providerFor, startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';

const NOTE = 'Background job 1 finished after ';

describe('background jobs through the agent loop', function () {
  this.timeout(60_000);
  const runtime = new LocalRuntime({ sandbox: { kind: 'auto' } });
  after(() => runtime.dispose());

  for (const provider of ['openai', 'anthropic', 'gemini', 'openai-compatible'] as ProviderId[]) {
    it(`${provider}: the job's end reaches the next request once, and no request before says it ended`, async () => {
      const server: WireServer = await startServerFor(provider);
      try {
        const sessionId = `jobs-${provider}`;
        server.push(
          turn().call('execute_tool_code', { code: 'import os\nos.mkfifo("gate")' }),
          turn().call('execute_tool_code', { code: "got = open('gate').read()\nprint('job says hi')\n{'got': got}", background: true }),
          turn().call('execute_tool_code', { code: "open('gate', 'w').write('go')\nwait_job(1, timeout=60)['status']" }),
          turn().text('The job is done.'),
          turn().text('Nothing new.'),
        );
        const told: string[] = [];
        const agent = new AgentLoop({
          provider: await providerFor(provider, server),
          model: DEFAULT_MODELS[provider],
          runtime,
          gateway: new ToolGateway([]),
          sessionId,
          onEvent: (e) => e.type === 'codeact.job.notes' && told.push(`${e.session_id} ${e.jobs.join()} ${e.text}`),
        });
        const tools = agent.modelTools()[0];
        assert.ok((tools.parameters as { properties: Record<string, unknown> }).properties.background, 'the local session offers background');
        assert.match(tools.description, /`"background": true` returns `\{"job": n, "status": "running"\}` at once/);
        const result = await agent.run([], 'Run the job.');
        assert.equal(result.status, 'completed', JSON.stringify(result.error));
        const bodies = server.turns.map((t) => JSON.stringify(t.body));
        assert.equal(bodies.length, 4);
        // Request 3 carries the job's handle while the job waits on the FIFO: no note.
        assert.match(bodies[2], /\\"job\\":1,\\"status\\":\\"running\\"/);
        for (const b of bodies.slice(0, 3)) assert.ok(!b.includes(NOTE), 'no request says the job ended before it did');
        // Request 4, after the run that waited for it: the note, once, with its value and its output.
        assert.equal(bodies[3].split(NOTE).length - 1, 1, bodies[3].slice(-1500));
        assert.match(bodies[3], /its value: \{\\"got\\":\\"go\\"\}/);
        assert.match(bodies[3], /job says hi/);
        // The panel's card of it: its own event (the conversation's own record, not a message of the person), once.
        assert.equal(told.length, 1);
        assert.ok(told[0].startsWith(`${sessionId} 1 [codeact] Background job ended since your last step:\n\n${NOTE}`), told[0]);
        // The next prompt's request has it once, in the history: it is not said again.
        const next = await agent.run(result.items, 'Anything else?');
        assert.equal(next.status, 'completed', JSON.stringify(next.error));
        assert.equal(JSON.stringify(server.turns[4].body).split(NOTE).length - 1, 1);
      } finally {
        await server.close();
      }
    });
  }

  it('protocol "text": a block whose first line is `# background` starts a job, as the system instruction says', async () => {
    const server = await startServerFor('openai-compatible', 'ollama');
    try {
      server.push(turn().text('Starting it.\n\n```python\n# background\n6 * 7\n```'), turn().text('Started.'));
      const agent = new AgentLoop({
        provider: await providerFor('openai-compatible', server),
        model: DEFAULT_MODELS['openai-compatible'],
        runtime,
        gateway: new ToolGateway([]),
        sessionId: 'jobs-text',
        protocol: 'text',
      });
      const result = await agent.run([], 'Run it in the background.');
      assert.equal(result.status, 'completed', JSON.stringify(result.error));
      assert.match(JSON.stringify(server.turns[0].body), /make `# background` the first line of a block to run it as a background job/);
      assert.match(JSON.stringify(server.turns[1].body), /\\"job\\":1,\\"status\\":\\"running\\"/);
    } finally {
      await server.close();
    }
  });

  it('on Jupyter the model is told plainly that there are no background jobs, and `background` is refused', async () => {
    const jupyter = new JupyterRuntime({ url: 'http://127.0.0.1:9/', token: 'unused' });
    try {
      const server = await startServerFor('openai');
      try {
        server.push(turn().call('execute_tool_code', { code: '1', background: true }), turn().text('ok'));
        const agent = new AgentLoop({
          provider: await providerFor('openai', server),
          model: DEFAULT_MODELS.openai,
          runtime: jupyter,
          gateway: new ToolGateway([]),
          sessionId: 'j',
        });
        const spec = agent.modelTools()[0];
        assert.match(spec.description, /Background jobs are not available on the Jupyter runtime/);
        assert.equal((spec.parameters as { properties: Record<string, unknown> }).properties.background, undefined);
        const result = await agent.run([], 'Go.');
        assert.equal(result.status, 'completed', JSON.stringify(result.error));
        assert.match(JSON.stringify(server.turns[1].body), /Background jobs are not available on the Jupyter runtime/);
      } finally {
        await server.close();
      }
    } finally {
      await jupyter.dispose();
    }
  });

  it('with codeact.jobs.maxPerSession 0 the model is not offered `background`, is told why, and a call with it is refused', async () => {
    const local = new LocalRuntime({ limits: { maxJobs: 0 } });
    try {
      const server = await startServerFor('openai');
      try {
        server.push(turn().call('execute_tool_code', { code: '1', background: true }), turn().text('ok'));
        const agent = new AgentLoop({
          provider: await providerFor('openai', server),
          model: DEFAULT_MODELS.openai,
          runtime: local,
          gateway: new ToolGateway([]),
          sessionId: 'off',
          maxJobs: 0,
        });
        const spec = agent.modelTools()[0];
        assert.ok(spec.description.includes(JOBS_OFF), spec.description);
        assert.equal((spec.parameters as { properties: Record<string, unknown> }).properties.background, undefined);
        const result = await agent.run([], 'Go.');
        assert.equal(result.status, 'completed', JSON.stringify(result.error));
        assert.ok(JSON.stringify(server.turns[1].body).includes(JOBS_OFF), 'the refusal says why');
      } finally {
        await server.close();
      }
    } finally {
      await local.dispose();
    }
  });
});
