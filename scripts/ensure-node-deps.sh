#!/usr/bin/env bash
# Installs the pinned npm packages of every Node test client in the repo
# (each tracked package-lock.json) with `npm ci`, so tests use exactly the
# locked versions. Node and npm come with the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is missing: install Node.js and npm, then re-run" >&2
  exit 1
fi
git ls-files '*package-lock.json' | grep -v node_modules | while read -r lock; do
  (cd "$(dirname "$lock")" && npm ci --no-audit --no-fund --loglevel=error)
done
