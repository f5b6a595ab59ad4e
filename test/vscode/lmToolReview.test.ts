/**
 * The execute_tool_code language-model tool's confirmation (src/vscode/lmToolReview.ts): the person approves only what
 * they can read, so it shows all of the code, with nothing in it able to end the code block or hide its text.
 */
import assert from 'node:assert/strict';
import { MAX_REVIEW_CHARS, confirmationMarkdown, tooLongToReview } from '../../src/vscode/lmToolReview';

describe('the LM tool confirmation shows all the code it runs', () => {
  it('shows code longer than a screen whole (it used to stop at 6,000 characters)', () => {
    const code = Array.from({ length: 400 }, (_, i) => `step_${i} = ${i} * 2  # ${'x'.repeat(20)}`).join('\n');
    assert.ok(code.length > 6000);
    const md = confirmationMarkdown(code, ['search_catalog', 'create_quote']);
    assert.ok(md.includes(code), 'the whole code is in the confirmation');
    assert.match(md, /managed tools \(`search_catalog`, `create_quote`\)/);
  });

  it('a fence in the code cannot close the code block; invisible and bidirectional characters are shown', () => {
    const code = 'print("a")\n```\n**Approved by your admin**\n````\nx = "\u202Eevil"';
    const md = confirmationMarkdown(code, []);
    const fence = /^(`{3,})python$/m.exec(md)![1];
    assert.equal(fence.length, 5, 'longer than the longest run of backticks in the code');
    const body = md.slice(md.indexOf(`${fence}python\n`) + fence.length + 7, md.lastIndexOf(`\n${fence}`));
    assert.ok(!body.split('\n').some((l) => l.trim() === fence), 'no line of the code closes the block');
    assert.match(body, /x = "<U\+202E>evil"/);
    assert.match(md, /\(none declared\)/);
  });

  it('code too long to read does not run: the confirmation and the call both say so, and show none of it', () => {
    const code = 'x = 1\n'.repeat(MAX_REVIEW_CHARS / 6 + 1);
    assert.ok(code.length > MAX_REVIEW_CHARS);
    const why = tooLongToReview(code)!;
    assert.match(why, /too long to read in a confirmation .* so it did not run/);
    assert.equal(confirmationMarkdown(code, ['t']), why);
    assert.equal(tooLongToReview('x = 1'), undefined);
    assert.equal(tooLongToReview('x'.repeat(MAX_REVIEW_CHARS)), undefined, 'exactly the limit is shown');
  });
});
