#!/usr/bin/env bash
# Installs code-server 4.100.3 (VS Code 1.100.3, the newest that runs on Node 20) into .cache/code-server,
# for the extension-host and UI tests. Needs libkrb5-dev and ripgrep (apt) first.
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=.cache/code-server
if [ -x "$dest/node_modules/.bin/code-server" ]; then exit 0; fi
mkdir -p "$dest"
# Its ripgrep postinstall downloads a binary; hand it Debian's rg as the cached download instead.
tmp=$(mktemp -d)
cache="$tmp/vscode-ripgrep-cache-1.15.11"
mkdir -p "$cache" "$tmp/rg"
cp "$(command -v rg)" "$tmp/rg/rg"
tar -czf "$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$tmp/rg" rg
cd "$dest"
[ -f package.json ] || echo '{"name":"code-server-for-tests","private":true}' > package.json
export TMPDIR="$tmp" npm_config_yes=true
# npm 11 skips dependencies' install scripts until they are approved: install, approve them all, then run them.
npm install --no-audit --no-fund code-server@4.100.3
npm install-scripts approve --all
npm rebuild
rm -rf "$tmp"
