/**
 * A tiny wheel made in the test, for install_packages offline (`--no-index --find-links DIR`): the wheel zip
 * written by hand with Python's zipfile (METADATA, WHEEL, RECORD), so no build backend or network is needed;
 * and a venv made with Debian's /usr/bin/python3 (`-m venv --system-site-packages`).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';

export const SYSTEM_PYTHON = '/usr/bin/python3';

const MAKE_WHEEL = String.raw`
import sys, zipfile, hashlib, base64
out, name, version, body = sys.argv[1:5]
mod = name.replace("-", "_")
dist = f"{mod}-{version}.dist-info"
files = {
    f"{mod}/__init__.py": body + "\n",
    f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: a test package\n",
    f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: codeact-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
record = "".join(f"{p},{digest(c.encode())},{len(c.encode())}\n" for p, c in files.items()) + f"{dist}/RECORD,,\n"
path = f"{out}/{mod}-{version}-py3-none-any.whl"
with zipfile.ZipFile(path, "w") as z:
    for p, c in files.items():
        z.writestr(p, c)
    z.writestr(f"{dist}/RECORD", record)
print(path)
`;

/** Writes `<dir>/<name>-<version>-py3-none-any.whl` whose module `<name with _>` holds `body`; returns its path. */
export function makeWheel(dir: string, name: string, version: string, body: string): string {
  mkdirSync(dir, { recursive: true });
  return execFileSync(SYSTEM_PYTHON, ['-c', MAKE_WHEEL, dir, name, version, body], { encoding: 'utf8' }).trim();
}

/** `python3 -m venv --system-site-packages <dir>` with Debian's Python; returns the venv's python. */
export function makeVenv(dir: string): string {
  execFileSync(SYSTEM_PYTHON, ['-m', 'venv', '--system-site-packages', dir], { stdio: 'ignore', timeout: 120_000 });
  return path.join(dir, 'bin', 'python');
}

const MAKE_SDIST = String.raw`
import sys, tarfile, io
out, name, version = sys.argv[1:4]
mod = name.replace("-", "_")
root = f"{mod}-{version}"
files = {
    f"{root}/PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    f"{root}/setup.py": "raise SystemExit('error: this package needs a C compiler, and none was found')\n",
}
path = f"{out}/{root}.tar.gz"
with tarfile.open(path, "w:gz") as t:
    for p, c in files.items():
        data = c.encode()
        info = tarfile.TarInfo(p)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
print(path)
`;

/** A source distribution whose build fails (its setup.py exits with an error), in `dir`. */
export function makeBrokenSdist(dir: string, name: string, version: string): string {
  mkdirSync(dir, { recursive: true });
  return execFileSync(SYSTEM_PYTHON, ['-c', MAKE_SDIST, dir, name, version], { encoding: 'utf8' }).trim();
}
