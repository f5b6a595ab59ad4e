/**
 * The warm zygote's host socket cannot be flooded. Guest code (a session forked from the
 * zygote, without a sandbox and in bubblewrap, as root and as an unprivileged user) opens thousands of
 * connections to every socket it can find in the zygote's socket folder, half of them with a forged token.
 * The host's descriptors stay bounded, it stays up, and the session and new forks keep working. On the
 * host side, connections to a fork's socket without its token are closed, and the socket is gone once the
 * guest is connected.
 */
import * as assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import * as path from 'node:path';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import { cannotSwitchUser, runScriptInChild, TESTER } from './support/asUser';

const REPO = path.resolve(__dirname, '..', '..');

/** Guest code: connections to everything in the socket folder, from four processes, held while the host counts. */
const ATTACK = (dir: string) => `
import os, socket, signal
d = ${JSON.stringify(dir)}
try:
    names = os.listdir(d)
    listed = len(names)
except OSError as e:
    names, listed = [], type(e).__name__
targets = sorted({os.path.join(d, n) for n in names} | {os.path.join(d, "guest.sock")})
def attack(n):
    held, refused = [], 0
    for i in range(n):
        for t in targets:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(t)
                if i % 2:
                    s.sendall(b'{"token":"forged","stream":"proto"}\\n')
                held.append(s)
            except OSError:
                refused += 1
                s.close()
    return held, refused
kids = []
for _ in range(3):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        held, refused = attack(900)
        os.write(w, b"%d %d\\n" % (len(held), refused))
        signal.pause()
        os._exit(0)
    os.close(w)
    kids.append((pid, r))
held, refused = attack(900)
counts = [(len(held), refused)]
for pid, r in kids:
    a, b = os.read(r, 100).split()
    counts.append((int(a), int(b)))
host_fds = await call_tool("host_fds")
for pid, _ in kids:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
return {"listed": listed, "held": sum(c[0] for c in counts), "refused": sum(c[1] for c in counts), "host_fds": host_fds}
`;

/** The scenario, in a child Node process (as root or as the unprivileged user). */
const SCRIPT = String.raw`
import { readdirSync } from 'node:fs';
import { LocalRuntime } from '${REPO}/src/core/runtime/local/localRuntime';
(async () => {
  const { kind, attack } = JSON.parse(process.argv[2]);
  const fds = () => readdirSync('/proc/self/fd').length;
  const rt = new LocalRuntime({ sandbox: { kind }, zygote: true, python: '/usr/bin/python3' });
  const out: Record<string, unknown> = {};
  try {
    const first = await rt.execute({ code: 'return "warm"', sessionId: 's' });
    const z = await (rt as any).launcher.zygote;
    out.zygote = !!z;
    const dir = kind === 'none' ? z.socketDir : '/run/codeact/host';
    out.first = first.value;
    out.baseline = fds();
    const item = await rt.execute({ code: attack.replace('@DIR@', dir), sessionId: 's', timeoutMs: 120000 }, { onToolCall: async () => fds() });
    out.attack = item.status === 'completed' ? item.value : item.error;
    out.same = (await rt.execute({ code: 'return 41 + 1', sessionId: 's' })).value;
    out.fresh = (await rt.execute({ code: 'return "fresh"', sessionId: 't' })).value;
    out.forked = (await (rt as any).launcher.zygote) === z && z.alive;
  } finally {
    await rt.dispose();
  }
  console.log(JSON.stringify(out));
})();
`;

interface Outcome {
  zygote: boolean;
  first: unknown;
  baseline: number;
  attack: { listed: number | string; held: number; refused: number; host_fds: number } | { type: string; message: string };
  same: unknown;
  fresh: unknown;
  forked: boolean;
}

function scenario(kind: 'none' | 'bubblewrap', user?: { uid: number; gid: number }): Promise<Outcome> {
  return runScriptInChild<Outcome>(SCRIPT, { kind, attack: ATTACK('@DIR@') }, user, 'the host process (it did not survive)');
}

