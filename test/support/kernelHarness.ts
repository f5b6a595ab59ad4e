/**
 * Drives a REAL ipykernel (Debian's python3-ipykernel, started by jupyter_client) with the cells the
 * Jupyter runtime sends: the bootstrap cell (the guest library and codeact_kernel.py), then one run
 * cell per execution; returns each execution's IOPub messages (stream, display_data, update_display_data,
 * execute_result, error) in order. For the kernel side of the guest library, without jupyter-server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { bootstrapCell } from '../../src/core/runtime/jupyter/kernelBridge';
import { DEBIAN_PYTHON } from './guestHarness';

const DRIVER = String.raw`
import json, sys
from jupyter_client.manager import start_new_kernel
km, kc = start_new_kernel(kernel_name="python3", extra_arguments=["--HistoryManager.enabled=False"])
out = sys.stdout
out.write(json.dumps({"ready": True}) + "\n"); out.flush()
for line in sys.stdin:
    req = json.loads(line)
    msg_id = kc.execute(req["code"], silent=False, store_history=False, allow_stdin=False)
    msgs = []
    while True:
        m = kc.get_iopub_msg(timeout=120)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        t = m["msg_type"]
        if t == "status" and m["content"]["execution_state"] == "idle":
            break
        if t in ("stream", "display_data", "update_display_data", "execute_result", "error"):
            msgs.append({"type": t, "content": m["content"]})
    reply = kc.get_shell_msg(timeout=120)
    out.write(json.dumps({"messages": msgs, "status": reply["content"]["status"]}) + "\n"); out.flush()
kc.stop_channels(); km.shutdown_kernel(now=True)
import os; os._exit(0)
`;

export interface KernelMessage {
  type: string;
  content: any;
}

export class KernelHarness {
  private readonly child: ChildProcess;
  private buf = '';
  private pending: Array<(v: any) => void> = [];
  readonly cwd: string;
  private runs = 0;
  /** The driver's and the kernel's stderr (the tail), for failure messages. */
  log = '';
  readonly nonce = 'testnonce' + Math.random().toString(36).slice(2, 8);

  constructor() {
    this.cwd = mkdtempSync(path.join(tmpdir(), 'codeact-kernel-test-'));
    this.child = spawn(DEBIAN_PYTHON, ['-c', DRIVER], {
      cwd: this.cwd,
      env: {
        PATH: '/usr/bin:/bin',
        HOME: this.cwd,
        LANG: 'C.UTF-8',
        JUPYTER_PLATFORM_DIRS: '1',
        IPYTHONDIR: path.join(this.cwd, '.ipython'),
        PYDEVD_DISABLE_FILE_VALIDATION: '1',
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child.stderr!.on('data', (b: Buffer) => (this.log = (this.log + b.toString('utf8')).slice(-4000)));
    this.child.stdout!.on('data', (b: Buffer) => {
      const lines = (this.buf + b.toString('utf8')).split('\n');
      this.buf = lines.pop()!;
      for (const l of lines) this.pending.shift()?.(JSON.parse(l));
    });
  }

  private next(): Promise<any> {
    return new Promise((resolve) => this.pending.push(resolve));
  }

  /** Starts the kernel; `before` runs in it ahead of the bootstrap cell (a kernel the user has used already). */
  async start(before?: string): Promise<void> {
    await this.next();
    if (before) await this.exec(before);
    const r = await this.exec(bootstrapCell(this.nonce));
    if (r.status !== 'ok') throw new Error(`bootstrap failed: ${JSON.stringify(r.messages)} ${this.log}`);
  }

  async exec(code: string): Promise<{ messages: KernelMessage[]; status: string }> {
    const p = this.next();
    this.child.stdin!.write(JSON.stringify({ code }) + '\n');
    return p;
  }

  /** One run through codeact_kernel.run(); result: the RESULT_MIME payload; messages: the rest, in order. */
  async run(code: string, options?: Record<string, unknown>): Promise<{ messages: KernelMessage[]; result: any }> {
    const id = `r${++this.runs}`;
    const b64 = Buffer.from(code, 'utf8').toString('base64');
    const opts = options ? `, ${JSON.stringify(JSON.stringify(options))}` : '';
    const r = await this.exec(`await __import__("__codeact__").run("${b64}", "${id}", False, ${16 << 20}, ${15 << 20}${opts})`);
    const isResult = (m: KernelMessage) => m.type === 'display_data' && 'application/vnd.codeact.result+json' in (m.content.data ?? {});
    const result = r.messages.find(isResult)?.content.data['application/vnd.codeact.result+json'];
    return { messages: r.messages.filter((m) => !isResult(m)), result };
  }

  async close(): Promise<void> {
    this.child.stdin!.end();
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => (this.child.kill('SIGKILL'), resolve()), 15_000);
      this.child.on('exit', () => (clearTimeout(t), resolve()));
    });
    rmSync(this.cwd, { recursive: true, force: true });
  }
}
