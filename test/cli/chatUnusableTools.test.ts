/**
 * `codeact chat` in a workspace whose only declared tool could not be loaded (its MCP server lacks the
 * tool): the model is not told "No managed tools are declared". The system instruction and the
 * execute_tool_code description, as the wire server receives them, name the declaration and why.
 */
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ROOT, runCli } from '../support/cli';
import { startServerFor } from '../support/wire/harness';
import type { WireServer } from '../support/wire/server';
import { turn } from '../support/wire/turn';

describe('codeact chat: every declared tool failed to load', function () {
  this.timeout(90_000);
  let dir: string;
  let server: WireServer;
  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'codeact-unusable-'));
    mkdirSync(path.join(dir, '.vscode'));
    const command = [process.execPath, path.join(ROOT, 'test/fixtures/mcp/server.mjs')];
    writeFileSync(path.join(dir, '.vscode', 'settings.json'), JSON.stringify({ 'codeact.tools': [{ name: 'nope', mcp: { command, tool: 'multiply' } }] }));
    server = await startServerFor('openai-compatible', 'openai');
  });
  afterEach(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the system instruction and the tool description name the declaration that failed and why', async () => {
    server.push(turn().text('The tool could not be loaded.'));
    const r = await runCli([
      'chat',
      'Multiply 6 by 7.',
      '--provider',
      'openai-compatible',
      '--model',
      'm',
      '--base-url',
      server.url,
      '--workspace',
      dir,
      '--storage',
      path.join(dir, 'conv'),
    ]);
    assert.equal(r.code, 0, r.stderr);
    const body = server.turns[0].body as { messages: { role: string; content: string }[]; tools: { function: { name: string; description: string } }[] };
    const system = body.messages.find((m) => m.role === 'system')!.content;
    const description = body.tools.find((t) => t.function.name === 'execute_tool_code')!.function.description;
    for (const said of [system, description]) {
      assert.doesNotMatch(said, /No managed tools are declared/);
      assert.match(
        said,
        /No managed tool could be loaded: 1 declaration in codeact\.tools failed: "codeact\.tools\[0\] \(nope\): the MCP server .* has no tool \\"multiply\\"\. Its tools: add, /,
      );
    }
  });
});
