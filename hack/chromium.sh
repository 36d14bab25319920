#!/usr/bin/env bash
# Installs Debian's chromium for the instancer's browser test, when it is
# missing and this machine can (root with apt-get). Elsewhere the test skips,
# unless CI is set, where it fails: CI machines must run it.
set -euo pipefail
for name in chromium chromium-browser google-chrome; do
  command -v "$name" >/dev/null 2>&1 && exit 0
done
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium (apt-get) for the instancer's browser test" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
elif [ -n "${CI:-}" ]; then
  echo "chromium is missing and cannot be installed here (need root and apt-get)" >&2
  exit 1
fi
