#!/bin/sh
# Install Debian's Chromium for the draw test that screenshots a figure
# (tests/draw/test_chromium.py).  Idempotent; needs root and apt.  Exits 0
# when chromium is present afterwards, 1 when it could not be installed (the
# test then skips).
set -u
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install_chromium: needs root and apt-get; skipping" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null 2>&1 || true
apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 || {
  echo "install_chromium: apt-get install chromium failed" >&2
  exit 1
}
command -v chromium >/dev/null 2>&1
