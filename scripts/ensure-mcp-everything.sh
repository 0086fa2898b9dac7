#!/usr/bin/env bash
# Installs the MCP reference server (@modelcontextprotocol/server-everything),
# pinned by its package-lock.json, for the MCP tests, which run it over stdio
# with node. Installs node and npm through the system package manager when
# they are missing and we run as root. Does nothing when the installed tree
# already matches the lockfile.
set -euo pipefail
dir="$(cd "$(dirname "$0")/.." && pwd)/internal/mcptools/testdata/server-everything"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "node and npm are missing: install them (e.g. apt-get install nodejs npm) and re-run" >&2
    exit 1
  fi
fi
# npm writes node_modules/.package-lock.json on install; when it matches the
# lockfile's packages the tree is current.
if [ -f "$dir/node_modules/.package-lock.json" ] &&
  [ -f "$dir/node_modules/@modelcontextprotocol/server-everything/package.json" ] &&
  [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
  exit 0
fi
cd "$dir"
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
