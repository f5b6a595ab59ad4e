/**
 * The runtime factory (core/runtime/factory.ts): a builder per runtime of the catalogue (common/runtimes.ts;
 * the compiler asks for each), and a plain error for a value that names none.
 */
import * as assert from 'node:assert/strict';
import { createRuntime, RuntimeConfigError } from '../../src/core/runtime/factory';

describe('runtime builders', () => {
  it('build the local guest, whose items carry its kind (the Jupyter runtime is built in test/jupyter)', async () => {
    const built = await createRuntime({ runtime: 'local' });
    try {
      assert.equal(built.kind, 'local');
    } finally {
      await built.dispose();
    }
  });

  it('refuse a runtime the catalogue does not list, naming the ones it does', async () => {
    await assert.rejects(
      createRuntime({ runtime: 'remote' as never }),
      (e: Error) => e instanceof RuntimeConfigError && e.message === 'codeact.runtime must be "local" or "jupyter", not "remote".',
    );
    await assert.rejects(createRuntime({ runtime: 'toString' as never }), RuntimeConfigError, 'not a property of every object');
    await assert.rejects(createRuntime({ runtime: 'jupyter' }), /The Jupyter runtime needs a server URL/);
  });
});
