#!/usr/bin/env bash
# Makes sure Debian's PHP command-line interpreter is installed for the tests
# of the PHP example processor, which serve it with `php -S` on loopback.
# Installs it through the system package manager when it is missing and we
# run as root.
set -euo pipefail
if command -v php >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends php-cli >/dev/null
  exit 0
fi
echo "php is missing: install it (e.g. apt-get install php-cli) and re-run" >&2
exit 1
