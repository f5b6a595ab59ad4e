import assert from 'node:assert/strict';
import { canCoalesce, coalesceEvents, createEventBatcher, type FrameScheduler } from '../../src/common/eventBatcher';
import { HOST_COMMANDS, type EventsMessage } from '../../src/common/protocol';
import { isHostMessage, parseWebviewMessage } from '../../src/common/protocolCheck';
import { buildTranscript, type TranscriptEvent } from '../../src/common/transcript';
import { buildWebviewHtml, contentSecurityPolicy, createNonce, jsonForScript } from '../../src/vscode/webviewHtml';
import { demoTurn, ev, hostState } from './support/fixtures';

/** A scheduler the test drives: `frame()` runs what was scheduled, like one animation frame. */
function manualFrames() {
  let queued: (() => void)[] = [];
  let scheduled = 0;
  const schedule: FrameScheduler = (flush) => {
    scheduled++;
    queued.push(flush);
    return () => {
      queued = queued.filter((f) => f !== flush);
    };
  };
  return {
    schedule,
    get scheduled() {
      return scheduled;
    },
    get queued() {
      return queued.length;
    },
    frame() {
      const q = queued;
      queued = [];
      for (const f of q) f();
    },
  };
}

describe('webview protocol: messages from the page', () => {
  it('accepts each well-formed message and drops extra fields', () => {
    assert.deepEqual(parseWebviewMessage({ type: 'ready', protocol: 1, seq: 3, conversationId: 'c', extra: 1 }), {
      type: 'ready',
      protocol: 1,
      seq: 3,
      conversationId: 'c',
    });
    assert.deepEqual(parseWebviewMessage({ type: 'send', text: 'hello' }), { type: 'send', text: 'hello' });
    assert.deepEqual(parseWebviewMessage({ type: 'stop' }), { type: 'stop' });
    assert.deepEqual(parseWebviewMessage({ type: 'selectModel', provider: 'openai', model: 'gpt-5' }), {
      type: 'selectModel',
      provider: 'openai',
      model: 'gpt-5',
    });
    assert.deepEqual(parseWebviewMessage({ type: 'approval', approvalId: 'a1', decision: 'allow_session' }), {
      type: 'approval',
      approvalId: 'a1',
      decision: 'allow_session',
    });
    assert.deepEqual(parseWebviewMessage({ type: 'elicitation', elicitationId: 'e1', action: 'decline', content: { a: 1 } }), {
      type: 'elicitation',
      elicitationId: 'e1',
      action: 'decline',
    });
    assert.deepEqual(
      parseWebviewMessage({
        type: 'elicitation',
        elicitationId: 'e1',
        action: 'accept',
        content: { name: 'Ada', age: 3, ok: true, tags: ['a'], __proto__x: 'y' },
      }),
      {
        type: 'elicitation',
        elicitationId: 'e1',
        action: 'accept',
        content: { name: 'Ada', age: 3, ok: true, tags: ['a'], __proto__x: 'y' },
      },
    );
    const proto = parseWebviewMessage(JSON.parse('{"type":"elicitation","elicitationId":"e","action":"accept","content":{"__proto__":"x","a":"b"}}')) as {
      content: object;
    };
    assert.equal(Object.getPrototypeOf(proto.content), Object.prototype, 'a "__proto__" key is dropped, not assigned');
    assert.deepEqual(Object.keys(proto.content), ['a']);
    assert.deepEqual(parseWebviewMessage({ type: 'approval', approvalId: 'a1', decision: 'allow_once', code: 'print(2)' }), {
      type: 'approval',
      approvalId: 'a1',
      decision: 'allow_once',
      code: 'print(2)',
    });
    assert.deepEqual(parseWebviewMessage({ type: 'runCode', code: 'x=1', itemId: 'ci_1' }), { type: 'runCode', code: 'x=1', itemId: 'ci_1' });
    assert.deepEqual(parseWebviewMessage({ type: 'openFullOutput', itemId: 'ci_1', stream: 'stderr' }), {
      type: 'openFullOutput',
      itemId: 'ci_1',
      stream: 'stderr',
    });
    assert.deepEqual(parseWebviewMessage({ type: 'history.open', conversationId: 'c9' }), { type: 'history.open', conversationId: 'c9' });
    assert.deepEqual(parseWebviewMessage({ type: 'exportNotebook' }), { type: 'exportNotebook' });
    assert.deepEqual(parseWebviewMessage({ type: 'openLink', href: 'https://example.com/x' }), { type: 'openLink', href: 'https://example.com/x' });
    for (const command of HOST_COMMANDS) assert.deepEqual(parseWebviewMessage({ type: 'command', command }), { type: 'command', command });
  });

  it('rejects malformed, unknown and dangerous messages', () => {
    const bad: unknown[] = [
      null,
      'send',
      [],
      { type: 'nope' },
      { type: 'send', text: '   ' },
      { type: 'send', text: 42 },
      { type: 'ready', seq: -1 },
      { type: 'ready', seq: 1.5 },
      { type: 'approval', approvalId: 'a', decision: 'allow_forever' },
      { type: 'approval', approvalId: '', decision: 'deny' },
      { type: 'command', command: 'workbench.action.terminal.sendSequence' },
      { type: 'openLink', href: 'command:workbench.action.reloadWindow' },
      { type: 'openLink', href: 'file:///etc/passwd' },
      { type: 'openFullOutput', itemId: 'x', stream: 'stdin' },
      { type: 'runCode', code: '' },
      { type: 'selectModel', provider: 'openai' },
      { type: 'send', text: 'x'.repeat(300_000) },
      { type: 'elicitation', elicitationId: 'e', action: 'maybe' },
      { type: 'elicitation', elicitationId: 'e', action: 'accept' },
      { type: 'elicitation', elicitationId: 'e', action: 'accept', content: { nested: { a: 1 } } },
      { type: 'elicitation', elicitationId: 'e', action: 'accept', content: { n: Number.NaN } },
      { type: 'elicitation', elicitationId: 'e', action: 'accept', content: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`f${i}`, 'x'])) },
    ];
    for (const m of bad) assert.equal(parseWebviewMessage(m), undefined, JSON.stringify(m)?.slice(0, 80));
  });

  it('recognises host messages by shape', () => {
    assert.ok(isHostMessage({ type: 'init', protocol: 1, state: hostState() }));
    assert.ok(isHostMessage({ type: 'events', seq: 1, events: [] }));
    assert.ok(isHostMessage({ type: 'reset', seq: 0, events: [] }));
    assert.ok(isHostMessage({ type: 'focusInput' }));
    assert.ok(!isHostMessage({ type: 'events', seq: 'one', events: [] }));
    assert.ok(!isHostMessage({ type: 'events', seq: 1 }));
    assert.ok(!isHostMessage({ type: 'ready', seq: 1 }));
    assert.ok(!isHostMessage(undefined));
  });
});

