import * as assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pyLint } from '../../scripts/pyLint';

const guest = path.resolve(__dirname, '../../src/core/runtime/guest');

describe('python lint of the guest (flake8)', function () {
  this.timeout(60_000);
  const bad = (text: string) => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'codeact-pylint-')), 'bad_module.py');
    writeFileSync(file, text);
    return pyLint([file]);
  };

  it('passes the guest as it is', () => {
    assert.deepEqual(
      pyLint(
        readdirSync(guest)
          .filter((f) => f.endsWith('.py'))
          .map((f) => path.join(guest, f)),
      ),
      [],
    );
  });

  it("reports pyflakes' findings: an unused import, an undefined name", () => {
    const findings = bad('import os\n\n\ndef f():\n    return missing_name\n');
    assert.ok(
      findings.some((f) => /:1: F401 'os' imported but unused/.test(f)),
      findings.join('\n'),
    );
    assert.ok(
      findings.some((f) => /:5: F821 undefined name 'missing_name'/.test(f)),
      findings.join('\n'),
    );
  });

  it('accepts a noqa that silences a finding, and rejects one that silences nothing or names no code', () => {
    assert.deepEqual(bad('import os  # noqa: F401\n'), []);
    const findings = bad('import os  # noqa: F401\nx = 1  # noqa: BLE001\ny = 2  # noqa\n');
    assert.equal(findings.length, 2, findings.join('\n'));
    assert.match(findings[0], /:2: "# noqa: BLE001" silences nothing/);
    assert.match(findings[1], /:3: a bare "# noqa"/);
  });
});
