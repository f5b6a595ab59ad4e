#!/usr/bin/env bash
# Installs code-server 4.100.3 (VS Code 1.100, runs on Node 20) from the npm registry into
# .vscode-test/code-server, for the real-VS-Code UI tests. Idempotent; offline-safe (no binary downloads).
# Needs (Debian): libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev ripgrep, and chromium for the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${CODEACT_CODE_SERVER_DIR:-$PWD/.vscode-test/code-server}"
ENTRY="$CACHE/node_modules/code-server/out/node/entry.js"
if [ -f "$CACHE/.ready" ] && [ -f "$ENTRY" ]; then echo "code-server ready in $CACHE"; exit 0; fi
mkdir -p "$CACHE"
cd "$CACHE"
[ -f package.json ] || echo '{"name":"codeact-code-server","private":true}' > package.json
npm install --no-audit --no-fund --ignore-scripts code-server@4.100.3 >/tmp/codeact-code-server-1.log 2>&1
cd node_modules/code-server/lib/vscode
npm install --omit=dev --no-audit --no-fund --ignore-scripts >/tmp/codeact-code-server-2.log 2>&1
mkdir -p node_modules/@vscode/ripgrep/bin
cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
npm rebuild >/tmp/codeact-code-server-3.log 2>&1 || true   # node-pty's post-install step fails offline after pty.node is built
ln -sfn node_modules node_modules.asar
(cd extensions && npm install --omit=dev --no-audit --no-fund >/tmp/codeact-code-server-4.log 2>&1) || true
cd "$CACHE"
npm rebuild argon2 >/tmp/codeact-code-server-5.log 2>&1 || true
touch "$CACHE/.ready"
echo "code-server ready in $CACHE"