describe('event batcher (host side)', () => {
  it('posts at most one batch per frame and coalesces adjacent deltas of the same item', () => {
    const posted: EventsMessage[] = [];
    const frames = manualFrames();
    const b = createEventBatcher((m) => posted.push(m), frames.schedule, { conversationId: 'c1' });
    b.push(ev.text('m', 'Hel'));
    b.push(ev.text('m', 'lo'));
    b.push(ev.code('x', 'print('));
    b.push(ev.code('x', '1)'));
    b.push(ev.out('x', 'a\n'));
    b.push(ev.out('x', 'b\n'));
    b.push(ev.out('x', 'e\n', 'stderr'));
    b.push(ev.out('x', 'c\n'));
    assert.equal(frames.scheduled, 1, 'one frame requested for many events');
    assert.equal(posted.length, 0, 'nothing posted before the frame');
    frames.frame();
    assert.equal(posted.length, 1);
    assert.equal(posted[0].seq, 1);
    assert.equal(posted[0].conversationId, 'c1');
    assert.deepEqual(posted[0].events, [
      ev.text('m', 'Hello'),
      ev.code('x', 'print(1)'),
      ev.out('x', 'a\nb\n'),
      ev.out('x', 'e\n', 'stderr'),
      ev.out('x', 'c\n'),
    ]);
    frames.frame();
    assert.equal(posted.length, 1, 'no empty batches');
    b.push(ev.text('m', '!'));
    frames.frame();
    assert.equal(posted[1].seq, 2);
  });

  it('keeps order across items and never merges different kinds, streams or thinking', () => {
    const input: TranscriptEvent[] = [
      ev.text('a', '1'),
      ev.text('b', '2'),
      ev.text('a', '3'),
      { type: 'response.output_text.delta', item_id: 'a', delta: 't', thinking: true },
      ev.toolStart('x', 'c1', 'n', {}),
      ev.out('x', 'o'),
      ev.out('x', 'p'),
    ];
    const out = coalesceEvents(input);
    assert.deepEqual(
      out.map((e) => e.type),
      [
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.delta',
        'codeact.tool_call.started',
        'codeact.output.delta',
      ],
    );
    assert.equal((out[5] as { delta: string }).delta, 'op');
    assert.ok(!canCoalesce(ev.out('x', 'a'), ev.out('x', 'b', 'stderr')));
    assert.ok(!canCoalesce(ev.code('x', 'a'), ev.code('y', 'b')));
    const args = (call_id: string): TranscriptEvent => ({ type: 'response.function_call_arguments.delta', item_id: 'f', call_id, delta: '{' });
    assert.ok(canCoalesce(args('c1'), args('c1')) && !canCoalesce(args('c1'), args('c2')), 'the arguments of one call only');
  });

  it('does not mutate the caller’s events', () => {
    const first = ev.text('m', 'a');
    const frames = manualFrames();
    const b = createEventBatcher(() => {}, frames.schedule);
    b.push(first);
    b.push(ev.text('m', 'b'));
    frames.frame();
    assert.deepEqual(first, ev.text('m', 'a'));
  });

  it('delivers a stream that reduces to the same transcript as the raw events', () => {
    const raw = demoTurn();
    const posted: EventsMessage[] = [];
    const frames = manualFrames();
    const b = createEventBatcher((m) => posted.push(m), frames.schedule);
    raw.forEach((e, i) => {
      b.push(e);
      if (i % 7 === 6) frames.frame();
    });
    frames.frame();
    const batched = posted.flatMap((m) => m.events);
    assert.ok(batched.length < raw.length, `${batched.length} events after coalescing, ${raw.length} before`);
    assert.deepEqual(
      posted.map((m) => m.seq),
      posted.map((_, i) => i + 1),
    );
    const a = buildTranscript(raw);
    const c = buildTranscript(batched);
    // Same view model apart from revision counters and the event count.
    const strip = (v: unknown): unknown => JSON.parse(JSON.stringify(v, (k, val) => (k === 'rev' || k === 'events' ? undefined : val)));
    assert.deepEqual(strip(c), strip(a));
  });

  it('flush() posts at once and cancels the pending frame', () => {
    const posted: EventsMessage[] = [];
    const frames = manualFrames();
    const b = createEventBatcher((m) => posted.push(m), frames.schedule);
    b.push(ev.turnEnd('t'));
    assert.equal(b.pending, 1);
    b.flush();
    assert.equal(posted.length, 1);
    assert.equal(frames.queued, 0);
    assert.equal(b.pending, 0);
  });

  it('never tells a page that an earlier extension host brought up to date that it is up to date (its seq is of another epoch)', () => {
    // A reload restarts the extension host: its new batcher starts at seq 0, and a page whose saved state
    // says "seq 0" (it was reset by the old host, and its later batches were not saved yet) must get a reset,
    // not an empty replay that leaves it a turn short.
    const fresh = createEventBatcher(() => {}, manualFrames().schedule, { conversationId: 'c', epoch: 'host-2' });
    assert.equal(fresh.replaySince(0, 'c', 'host-1'), undefined, "the old host's seq 0");
    assert.equal(fresh.replaySince(0, 'c'), undefined, 'a page that kept no epoch');
    assert.deepEqual(fresh.replaySince(0, 'c', 'host-2'), [], 'this host reset the page: up to date');
    assert.deepEqual(parseWebviewMessage({ type: 'ready', protocol: 1, seq: 0, conversationId: 'c', epoch: 'host-1' }), {
      type: 'ready',
      protocol: 1,
      seq: 0,
      conversationId: 'c',
      epoch: 'host-1',
    });
    assert.deepEqual(parseWebviewMessage({ type: 'resync', seq: 2, epoch: 'host-1' }), { type: 'resync', seq: 2, conversationId: undefined, epoch: 'host-1' });
    assert.equal(parseWebviewMessage({ type: 'ready', protocol: 1, seq: 0, epoch: 'x'.repeat(65) }), undefined, 'an epoch is a short token');
  });

  it('replays the batches a reloaded page missed, or asks for a reset when it cannot', () => {
    const posted: EventsMessage[] = [];
    const frames = manualFrames();
    const b = createEventBatcher((m) => posted.push(m), frames.schedule, { conversationId: 'c', retainBatches: 3 });
    for (let i = 0; i < 5; i++) {
      b.push(ev.text('m', String(i)));
      frames.frame();
    }
    assert.equal(b.seq, 5);
    assert.deepEqual(b.replaySince(5, 'c'), []);
    assert.deepEqual(
      b.replaySince(3, 'c')?.map((m) => m.seq),
      [4, 5],
    );
    assert.deepEqual(
      b.replaySince(2, 'c')?.map((m) => m.seq),
      [3, 4, 5],
    );
    assert.equal(b.replaySince(1, 'c'), undefined, 'batch 2 is no longer kept');
    assert.equal(b.replaySince(3, 'other'), undefined, 'another conversation');
    assert.equal(b.replaySince(9, 'c'), undefined, 'a page ahead of the host');
    b.reset('c2');
    assert.equal(b.seq, 0);
    assert.deepEqual(b.replaySince(0, 'c2'), []);
    b.push(ev.text('m', 'x'));
    frames.frame();
    assert.equal(posted[posted.length - 1].seq, 1);
    assert.equal(posted[posted.length - 1].conversationId, 'c2');
  });

  it('stops posting after dispose', () => {
    const posted: EventsMessage[] = [];
    const frames = manualFrames();
    const b = createEventBatcher((m) => posted.push(m), frames.schedule);
    b.push(ev.text('m', 'x'));
    b.dispose();
    frames.frame();
    b.push(ev.text('m', 'y'));
    frames.frame();
    assert.equal(posted.length, 0);
  });
});

