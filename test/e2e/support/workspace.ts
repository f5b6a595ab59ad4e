/**
 * Temporary copies of examples/orders for the e2e runs, with the extra managed tools a test needs
 * (added to .vscode/settings.json with jsonc-parser, so the example's comments stay).
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyEdits, modify } from 'jsonc-parser';
import { ROOT } from './env';

/** A managed tool with `"approval": "ask"`: it "sends a note" and echoes what it was given. */
export const SEND_NOTE_TOOL = {
  name: 'send_note',
  description: 'Send a short note to a customer. Asks the user first.',
  command: ['python3', 'tools/e2e_tools.py', 'send_note'],
  approval: 'ask',
  inputSchema: {
    type: 'object',
    properties: { customer_id: { type: 'string' }, text: { type: 'string', minLength: 1 } },
    required: ['customer_id', 'text'],
    additionalProperties: false,
  },
  outputSchema: {
    type: 'object',
    properties: { sent: { type: 'boolean' }, note_id: { type: 'string' } },
    required: ['sent', 'note_id'],
  },
};

const E2E_TOOLS_PY = `"""Managed tools added by the e2e tests (JSON arguments on stdin, one JSON value on stdout)."""
import json
import sys


def send_note(customer_id, text):
    return {"sent": True, "note_id": "NOTE-" + customer_id + "-" + str(len(text)), "to": customer_id}


if __name__ == "__main__":
    args = json.load(sys.stdin)
    json.dump({"send_note": send_note}[sys.argv[1]](**args), sys.stdout)
`;

export interface Workspace {
  /** The folder to open (…/orders). */
  folder: string;
  dispose(): void;
}

/** Copies examples/orders into a fresh temporary folder and appends `extraTools` to codeact.tools. */
export function makeWorkspace(extraTools: object[] = [SEND_NOTE_TOOL], prefix = 'codeact-e2e-ws-'): Workspace {
  const parent = mkdtempSync(join(tmpdir(), prefix));
  const folder = join(parent, 'orders');
  cpSync(join(ROOT, 'examples', 'orders'), folder, { recursive: true, filter: (src) => !/[\\/]__pycache__([\\/]|$)/.test(src) });
  mkdirSync(join(folder, 'tools'), { recursive: true });
  writeFileSync(join(folder, 'tools', 'e2e_tools.py'), E2E_TOOLS_PY);
  const settingsPath = join(folder, '.vscode', 'settings.json');
  let text = readFileSync(settingsPath, 'utf8');
  for (const tool of extraTools) {
    text = applyEdits(text, modify(text, ['codeact.tools', -1], tool, { formattingOptions: { insertSpaces: true, tabSize: 2 }, isArrayInsertion: true }));
  }
  writeFileSync(settingsPath, text);
  return { folder, dispose: () => rmSync(parent, { recursive: true, force: true }) };
}

/** `makeWorkspace()` with more files in the folder (name relative to it -> text): a test's own script or cells. */
export function makeWorkspaceWith(files: Record<string, string>): Workspace {
  const ws = makeWorkspace();
  for (const [name, text] of Object.entries(files)) writeFileSync(join(ws.folder, name), text);
  return ws;
}

/** The text of a .ipynb (nbformat 4.5, Python) whose code cells are `sources`, none run yet. */
export function notebook(sources: string[]): string {
  const cell = (source: string) => ({
    cell_type: 'code',
    id: `c${Math.random().toString(36).slice(2, 10)}`,
    metadata: {},
    source: source.split(/(?<=\n)/),
    execution_count: null,
    outputs: [],
  });
  return JSON.stringify({ nbformat: 4, nbformat_minor: 5, metadata: { language_info: { name: 'python' } }, cells: sources.map(cell) }, null, 1);
}
