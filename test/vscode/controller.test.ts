import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { buildTranscript, type ApprovalView, type TranscriptEvent } from '../../src/common/transcript';
import { UntrustedWorkspaceError } from '../../src/vscode/controller';
import { callTool, harness, lmToolDecl, type Harness } from './fakes';
import { STORE_MESSAGES } from '../../src/core/agent/transcriptStore';
import { SESSION_GONE_NOTICE } from '../../src/vscode/conversationMemory';
import { noKeyMessage } from '../../src/vscode/providers';

const tick = () => new Promise((r) => setImmediate(r));

/** A code_interpreter_call event as a transcript saves it (the runtime that ran it). */
function ranCodeEvents(h: Harness): TranscriptEvent[] {
  return h.controller.currentConversation!.events.filter((e) => e.type === 'response.output_item.done');
}

describe('vscode controller (fake seams)', () => {
  let h: Harness;
  afterEach(async () => {
    await h?.controller.shutdown();
    h?.cleanup();
  });

  describe('Workspace Trust', () => {
    it('an untrusted workspace refuses Run with Tools and local prompts, before anything starts', async () => {
      h = harness({ tools: [lmToolDecl('search')] });
      h.lm.registered = [{ name: 'vendor_search', description: '' }];
      h.apis.trusted = false;
      await assert.rejects(
        h.controller.runCode('print(1)', 'run'),
        (e: unknown) => e instanceof UntrustedWorkspaceError && /^Running code is disabled because this workspace is not trusted/.test(e.message),
      );
      await assert.rejects(h.controller.send('hello'), UntrustedWorkspaceError);
      assert.throws(() => h.controller.requireTrust('Using tools'), UntrustedWorkspaceError);
      // The one gate the front doors ask: its refusal says what was refused (they render it in their own words).
      assert.equal(h.controller.trustGate('Running code with tools')?.what, 'Running code with tools');
      assert.ok(h.controller.trustGate('Running code', 'prompt') instanceof UntrustedWorkspaceError, 'a local prompt runs code here');
      assert.equal(h.runtimes.built.length, 0, 'no runtime was built');
      assert.equal(h.controller.currentConversation, undefined, 'no conversation was started');
      assert.equal(h.controller.busy, false);
      assert.deepEqual(h.controller.toolSet(), { tools: [], errors: [] }, 'declared tools do not exist without trust');
      assert.equal((await h.controller.hostState()).trusted, false);
    });

    it('hosted mode may send without trust (the code runs at the provider): a missing key is an error with "Set API Key…"', async () => {
      h = harness({ mode: 'hosted', provider: 'anthropic' });
      h.apis.trusted = false;
      h.apis.errorAnswer = 'Set API Key…';
      assert.equal(h.controller.trustGate('Running code', 'prompt'), undefined, 'a hosted prompt runs its code at the provider');
      assert.ok(h.controller.trustGate('Running code') instanceof UntrustedWorkspaceError, 'code itself still needs trust');
      const saved = process.env.ANTHROPIC_API_KEY;
      delete process.env.ANTHROPIC_API_KEY;
      try {
        const result = await h.controller.send('hello', 'chat');
        assert.equal(result, undefined);
      } finally {
        if (saved !== undefined) process.env.ANTHROPIC_API_KEY = saved;
      }
      assert.equal(h.apis.errors.length, 1);
      assert.ok(h.apis.errors[0].message.startsWith(`CodeAct: ${noKeyMessage('anthropic')}`), h.apis.errors[0].message);
      assert.deepEqual(h.apis.errors[0].items, ['Set API Key…']);
      await tick();
      assert.deepEqual(h.apis.ranCommands, ['codeact.setApiKey']);
      assert.equal(h.runtimes.built.length, 0, 'hosted mode never builds the local runtime');
      const types = h.controller.currentConversation!.events.map((e) => e.type);
      assert.deepEqual(types, ['codeact.turn.started', 'error', 'codeact.turn.ended']);
      assert.equal(h.controller.busy, false);
    });
  });

  describe('runs and approvals through the gateway', () => {
    it("Run with Tools runs in the conversation's session, saves and streams its events, and marks busy while it runs", async () => {
      h = harness();
      const seen: string[] = [];
      h.controller.onEvent((e) => seen.push(e.type));
      const busy: boolean[] = [];
      h.controller.onState(() => busy.push(h.controller.busy));
      h.runtimes.setup = (r) => (r.script = async () => ({ value: 42 }));
      const item = await h.controller.runCode('x = 42', 'my run');
      assert.equal(item.status, 'completed');
      assert.equal(item.value, 42);
      const convo = h.controller.currentConversation!;
      assert.equal(convo.meta.title, 'my run');
      assert.equal(h.runtimes.last!.executed[0].sessionId, convo.id);
      const saved = convo.events.map((e) => e.type);
      assert.deepEqual(saved, ['codeact.turn.started', 'response.code_interpreter_call.in_progress', 'response.output_item.done', 'codeact.turn.ended']);
      assert.deepEqual(seen, saved);
      assert.ok(busy.includes(true) && busy.at(-1) === false);
      assert.ok(h.apis.commands.some((c) => c[0] === 'setContext' && c[1] === 'codeact.running' && c[2] === true));
      assert.equal(h.controller.fullOutput(item.id)?.value, 42);
    });

    it('a tool marked "ask": "Allow for This Session" runs it, and later calls run without asking', async () => {
      h = harness({ tools: [lmToolDecl('search', 'ask')] });
      h.lm.registered = [{ name: 'vendor_search', description: '' }];
      h.approvals.answers = ['Allow for This Session'];
      h.runtimes.setup = (r) => (r.script = callTool('search', { q: 'a' }));
      assert.deepEqual((await h.controller.runCode('search()', 'one')).value, { ok: true });
      assert.deepEqual((await h.controller.runCode('search()', 'two')).value, { ok: true });
      assert.equal(h.approvals.dialogs.length, 1, 'asked once');
      assert.equal(h.lm.calls.length, 2);
      const types = h.controller.currentConversation!.events.map((e) => e.type);
      assert.equal(types.filter((t) => t === 'codeact.approval.requested').length, 1);
      assert.equal(types.filter((t) => t === 'codeact.approval.resolved').length, 1);
    });

    it('"Allow Once" asks each time; a denied call fails in the code and the tool never runs', async () => {
      h = harness({ tools: [lmToolDecl('search', 'ask')] });
      h.lm.registered = [{ name: 'vendor_search', description: '' }];
      h.approvals.answers = ['Allow Once', undefined];
      h.runtimes.setup = (r) => (r.script = callTool('search'));
      assert.equal((await h.controller.runCode('search()', 'one')).status, 'completed');
      const denied = await h.controller.runCode('search()', 'two');
      assert.equal(denied.status, 'failed');
      assert.match(denied.error!.message, /denied|declined/i);
      assert.equal(h.approvals.dialogs.length, 2);
      assert.equal(h.lm.calls.length, 1);
    });

    it('codeact.approval.alwaysAllow lets an "ask" tool run without asking', async () => {
      h = harness({ tools: [lmToolDecl('search', 'ask')], 'approval.alwaysAllow': ['search'] });
      h.lm.registered = [{ name: 'vendor_search', description: '' }];
      h.runtimes.setup = (r) => (r.script = callTool('search'));
      assert.equal((await h.controller.runCode('search()', 'one')).status, 'completed');
      assert.equal(h.approvals.dialogs.length, 0);
    });

    it('a "deny" policy wins over alwaysAllow: no dialog, the tool never runs', async () => {
      h = harness({ tools: [lmToolDecl('search', 'deny')], 'approval.alwaysAllow': ['search'] });
      h.lm.registered = [{ name: 'vendor_search', description: '' }];
      h.approvals.answers = ['Allow for This Session'];
      h.runtimes.setup = (r) => (r.script = callTool('search'));
      const item = await h.controller.runCode('search()', 'one');
      assert.equal(item.status, 'failed');
      assert.equal(h.approvals.dialogs.length, 0);
      assert.equal(h.lm.calls.length, 0);
    });

    it('a "deny" tool stays denied after another tool was allowed for the session', async () => {
      h = harness({ tools: [lmToolDecl('search', 'ask'), lmToolDecl('wipe', 'deny')] });
      h.lm.registered = [
        { name: 'vendor_search', description: '' },
        { name: 'vendor_wipe', description: '' },
      ];
      h.approvals.answers = ['Allow for This Session', 'Allow for This Session'];
      h.runtimes.setup = (r) => (r.script = async (req, o, rt) => callTool(req.code)(req, o, rt));
      assert.equal((await h.controller.runCode('search', 'one')).status, 'completed');
      assert.equal((await h.controller.runCode('wipe', 'two')).status, 'failed');
      assert.deepEqual(
        h.lm.calls.map((c) => c.name),
        ['vendor_search'],
      );
      assert.equal(h.approvals.dialogs.length, 1);
    });

    it('Stop aborts the run and leaves the open approval card unanswered, "no answer: the run was stopped", never "deny" (also when the tool call\'s own signal has not fired yet)', async () => {
      h = harness({ tools: [lmToolDecl('search', 'ask')] });
      h.lm.registered = [{ name: 'vendor_search', description: '' }];
      h.controller.panelVisible = () => true;
      let signal: AbortSignal | undefined;
      h.runtimes.setup = (r) =>
        (r.script = async (req, o, rt) => {
          signal = o?.signal;
          // The tool call gets a signal of its own that Stop does not reach (a runtime that aborts its calls later).
          return callTool('search')(req, { ...o, signal: new AbortController().signal }, rt);
        });
      const run = h.controller.runCode('search()', 'one');
      for (let i = 0; i < 20 && !h.controller.currentConversation?.events.some((e) => e.type === 'codeact.approval.requested'); i++) await tick();
      assert.equal(h.controller.busy, true);
      assert.throws(() => h.controller.newConversation(), /Stop the running turn/);
      await assert.rejects(h.controller.runCode('x', 'again'), /already running "one"/);
      h.controller.stop();
      const item = await run;
      assert.equal(item.status, 'failed');
      assert.equal(signal?.aborted, true);
      assert.equal(h.lm.calls.length, 0);
      assert.equal(h.approvals.dialogs.length, 0, 'a card, not a dialog, while the panel is visible');
      const resolved = h.controller.currentConversation!.events.find((e) => e.type === 'codeact.approval.resolved') as { decision: string; reason?: string };
      assert.deepEqual([resolved.decision, resolved.reason], ['expired', 'no answer: the run was stopped']);
      // The card says so, and the log.
      const card = Object.values(buildTranscript(h.controller.currentConversation!.events).items).find((v) => v.kind === 'approval') as ApprovalView;
      assert.deepEqual([card.status, card.decision, card.reason], ['expired', undefined, 'no answer: the run was stopped']);
      assert.ok(
        h.log.lines.some((l) => /approval appr_\w+: tool search -> no answer: the run was stopped/.test(l)),
        h.log.lines.join('\n'),
      );
      assert.deepEqual(h.controller.pendingApprovals(), []);
      assert.equal(h.controller.busy, false);
    });

    it('codeact.approval.reviewCode shows the code first; a panel card may edit it', async () => {
      h = harness({ 'approval.reviewCode': true });
      h.controller.panelVisible = () => true;
      const run = h.controller.runCode('x = 1', 'one');
      let requested: { approval_id: string; kind: string; code: string } | undefined;
      for (let i = 0; i < 20 && !requested; i++) {
        await tick();
        requested = h.controller.currentConversation?.events.find((e) => e.type === 'codeact.approval.requested') as typeof requested;
      }
      assert.equal(requested?.kind, 'code');
      assert.equal(requested?.code, 'x = 1');
      h.controller.approvals.resolve(requested!.approval_id, 'allow_once', 'x = 2');
      assert.equal((await run).status, 'completed');
      assert.deepEqual(
        h.runtimes.last!.executed.map((r) => r.code),
        ['x = 2'],
      );
    });

    it("the tools' gateway asks through the modal dialog when the panel is hidden, with the tool and its arguments", async () => {
      h = harness({ tools: [lmToolDecl('search', 'ask')] });
      h.lm.registered = [{ name: 'vendor_search', description: '' }];
      h.approvals.answers = ['Always Allow'];
      h.runtimes.setup = (r) => (r.script = callTool('search', { q: 'z' }));
      await h.controller.runCode('search()', 'one');
      assert.equal(h.approvals.dialogs[0].message, 'CodeAct: allow the tool "search"?');
      assert.match(h.approvals.dialogs[0].detail!, /"q": "z"/);
      assert.deepEqual(h.approvals.saved, [['search']]);
    });
  });

  describe('conversations', () => {
    it('a new conversation leaves the old one: its session is closed, the next run starts another conversation', async () => {
      h = harness();
      await h.controller.runCode('a = 1', 'first');
      const first = h.controller.currentConversation!;
      const rt = h.runtimes.last!;
      assert.equal(rt.sessions.has(first.id), true);
      h.controller.newConversation();
      assert.equal(h.controller.currentConversation, undefined);
      assert.deepEqual(rt.closed, [first.id]);
      await h.controller.runCode('b = 2', 'second');
      const second = h.controller.currentConversation!;
      assert.notEqual(second.id, first.id);
      assert.equal(h.runtimes.built.length, 1, 'the same runtime serves both');
      assert.deepEqual(
        h.controller
          .listConversations()
          .map((c) => c.id)
          .sort(),
        [first.id, second.id].sort(),
      );
    });

    it('reopening a conversation whose session is gone says so; one whose session lives does not', async () => {
      h = harness();
      await h.controller.runCode('a = 1', 'first');
      const first = h.controller.currentConversation!.id;
      h.controller.newConversation();
      const reopened = await h.controller.openConversation(first);
      assert.equal(reopened.conversation.id, first);
      assert.ok((reopened.notice ?? '').includes(SESSION_GONE_NOTICE), reopened.notice ?? '');
      assert.equal(ranCodeEvents(h).length, 1, 'its transcript came back');

      // A runtime that still holds the session (say a kernel that outlived the switch): no notice.
      h.controller.newConversation();
      h.runtimes.last!.live.add(first);
      assert.equal((await h.controller.openConversation(first)).notice, undefined);
    });

    it('a conversation that never ran local code reopens without a notice', async () => {
      h = harness();
      const convo = h.controller.store.create({ title: 'chat only' });
      convo.flush();
      assert.equal((await h.controller.openConversation(convo.id)).notice, undefined);
      assert.equal((await h.controller.hostState()).conversationId, convo.id);
    });

    it('a damaged conversation stays in the history list saying so; reopening one says which records were skipped; a FIFO does not block', async () => {
      h = harness();
      await h.controller.runCode('a = 1', 'first');
      const convo = h.controller.currentConversation!;
      h.controller.newConversation();
      const lines = readFileSync(convo.file, 'utf8').trimEnd().split('\n');
      lines.splice(2, 0, '{"t":1,"event":{"ty');
      lines[0] = '{"meta":{"id":';
      const original = lines.join('\n') + '\n';
      writeFileSync(convo.file, original);
      execFileSync('mkfifo', [path.join(h.controller.store.dir, 'c_fifo.jsonl')]);
      const listed = h.controller.listConversations();
      assert.match(listed.find((c) => c.id === convo.id)!.title, /^first \(damaged: its first line/);
      assert.match(listed.find((c) => c.id === 'c_fifo')!.title, /damaged: .* is a FIFO/);
      const { notice } = await h.controller.openConversation(convo.id);
      assert.ok(notice!.includes(`${STORE_MESSAGES.firstLineRecovered(convo.file)} ${STORE_MESSAGES.skipped(convo.file, [3])}`), notice);
      // The file as it was is kept beside the repaired copy, and the panel says where; the list then shows it whole.
      const kept = path.join(
        h.controller.store.dir,
        readdirSync(h.controller.store.dir).find((n) => n.startsWith(`${convo.id}.jsonl.damaged-`))!,
      );
      assert.equal(readFileSync(kept, 'utf8'), original);
      assert.ok(notice!.includes(`The damaged file is kept as it was in ${kept}; the conversation goes on in a repaired copy`), notice);
      assert.equal(h.controller.listConversations().find((c) => c.id === convo.id)!.title, 'first');
      await assert.rejects(h.controller.openConversation('c_fifo'), /is a FIFO \(named pipe\), not a conversation/);
    });

    it('a turn that cannot be saved is said in the panel (an error event: where and why)', async () => {
      h = harness();
      await h.controller.runCode('a = 1', 'first');
      const convo = h.controller.currentConversation!;
      const errors: string[] = [];
      h.controller.onEvent((e) => e.type === 'error' && errors.push(`${e.code}: ${e.message}`));
      // The file is replaced by a folder: every write fails (as on a full disk), and the turn still runs.
      rmSync(convo.file);
      mkdirSync(convo.file);
      const item = await h.controller.runCode('b = 2', 'second');
      assert.equal(item.status, 'completed');
      assert.equal(errors.length, 1, errors.join('\n'));
      assert.match(errors[0], /^store_failed: This turn was not saved: writing .* failed \(.* is a folder, not a conversation/);
    });

    it('deleting the open conversation leaves it; deleting another keeps the open one; clearing history leaves everything', async () => {
      h = harness();
      await h.controller.runCode('a = 1', 'first');
      const first = h.controller.currentConversation!.id;
      h.controller.newConversation();
      await h.controller.runCode('b = 1', 'second');
      const second = h.controller.currentConversation!.id;
      h.controller.deleteConversation(first);
      assert.equal(h.controller.currentConversation?.id, second);
      h.controller.deleteConversation(second);
      assert.equal(h.controller.currentConversation, undefined);
      assert.deepEqual(h.controller.listConversations(), []);
      await h.controller.runCode('c = 1', 'third');
      h.controller.clearHistory();
      assert.equal(h.controller.currentConversation, undefined);
      assert.deepEqual(h.controller.listConversations(), []);
    });

    it('a session that ends is said in the open conversation; the variables view follows the latest run', async () => {
      h = harness();
      const views: Array<string | undefined> = [];
      h.controller.onVariables((v) => views.push(v.label));
      await h.controller.runCode('a = 1', 'first');
      const id = h.controller.currentConversation!.id;
      const v = await h.controller.refreshVariables();
      assert.deepEqual([v.sessionId, v.label, v.summary], [id, 'This conversation', { variables: [], total: 0 }]);
      h.runtimes.last!.config.local!.onSessionEvent!({
        type: 'codeact.session',
        session_id: id,
        state: 'ended',
        reason: 'idle',
        message: 'ended after idling',
      });
      h.runtimes.last!.config.local!.onSessionEvent!({ type: 'codeact.session', session_id: 'other', state: 'ended', message: 'not ours' });
      const ended = h.controller.currentConversation!.events.filter((e) => e.type === 'codeact.session');
      assert.equal(ended.length, 1);
      assert.ok(views.includes('This conversation'));
    });
  });

  describe('Run with Tools documents', () => {
    it('a document runs in its own session, listed for Restart Session, and restarts alone', async () => {
      h = harness();
      await h.controller.runCode('a = 1', 'chat run');
      const convo = h.controller.currentConversation!;
      await h.controller.runCode('b = 1', 'cell', 'run_with_tools', { document: { uri: 'file:///w/a.py', name: 'a.py' } });
      const rt = h.runtimes.last!;
      assert.equal(rt.executed[1].sessionId, 'doc:file:///w/a.py');
      assert.equal(h.controller.currentConversation!.meta.title, 'a.py', "the run went to the document's own conversation");
      assert.equal((await h.controller.refreshVariables()).label, 'a.py', "the variables view shows the latest run's session");
      // The chat's session lives on, offered beside the document's, whichever conversation is open.
      assert.deepEqual(h.controller.liveSessions(), [
        { id: convo.id, label: `Chat: ${convo.meta.title}` },
        { id: 'doc:file:///w/a.py', label: 'a.py' },
      ]);
      assert.equal(await h.controller.restartSession('doc:file:///w/a.py'), true);
      assert.deepEqual(rt.restarted, ['doc:file:///w/a.py']);
      assert.deepEqual(
        h.controller.liveSessions().map((s) => s.id),
        [convo.id],
      );
      await h.controller.openConversation(convo.id);
      assert.equal(await h.controller.restartSession(), true, "the open conversation's by default");
      assert.deepEqual(h.controller.liveSessions(), []);
    });

    it('the runtime is reused across runs, and rebuilt when its settings change, the conversation kept', async () => {
      h = harness();
      await h.controller.runCode('a = 1', 'one');
      const convo = h.controller.currentConversation!.id;
      h.apis.values = { model: 'other-model' };
      await h.controller.runCode('a = 2', 'two');
      assert.equal(h.runtimes.built.length, 1);
      h.apis.values = { 'python.path': '/opt/python3' };
      await h.controller.runCode('a = 3', 'three');
      assert.equal(h.runtimes.built.length, 2);
      assert.equal(h.runtimes.built[0].disposed, 1);
      assert.equal(h.runtimes.last!.config.local?.python, '/opt/python3');
      assert.equal(h.controller.currentConversation!.id, convo);
      await h.controller.shutdown();
      assert.equal(h.runtimes.last!.disposed, 1, 'shutdown disposes the runtime');
    });
  });

  describe('state for the panel', () => {
    it('hostState reports providers, tools, trust, the conversation and the version; the model defaults per provider', async () => {
      h = harness({ provider: 'openai', tools: [lmToolDecl('search', 'ask')] });
      h.lm.registered = [{ name: 'vendor_search', description: 'Searches.' }];
      h.secrets.keys.openai = 'sk-test';
      const s = await h.controller.hostState();
      assert.equal(s.version, '9.9.9');
      assert.equal(s.provider, 'openai');
      assert.equal(s.model, h.controller.settings.model);
      assert.ok(s.model.length > 0, 'a default model');
      assert.equal(s.providers.find((p) => p.id === 'openai')?.hasKey, true);
      assert.equal(s.providers.find((p) => p.id === 'anthropic')?.hasKey, false);
      assert.deepEqual(s.tools, [{ name: 'search', description: 'the search tool', approval: 'ask', source: 'lmTool' }]);
      assert.deepEqual([s.trusted, s.busy, s.mode, s.runtime, s.conversationId], [true, false, 'toolCode', 'local', undefined]);
    });

    it("hostState carries the pixel cap (codeact.outputs.maxImageMegapixels, in pixels) for the panel's own check", async () => {
      h = harness({});
      assert.equal((await h.controller.hostState()).maxImagePixels, 40_000_000);
      await h.controller.shutdown();
      h.cleanup();
      h = harness({ 'outputs.maxImageMegapixels': 2.5 });
      assert.equal((await h.controller.hostState()).maxImagePixels, 2_500_000);
    });

    it('invalid tool declarations are logged and shown once, with Open Settings', async () => {
      h = harness({ tools: [{ name: 'bad' }, lmToolDecl('missing')] });
      h.apis.warningAnswer = 'Open Settings';
      const set = h.controller.toolSet();
      assert.equal(set.errors.length, 2);
      h.controller.toolSet();
      assert.equal(h.apis.warnings.length, 1, 'the same errors are shown once');
      assert.match(
        h.apis.warnings[0].message,
        /^CodeAct: 2 tools in codeact\.tools are broken and unavailable\. codeact\.tools\[0\] \(bad\): The declaration has no source\. Fix: give exactly one of "command"/,
      );
      // The panel's state carries them, with their messages ("0 tools ready, 2 broken").
      const state = await h.controller.hostState();
      assert.deepEqual(state.tools, []);
      assert.deepEqual(
        state.brokenTools?.map((b) => [b.index, b.name]),
        [
          [0, 'bad'],
          [1, 'missing'],
        ],
      );
      assert.match(state.brokenTools![0].message, /no source/);
      assert.deepEqual(state.brokenTools![0].problems, [
        { reason: 'The declaration has no source', fix: 'give exactly one of "command", "http", "mcp", "lmTool"' },
      ]);
      assert.deepEqual(h.apis.warnings[0].items, ['Open Settings', 'Show Log']);
      await tick();
      assert.deepEqual(h.apis.ranCommands, ['workbench.action.openWorkspaceSettingsFile']);
      assert.ok(
        h.log.lines.some((l) => l.startsWith('warn codeact.tools[1] (missing): No language-model tool named "vendor_missing"')),
        h.log.lines.join('\n'),
      );
    });

    it('ignored settings are logged once', () => {
      h = harness({ timeoutSeconds: 'soon' });
      void h.controller.settings;
      void h.controller.settings;
      assert.equal(h.log.lines.filter((l) => l.startsWith('warn codeact.timeoutSeconds')).length, 1);
    });
  });
});
