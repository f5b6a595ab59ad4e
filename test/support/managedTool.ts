/**
 * A managed tool for a test, with only what the test is about written out. What it leaves out is the plainest
 * tool: any object as arguments, no output schema, `auto` approval, offered to code, a `test` source, and an
 * `invoke` that answers null.
 */
import type { ManagedTool } from '../../src/core/gateway/toolSet';

export function managedTool(over: Partial<ManagedTool> = {}): ManagedTool {
  return {
    name: 't',
    description: '',
    inputSchema: { type: 'object' },
    approval: 'auto',
    expose: 'code',
    source: 'test',
    invoke: async () => null,
    ...over,
  };
}
