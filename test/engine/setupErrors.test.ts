/**
 * A run that fails because the host's setup is wrong (a setting, the machine) says so by its error's
 * category, not its name: the CLI exits 2 on it (src/cli/run.ts). The code's own errors never carry one.
 */
import * as assert from 'node:assert/strict';
import { normaliseError, setupCategory } from '../../src/core/runtime/execution';
import { JupyterError } from '../../src/core/runtime/jupyter/connection';
import { toExecutionError } from '../../src/core/runtime/jupyter/runErrors';
import { SandboxUnavailableError } from '../../src/core/runtime/local/sandbox';
import { RuntimeConfigError } from '../../src/core/runtime/factory';

describe('setup errors: a category, not a name', () => {
  it('errors of the setup carry config or environment; the runtime, a tool or a cancel carry none', () => {
    assert.deepEqual(setupCategory(new SandboxUnavailableError('no bubblewrap')), { category: 'environment' });
    assert.deepEqual(setupCategory(new RuntimeConfigError('no URL')), { category: 'config' });
    assert.deepEqual(setupCategory(new Error('x')), {});
    assert.deepEqual(setupCategory(Object.assign(new Error('x'), { name: 'PythonNotFoundError' })), {}, 'a name is not a category');
  });

  it("a Jupyter error's run error has the category of its type: the server's setup, or the run", () => {
    const expected = {
      JupyterConfigError: 'config',
      JupyterAuthError: 'config',
      JupyterNotFound: 'config',
      JupyterKernelNotFound: 'config',
      JupyterUnreachable: 'environment',
      JupyterServerError: undefined,
      JupyterTimeout: undefined,
      JupyterConnectionLost: undefined,
      KernelDied: undefined,
    } as const;
    for (const [type, category] of Object.entries(expected)) {
      const error = toExecutionError(new JupyterError(type as keyof typeof expected, 'm'));
      assert.equal(error.type, type);
      assert.equal(error.category, category, type);
    }
  });

  it("the code's own error cannot claim a category", () => {
    assert.equal(normaliseError({ type: 'ValueError', message: 'm', category: 'config' }).category, undefined);
  });
});
