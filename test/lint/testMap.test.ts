/**
 * `npm run testmap` (scripts/testMap.mjs): which tests cover which src file or folder, made from the
 * imports of the test files and of the test helpers they import.
 */
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = path.resolve(__dirname, '..', '..');

interface Covered {
  test: string;
  unit: boolean;
}

describe('the map of tests per src file and folder (npm run testmap)', function () {
  this.timeout(120_000);
  let mod: { testsOf: (target: string) => Covered[]; testMap: (targets?: string[]) => string };
  before(async () => {
    mod = (await import(pathToFileURL(path.join(ROOT, 'scripts/testMap.mjs')).href)) as typeof mod;
  });

  it("lists a file's direct importers, marking the unit lane", () => {
    const tests = mod.testsOf('src/common/format.ts');
    assert.ok(
      tests.some((t) => t.test === 'test/common/format.test.ts' && t.unit),
      JSON.stringify(tests),
    );
  });

  it('follows the test helpers a test imports (a test reaching src only through test/support counts), and lists no helper', () => {
    // test/providers/faults.test.ts builds its agent with wireAgent (test/support/wire/harness.ts) and never imports agent.ts itself.
    const tests = mod.testsOf('src/core/agent/agent.ts').map((t) => t.test);
    assert.ok(tests.includes('test/providers/faults.test.ts'), JSON.stringify(tests));
    assert.ok(
      tests.every((t) => t.endsWith('.test.ts')),
      'only test files are listed',
    );
  });

  it("lists a folder's tests under its own heading, and says when none imports it directly", () => {
    const map = mod.testMap(['src/core/agent', 'src/webview/styles']);
    assert.match(map, /## src\/core\/agent\n\n- test\/agent\//);
    assert.match(map, /## src\/webview\/styles\n\n\(no test imports it directly/);
  });
});
