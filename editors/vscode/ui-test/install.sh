#!/bin/sh
# code-server 4.100.3 and playwright-core for the extension's UI test, on a machine that reaches the
# npm registry but not GitHub or nodejs.org (make vscode-ui; Debian's chromium, ripgrep and
# libkrb5-dev are installed first):
# * native modules compile against the headers of the installed Node (no download of them);
# * node-pty's install runs `npx node-gyp`, which must not stop to ask (npm_config_yes);
# * @vscode/ripgrep's install would download rg from GitHub: its cache gets Debian's rg;
# * npm 11 runs only the install scripts package.json allows: argon2 here; code-server's own
#   (npm install inside its lib/vscode) runs below, with its native modules allowed there.
set -eu
cd "$(dirname "$0")"
npm_config_nodedir="$(dirname "$(dirname "$(command -v node)")")"
export npm_config_nodedir npm_config_yes=true
cache="$(node -p 'require("os").tmpdir()')/vscode-ripgrep-cache-1.15.11"
mkdir -p "$cache"
tar czf "$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$(dirname "$(command -v rg)")" rg
npm ci --no-audit --no-fund
cd node_modules/code-server
node -e '
const fs = require("fs");
const allowed = ["@parcel/watcher", "@vscode/deviceid", "@vscode/ripgrep", "@vscode/spdlog", "kerberos", "native-watchdog", "node-pty"];
for (const file of ["lib/vscode/package.json", "lib/vscode/extensions/package.json"]) {
  const manifest = JSON.parse(fs.readFileSync(file, "utf8"));
  manifest.allowScripts = Object.fromEntries(allowed.map((name) => [name, true]));
  fs.writeFileSync(file, JSON.stringify(manifest, null, 2));
}'
npm_config_unsafe_perm=true npm_config_user_agent="npm/$(npm -v) node/$(node -v) linux x64" sh ./postinstall.sh
