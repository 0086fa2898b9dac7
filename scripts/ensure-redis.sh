#!/usr/bin/env bash
# Makes sure redis-server is installed for the store and API tests, which start
# their own instance on a free loopback port. Installs it through the system
# package manager when it is missing and we run as root.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq redis-server >/dev/null
  exit 0
fi
echo "redis-server is missing: install it (e.g. apt-get install redis-server) and re-run" >&2
exit 1
