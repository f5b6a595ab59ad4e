/** The text of an HTML error page, for messages: what a reader sees, on one line, bounded. */
import assert from 'node:assert/strict';
import { htmlToText, isHtml } from '../../src/common/htmlText';

describe('htmlToText', () => {
  it('keeps what a reader sees: no head, script, style, noscript or comments; entities decoded', () => {
    const page = `<!DOCTYPE HTML>
<html><head><title>JupyterHub</title><script>require.config({ baseUrl: '/hub/static/js' });</script>
<style>body { color: red }</style></head>
<body><!-- nav --><noscript>JupyterHub requires JavaScript.</noscript>
<div class="error"><h1>405 : Method Not Allowed</h1><p>Tom &amp; Jerry &lt;3 &#8212; &#x2713;&nbsp;done</p></div>
<script type="text/javascript">var x = "<p>not text</p>";</script></body></html>`;
    assert.equal(htmlToText(page), '405 : Method Not Allowed Tom & Jerry <3 — ✓ done');
  });

  it('a 502 page of a proxy', () => {
    assert.equal(
      htmlToText(
        '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>',
      ),
      '502 Bad Gateway nginx',
    );
  });

  it('is bounded: a long page is cut with an ellipsis; unterminated tags and scripts end the text', () => {
    const long = htmlToText(`<p>${'word '.repeat(10_000)}</p>`, 100);
    assert.equal(long.length, 100);
    assert.ok(long.endsWith('…'));
    assert.equal(htmlToText('before <script>never closed '.repeat(50_000)), 'before');
    assert.equal(htmlToText('text <a href="x'), 'text');
    assert.equal(htmlToText('<p>a</p><!-- unterminated'), 'a');
  });

  it('leaves unknown entities and out-of-range references as they are', () => {
    assert.equal(htmlToText('<b>&bogus; &#99999999;</b>'), '&bogus; &#99999999;');
  });

  it('recognises HTML by its content type or its start', () => {
    assert.ok(isHtml('anything', 'text/html; charset=UTF-8'));
    assert.ok(isHtml('\n  <!DOCTYPE html><html>', null));
    assert.ok(isHtml('<html lang="en">'));
    assert.ok(!isHtml('{"message": "<b>no</b>"}', 'application/json'));
  });
});
