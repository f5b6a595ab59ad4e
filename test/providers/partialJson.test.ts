import assert from 'node:assert/strict';
import { JsonStringFieldExtractor } from '../../src/core/providers/shared/partialJson';

/** Feeds `fragments` and returns what came out, fragment by fragment. */
function feed(fields: string[], fragments: string[]): { outs: string[]; ex: JsonStringFieldExtractor } {
  const ex = new JsonStringFieldExtractor(fields);
  return { outs: fragments.map((f) => ex.push(f)), ex };
}

function isWellFormed(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const n = s.charCodeAt(i + 1);
      if (!(n >= 0xdc00 && n <= 0xdfff)) return false;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      return false;
    }
  }
  return true;
}

describe('providers: incremental JSON string field extraction', () => {
  it('unescapes \\n \\" \\\\ \\t \\/ and \\u00e9 split anywhere across fragments', () => {
    const code = 'print("h\u00e9llo\\n")\n\tx = \'/\'\n';
    const json = JSON.stringify({ code }).replace('\u00e9', '\\u00e9').replace('/', '\\/');
    // Every split position, one and two at a time.
    for (let i = 0; i <= json.length; i++) {
      for (let j = i; j <= json.length; j += 3) {
        const { outs, ex } = feed(['code'], [json.slice(0, i), json.slice(i, j), json.slice(j)]);
        assert.equal(outs.join(''), code, `split at ${i},${j}`);
        assert.equal(ex.value, code);
        assert.ok(ex.complete);
      }
    }
  });

  it('emits text as soon as it is decoded, one character at a time', () => {
    const json = '{"command": "echo \\"hi\\"\\nls"}';
    const { outs } = feed(['command'], [...json]);
    assert.equal(outs.join(''), 'echo "hi"\nls');
    // The characters of the value come out while the value streams, not at the end.
    assert.equal(outs.filter((o) => o !== '').length, 'echo "hi"\nls'.length);
  });

  it('never splits a surrogate pair, even when its \\u escapes are split', () => {
    const json = '{"code": "x = \\"\\ud83d\\ude00\\" # \ud83d\ude00"}';
    for (let i = 0; i <= json.length; i++) {
      const { outs } = feed(['code'], [json.slice(0, i), json.slice(i)]);
      assert.equal(outs.join(''), 'x = "\ud83d\ude00" # \ud83d\ude00');
      for (const o of outs) assert.ok(isWellFormed(o), `fragment ${JSON.stringify(o)} at split ${i}`);
    }
  });

  it('takes only the top-level field, whatever comes before it', () => {
    const json = JSON.stringify({ restart: false, nested: { code: 'no' }, list: ['code', { code: 'no' }], code: 'yes = 1' });
    const { outs } = feed(['code'], json.match(/.{1,3}/g) ?? []);
    assert.equal(outs.join(''), 'yes = 1');
  });

  it('matches any of several names (code or command) and reports which', () => {
    const { ex } = feed(['code', 'command'], ['{"command":"ls -la"}']);
    assert.equal(ex.field, 'command');
    assert.equal(ex.value, 'ls -la');
  });

  it('gives nothing for a missing field or a non-string value', () => {
    assert.equal(feed(['code'], ['{"path": "/tmp/x", "code": null}']).ex.value, '');
    assert.equal(feed(['code'], ['']).ex.value, '');
  });
});