describe('webview HTML', () => {
  it('has a strict CSP with the nonce, no remote resources and no inline script without the nonce', () => {
    const nonce = createNonce();
    const html = buildWebviewHtml({
      cspSource: 'https://abc.vscode-cdn.net',
      nonce,
      scriptUri: 'https://abc.vscode-cdn.net/ext/dist/webview.js',
      styleUri: 'https://abc.vscode-cdn.net/ext/dist/webview.css',
      initialState: hostState({ conversationTitle: '</script><script>alert(1)</script>' }),
    });
    const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)?.[1].replace(/&#39;|&apos;/g, "'") ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, new RegExp(`script-src 'nonce-${nonce.replace(/[-_]/g, '\\$&')}'`));
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
    assert.doesNotMatch(html, /<script(?![^>]*nonce=)/, 'every script carries the nonce');
    assert.doesNotMatch(html, /style="/);
    assert.doesNotMatch(html, /https?:\/\/(?!abc\.vscode-cdn\.net)/, 'no remote resources');
    assert.equal(html.match(/<\/script>/g)?.length, 2, 'embedded state cannot close its script element');
    assert.ok(html.includes('\\u003c/script\\u003e'));
    assert.deepEqual(contentSecurityPolicy('x', 'n'.repeat(16)).split('; ')[0], "default-src 'none'");
  });

  it('makes distinct nonces and refuses a weak one', () => {
    const a = createNonce();
    const b = createNonce();
    assert.notEqual(a, b);
    assert.match(a, /^[A-Za-z0-9_-]{32}$/);
    assert.throws(() => buildWebviewHtml({ cspSource: 'x', nonce: 'abc', scriptUri: 'a', styleUri: 'b' }), /nonce/);
    assert.equal(jsonForScript({ a: '\u2028<!--' }), '{"a":"\\u2028\\u003c!--"}');
  });
});
