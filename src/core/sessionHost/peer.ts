/**
 * The uid of the process at the other end of an accepted Unix socket. Node has no SO_PEERCRED, so the
 * socket is handed, as fd 3, to the system's /usr/bin/python3 (never a configured interpreter: that one
 * could be the workspace's code), which reads getsockopt(SO_PEERCRED) and prints the uid. Once per
 * connection (an attach), not per execution. The socket is paused meanwhile, so nothing it sends is lost.
 */
import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';

const SYSTEM_PYTHON = '/usr/bin/python3';

const READ_PEER = [
  'import socket, struct',
  's = socket.socket(fileno=3)',
  'c = s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)',
  's.detach()',
  "print(struct.unpack('3i', c)[1])",
].join('\n');

/** Resolves with the peer's uid, or rejects saying why it could not be read (the connection is then refused). */
export function peerUid(socket: Socket, python = SYSTEM_PYTHON): Promise<number> {
  return new Promise((resolve, reject) => {
    socket.pause();
    const child = spawn(python, ['-I', '-S', '-c', READ_PEER], { stdio: ['ignore', 'pipe', 'ignore', socket], env: {} });
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      if (out.length < 64) out += d.toString();
    });
    const help = `The session host checks who connects with ${python}: install python3 (Debian: apt install python3), or set codeact.session.host to "off".`;
    child.on('error', (e: NodeJS.ErrnoException) =>
      reject(new Error(`cannot read the caller's uid: ${e.code === 'ENOENT' ? `${python} is missing` : `${python} failed (${e.message})`}. ${help}`)),
    );
    child.on('close', (code) => {
      const uid = Number(out.trim());
      if (code === 0 && /^\d+$/.test(out.trim())) resolve(uid);
      else reject(new Error(`cannot read the caller's uid with ${python} (exit ${code}). ${help}`));
    });
  });
}
