import assert from 'node:assert/strict';
import { parseCassette, parseSse } from '../support/wire/cassette';

describe('wire: cassette reader', () => {
  it('reads a block literal body (|+) with its trailing blank line, status and headers', () => {
    const yaml = [
      'interactions:',
      '- request:',
      '    body: null',
      '    method: POST',
      '    uri: https://api.anthropic.com/v1/messages?beta=true',
      '  response:',
      '    body:',
      '      string: |+',
      '        event: message_start',
      '        data: {"type":"message_start"}',
      '',
      '        event: ping',
      '        data: {"type": "ping"}',
      '',
      '    headers:',
      '      content-type:',
      '      - text/event-stream; charset=utf-8',
      '      vary:',
      '      - Origin',
      '      - X-Origin',
      '    status:',
      '      code: 200',
      '      message: OK',
      'version: 1',
      '',
    ].join('\n');
    const [i] = parseCassette(yaml);
    assert.equal(i.request.method, 'POST');
    assert.equal(i.request.uri, 'https://api.anthropic.com/v1/messages?beta=true');
    assert.equal(i.response.body, 'event: message_start\ndata: {"type":"message_start"}\n\nevent: ping\ndata: {"type": "ping"}\n\n');
    assert.equal(i.response.status, 200);
    assert.deepEqual(i.response.headers, { 'content-type': ['text/event-stream; charset=utf-8'], vary: ['Origin', 'X-Origin'] });
  });

  it('reads a folded double-quoted body with escapes (\\r\\n, \\", \\\\, \\u, escaped line breaks)', () => {
    const yaml = [
      'interactions:',
      '- request:',
      '    method: POST',
      '  response:',
      '    body:',
      '      string: "data: {\\"candidates\\": [{\\"content\\": {\\"parts\\": [{\\"text\\":',
      '        \\"caf\\u00E9 \\\\\\\\ x\\"}]}}]}\\r\\n\\r\\ndata: {\\"a\\": 1,\\"b\\"\\',
      '        : 2}\\r\\n\\r\\n"',
      '    status:',
      '      code: 429',
    ].join('\n');
    const [i] = parseCassette(yaml);
    assert.equal(i.response.body, 'data: {"candidates": [{"content": {"parts": [{"text": "café \\\\ x"}]}}]}\r\n\r\ndata: {"a": 1,"b": 2}\r\n\r\n');
    assert.equal(i.response.status, 429);
    assert.deepEqual(
      parseSse(i.response.body).map((e) => JSON.parse(e.data)),
      [{ candidates: [{ content: { parts: [{ text: 'café \\ x' }] } }] }, { a: 1, b: 2 }],
    );
  });

  it('reads several interactions', () => {
    const one = (n: number): string[] => [
      '- request:',
      '    method: POST',
      '  response:',
      '    body:',
      `      string: 'body ''${n}'''`,
      '    status:',
      `      code: ${200 + n}`,
    ];
    const got = parseCassette(['interactions:', ...one(0), ...one(1), 'version: 1'].join('\n'));
    assert.deepEqual(
      got.map((i) => [i.response.body, i.response.status]),
      [
        ["body '0'", 200],
        ["body '1'", 201],
      ],
    );
  });
});
