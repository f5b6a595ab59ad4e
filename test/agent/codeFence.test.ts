/**
 * The streaming ```python recogniser of the text protocol, and the text form of the history.
 */
import * as assert from 'node:assert/strict';
import { quoteBlock } from '../../src/common/quoteData';
import { CodeFenceScanner, HOLD_LIMIT, type FenceSegment } from '../../src/core/agent/codeFence';
import { OBSERVATION, observationText, toTextHistory } from '../../src/core/agent/textHistory';
import { executionSummary } from '../../src/core/agent/executionResult';
import type { ConversationItem } from '../../src/core/providers/shared/types';

/** Feeds `text` in pieces of `size` characters; returns the segments, merged by kind, and the scanner. */
function scan(text: string, size = 1): { prose: string; code: string; kinds: string[]; s: CodeFenceScanner } {
  const s = new CodeFenceScanner();
  const out: FenceSegment[] = [];
  for (let i = 0; i < text.length; i += size) s.push(text.slice(i, i + size), out);
  s.finish(out);
  const kinds: string[] = [];
  for (const seg of out) if (kinds[kinds.length - 1] !== seg.kind) kinds.push(seg.kind);
  return {
    prose: out
      .filter((x) => x.kind === 'prose')
      .map((x) => (x as { text: string }).text)
      .join(''),
    code: out
      .filter((x) => x.kind === 'code')
      .map((x) => (x as { text: string }).text)
      .join(''),
    kinds,
    s,
  };
}

describe('text protocol: the code-block recogniser', () => {
  const message =
    'I will look the lamp up.\n\n```python\nr = await call_tool("check_inventory", sku="LMP-LED-010")\n\nprint(r)\n```\nObservation: 85 (made up)\n';

  for (const size of [1, 2, 3, 7, 1000]) {
    it(`splits prose and code the same way whatever the delta size (${size})`, () => {
      const r = scan(message, size);
      assert.equal(r.prose, 'I will look the lamp up.');
      assert.equal(r.code, 'r = await call_tool("check_inventory", sku="LMP-LED-010")\n\nprint(r)');
      assert.deepEqual(r.kinds, ['prose', 'open', 'code', 'close']);
      assert.equal(r.s.closed, true);
      assert.equal(r.s.code, r.code, 'code deltas add up to the code');
    });
  }

  it('streams code lines as they arrive, before the block closes', () => {
    const s = new CodeFenceScanner();
    const out: FenceSegment[] = [];
    s.push('```python\nx = 1\ny = ', out);
    assert.deepEqual(out, [{ kind: 'open' }, { kind: 'code', text: 'x = 1\ny = ' }]);
    // Ordinary text streams at once; only a line that may become a fence is held.
    const out2: FenceSegment[] = [];
    s.push('2\n``', out2);
    assert.deepEqual(out2, [{ kind: 'code', text: '2' }]);
    s.push('`\n', out2);
    assert.deepEqual(out2.slice(1), [{ kind: 'close' }]);
  });

  it('accepts py, python3, an info string, indentation up to 3 spaces, CRLF and longer fences', () => {
    assert.equal(scan('```py\na=1\n```').code, 'a=1');
    assert.equal(scan('```Python3 title="x"\r\na=1\r\n```\r\n').code, 'a=1\r');
    assert.equal(scan('   ```python\na=1\n   ```').code, 'a=1');
    const nested = scan('````python\ns = """\n```\n"""\n````\nafter');
    assert.equal(nested.code, 's = """\n```\n"""');
    assert.equal(nested.prose, '');
  });

  it('leaves other fences, inline code and indented fences as prose: a final answer keeps its Markdown', () => {
    const answer = 'Totals:\n```text\n3 lamps\n```\nUse `call_tool` next time.\n    ```python\n    not a block\n    ```';
    const r = scan(answer, 3);
    assert.equal(r.s.opened, false);
    assert.equal(r.prose, answer);
    assert.equal(r.code, '');
  });

  it('runs only the first block and counts the others; text after the block is not shown', () => {
    const r = scan('a\n```python\n1\n```\nthen\n```python\n2\n```\n```python\n3\n```');
    assert.equal(r.code, '1');
    assert.equal(r.prose, 'a');
    assert.equal(r.s.extraBlocks, 2);
  });

  it('an unclosed block ends with the message; a closing fence without a final newline closes it', () => {
    const open = scan('```python\nprint(1)\nprint(2)');
    assert.equal(open.code, 'print(1)\nprint(2)');
    assert.equal(open.s.closed, false);
    const closed = scan('```python\nprint(1)\n```');
    assert.equal(closed.s.closed, true);
    assert.equal(closed.code, 'print(1)');
  });

  it('is bounded: a long line that starts like a fence is released after HOLD_LIMIT characters', () => {
    const s = new CodeFenceScanner();
    const out: FenceSegment[] = [];
    s.push('`' + 'x'.repeat(HOLD_LIMIT + 5), out);
    assert.equal(out.length, 1);
    assert.equal((out[0] as { text: string }).text.length, HOLD_LIMIT + 6);
    // Linear: a megabyte of backticks and spaces in small deltas goes through quickly and in one piece.
    const big = scan('`'.repeat(1_000_000), 4096);
    assert.equal(big.prose.length, 1_000_000);
  });
});