describe('security: the zygote socket cannot be flooded', function () {
  this.timeout(240_000);
  const users: Array<{ label: string; user?: { uid: number; gid: number } }> = [{ label: 'as root' }, { label: 'as an unprivileged user', user: TESTER }];
  for (const kind of ['none', 'bubblewrap'] as const) {
    for (const { label, user } of users) {
      it(`keeps the host's descriptors bounded and the sessions working when guest code floods it (sandbox: ${kind}, ${label})`, async function () {
        if (kind === 'bubblewrap') {
          const reason = await probeBubblewrap();
          if (reason) this.skip();
        }
        if (user && cannotSwitchUser()) this.skip();
        const r = await scenario(kind, user);
        assert.equal(r.zygote, true, 'the sessions are forked from the zygote');
        assert.equal(r.first, 'warm');
        const attack = r.attack as { listed: number | string; held: number; refused: number; host_fds: number };
        assert.equal(typeof attack.host_fds, 'number', `the attack ran: ${JSON.stringify(r.attack)}`);
        assert.ok(
          attack.host_fds - r.baseline < 64,
          `the host's descriptors grew from ${r.baseline} to ${attack.host_fds} (${attack.held} connections held by the guest)`,
        );
        assert.notEqual(typeof attack.listed, 'number', 'the guest cannot list the socket folder');
        assert.equal(r.same, 42, 'the session keeps working');
        assert.equal(r.fresh, 'fresh', 'a new session is forked');
        assert.equal(r.forked, true, 'the zygote is still up');
      });
    }
  }

  it('closes connections to a fork socket that lack its token, and removes the socket once the guest is in', async () => {
    const rt = new LocalRuntime({ sandbox: { kind: 'none' }, zygote: true, python: '/usr/bin/python3' });
    try {
      assert.equal((await rt.execute({ code: 'return 1', sessionId: 'a' })).value, 1);
      const z = (await (rt as any).launcher.zygote) as { socketDir: string; pending: Map<string, { socket?: { guestPath: string } }> };
      assert.ok(z, 'the zygote started');
      // Connect as soon as the next fork's socket exists: a forged token, a stream named twice, silence.
      const attempts: Array<Promise<string>> = [];
      const attack = (socketPath: string) => {
        const once = (hello: string | null) =>
          new Promise<string>((resolve) => {
            const s: Socket = connect(socketPath);
            s.on('error', () => resolve('error'));
            s.on('connect', () => hello !== null && s.write(hello));
            s.on('close', () => resolve('closed'));
          });
        attempts.push(once('{"token":"forged","stream":"proto"}\n'), once('{"token":"","stream":"stdout"}\n'), once('not json\n'), once(null));
      };
      const send = (z as any).send.bind(z);
      let socketSeen = '';
      (z as any).send = (frame: { t: string; socket?: string }) => {
        if (frame.t === 'fork' && frame.socket) {
          socketSeen = frame.socket;
          attack(frame.socket);
        }
        send(frame);
      };
      const second = await rt.execute({ code: 'return 2', sessionId: 'b' });
      assert.equal(second.value, 2, 'the fork completed despite the forged connections');
      assert.ok(socketSeen, 'a fork was requested');
      assert.equal(existsSync(socketSeen), false, "the fork's socket is gone once its guest is connected");
      const outcomes = await Promise.all(attempts);
      assert.ok(
        outcomes.every((o) => o === 'closed' || o === 'error'),
        `every forged connection was closed: ${outcomes.join(', ')}`,
      );
      const late = await new Promise<string>((resolve) => {
        const s = connect(socketSeen);
        s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
        s.on('connect', () => resolve('connected'));
      });
      assert.equal(late, 'ENOENT');
    } finally {
      await rt.dispose();
    }
  });
});
