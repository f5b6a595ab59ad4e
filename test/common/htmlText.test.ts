/**
 * HTML error pages as text (src/common/htmlText.ts): what a person reads of a proxy's or a hub's error page,
 * bounded, whatever the page holds.
 */
import assert from 'node:assert/strict';
import { htmlToText, looksLikeHtml } from '../../src/common/htmlText';

describe('common: htmlToText', () => {
  it("nginx's 502 page: its title and body text, once", () => {
    const page = '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n';
    assert.equal(htmlToText(page), '502 Bad Gateway nginx/1.25.3');
  });

  it('scripts, styles, comments and the head are not text; entities are decoded', () => {
    const page =
      '<!DOCTYPE html><html><head><meta charset="utf-8"><title>Error 405</title><style>body{color:red}</style>' +
      '<script>var x = "<p>not text</p>";</script></head><body><!-- a <b>comment</b> --><h1>405 : Method Not Allowed</h1>' +
      '<p>alice&#39;s server is not running &amp; cannot answer &lt;POST&gt;&nbsp;&#x2014; start it.</p><script src="x.js"></script></body></html>';
    assert.equal(htmlToText(page), "Error 405: 405 : Method Not Allowed alice's server is not running & cannot answer <POST> — start it.");
  });

  it('a fragment, an unclosed tag, an unclosed script: no markup comes through', () => {
    assert.equal(htmlToText('<p>Upstream <b>timed out</b>'), 'Upstream timed out');
    assert.equal(htmlToText('<p>cut here <a href="'), 'cut here');
    assert.equal(htmlToText('<p>before</p><script>while(1){}'), 'before');
  });

  it('is bounded: at most `max` characters, cut with an ellipsis', () => {
    const page = `<html><body>${'<p>Cloudflare says: the origin is down. </p>'.repeat(2000)}</body></html>`;
    const text = htmlToText(page, 120);
    assert.ok(text.length <= 120, String(text.length));
    assert.ok(text.endsWith('…'));
    assert.ok(text.startsWith('Cloudflare says: the origin is down.'));
  });

  it('a hostile page (a million unclosed tags and scripts) still returns, with no markup', () => {
    const hostile = '<script'.repeat(150_000) + '<a '.repeat(200_000) + '&#99999999;'.repeat(10_000);
    const text = htmlToText(`<html>${hostile}`);
    assert.ok(text.length <= 300);
    assert.doesNotMatch(text, /<script/);
  });

  it('looksLikeHtml: pages and fragments, not text that happens to hold a "<"', () => {
    for (const s of ['<html><body>x</body></html>', '  <!DOCTYPE html><html>', '<h1>502</h1>', '<center>nginx</center>', '<!-- x -->']) assert.ok(looksLikeHtml(s), s);
    for (const s of ['Invalid value for tools: expected <object>', 'a < b', '{"error": "<html>"}', '']) assert.ok(!looksLikeHtml(s), s);
  });
});
