#!/usr/bin/env bash
# Makes sure Debian's chromium is installed for the browser tests of the chat
# page, which start their own headless instance. Installs it through the system
# package manager when it is missing and we run as root.
set -euo pipefail
for bin in chromium chromium-browser; do
  if command -v "$bin" >/dev/null 2>&1; then
    exit 0
  fi
done
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
  exit 0
fi
echo "chromium is missing: install it (e.g. apt-get install chromium) and re-run" >&2
exit 1
