#!/usr/bin/env bash
# Installs the Debian packages Practicum needs (bubblewrap for the sandbox, Chromium for the browser
# tests, PostgreSQL and Redis for the test suite) when they are missing and we run as root.
set -euo pipefail

need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v chromium >/dev/null || need+=(chromium)
command -v redis-server >/dev/null || need+=(redis-server)
command -v pg_ctlcluster >/dev/null || need+=(postgresql)
[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "Missing Debian packages: ${need[*]}. Install them with: sudo apt-get install -y ${need[*]}" >&2
    # Not fatal: tests that need a missing piece skip with this reason.
    exit 0
fi
echo "Installing Debian packages: ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q "${need[@]}" >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q "${need[@]}" >/dev/null; }