describe('text protocol: the history in text form', () => {
  const history: ConversationItem[] = [
    { type: 'message', id: 'u1', role: 'user', text: 'How many lamps?' },
    {
      type: 'message',
      id: 't1',
      role: 'assistant',
      text: 'hmm',
      thinking: true,
      replay: { provider: 'anthropic', turn: 't', parts: [{ index: 0, data: { type: 'thinking' } }] },
    },
    {
      type: 'message',
      id: 'm1',
      role: 'assistant',
      text: 'Looking it up.',
      replay: { provider: 'anthropic', turn: 't', parts: [{ index: 1, data: { type: 'text', text: 'Looking it up.\n```python…' } }] },
    },
    { type: 'function_call', id: 'fc1', call_id: 'c1', name: 'execute_tool_code', arguments: JSON.stringify({ code: 'print(85)\nreturn 85' }) },
    { type: 'function_call_output', call_id: 'c1', name: 'execute_tool_code', output: JSON.stringify({ status: 'completed', value: 85, stdout: '85\n' }) },
    { type: 'message', id: 'm2', role: 'assistant', text: '85 lamps.' },
    { type: 'message', id: 'u2', role: 'user', text: 'And desks?' },
  ];

  it('turns calls into ```python blocks and outputs into observations, merging roles and dropping thinking and replay data', () => {
    const text = toTextHistory(history);
    assert.deepEqual(
      text.map((m) => (m as { role: string }).role),
      ['user', 'assistant', 'user', 'assistant', 'user'],
    );
    assert.ok(text.every((m) => !('replay' in m)));
    assert.equal((text[1] as { text: string }).text, 'Looking it up.\n\n```python\nprint(85)\nreturn 85\n```');
    assert.equal((text[2] as { text: string }).text, [OBSERVATION.ran('completed'), OBSERVATION.printed, '│ 85', OBSERVATION.returned('85')].join('\n'));
    assert.equal((text[3] as { text: string }).text, '85 lamps.');
  });

  it('an observation of a failure carries the error, the traceback and the output before it, cut once (by the summary)', () => {
    const item = {
      type: 'code_interpreter_call' as const,
      id: 'e',
      status: 'failed' as const,
      code: '',
      runtime: 'local' as const,
      exit_code: 1,
      value: null,
      outputs: [{ type: 'logs' as const, logs: 'x'.repeat(50_000) }],
      error: {
        type: 'RuntimeError',
        message: 'Invalid arguments for "check_inventory": /sku must match pattern',
        traceback: 'Traceback (most recent call last):\n  line 1\nRuntimeError: …',
      },
    };
    const summary = executionSummary(item, { execution: 1 });
    const failed = observationText(summary);
    assert.ok(failed.startsWith(`${OBSERVATION.failed('RuntimeError')}\n│ Invalid arguments for "check_inventory"`), failed);
    assert.match(failed, /Traceback:\n│ Traceback \(most recent call last\)/);
    assert.ok(failed.endsWith(`\n${OBSERVATION.fixIt}`), failed);
    // The observation's printed output is the summary's, exactly: no second cut, one count.
    const stdout = (JSON.parse(summary) as { stdout: string }).stdout;
    assert.ok(failed.includes(`${OBSERVATION.printed}\n${quoteBlock(stdout)}\n`));
    assert.equal(failed.match(/left out here/g)?.length, 1);
    assert.ok(failed.length <= 20_000 + 500, `${failed.length} characters`);
    assert.match(
      observationText(JSON.stringify({ error: 'The arguments of execute_tool_code were not a valid JSON object' })),
      /failed with Error:\n│ The arguments/,
    );
  });
});
