#!/usr/bin/env bash
# Installs the npm packages the frontend protocol tests drive chatd with (the
# AI SDK's `ai` and AG-UI's `@ag-ui/client`), exactly as package-lock.json
# pins them, with `npm ci`. Node.js and npm come from the system package
# manager when they are missing and we run as root. Re-running is cheap: the
# install is skipped while node_modules matches the lockfile.
set -euo pipefail
dir="$(cd "$(dirname "$0")/.." && pwd)/internal/api/testdata/frontends"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "node and npm are missing: install Node.js (20 or later) and re-run" >&2
    exit 1
  fi
fi
# A copy of the lockfile an install was made from marks node_modules; while
# it matches, the installed tree is the pinned one.
stamp="$dir/node_modules/.chatd-installed-lock.json"
if cmp -s "$dir/package-lock.json" "$stamp" 2>/dev/null; then
  exit 0
fi
cd "$dir"
npm ci --no-audit --no-fund --loglevel=error
cp package-lock.json "$stamp"
