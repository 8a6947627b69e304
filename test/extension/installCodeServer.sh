#!/usr/bin/env bash
# Installs code-server 4.100.3 (VS Code 1.100.3, the newest that runs on Node 20) into .cache/code-server,
# for the extension-host and UI tests. Needs libkrb5-dev and ripgrep (apt) first. About a minute and a half.
set -euo pipefail
cd "$(dirname "$0")/../.."
version=4.100.3
dest=.cache/code-server
marker="$dest/.installed-$version"
# The marker is written last, so an install that failed halfway is redone rather than trusted.
if [ -f "$marker" ] && [ -x "$dest/node_modules/.bin/code-server" ]; then exit 0; fi
command -v rg >/dev/null || { echo "installCodeServer.sh: ripgrep is missing (apt-get install -y ripgrep)" >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$dest"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Its ripgrep postinstall downloads a binary; hand it Debian's rg as the cached download instead.
cache="$tmp/vscode-ripgrep-cache-1.15.11"
mkdir -p "$cache" "$tmp/rg" "$tmp/home"
cp "$(command -v rg)" "$tmp/rg/rg"
tar -czf "$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$tmp/rg" rg
cd "$dest"
echo '{"name":"code-server-for-tests","private":true}' > package.json
# code-server's postinstall refuses to run as root unless npm_config_unsafe_perm is "true" (npm 11 no
# longer knows the option and warns about it, but the script reads the variable itself).
export TMPDIR="$tmp" npm_config_yes=true npm_config_unsafe_perm=true
# npm 11 may skip dependencies' install scripts until they are approved: install, approve them, run them.
npm install --no-audit --no-fund "code-server@$version"
npm install-scripts approve --all
npm rebuild
# A smoke test with a throwaway HOME (code-server writes a default config into ~/.config on first start).
HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home/.config" XDG_DATA_HOME="$tmp/home/.local/share" ./node_modules/.bin/code-server --version
touch ".installed-$version"
