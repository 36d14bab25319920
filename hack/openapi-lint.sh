#!/usr/bin/env bash
# Lints the instancer's API description, internal/instancer/openapi.json,
# with Redocly CLI's recommended rules (hack/openapi-lint/redocly.yaml). The
# CLI is pinned by hack/openapi-lint/package-lock.json and installed with
# npm ci into hack/openapi-lint/node_modules (gitignored), again only when
# the lock changes. Node.js and npm are installed when missing and this
# machine can (root with apt-get); the CLI needs Node.js 20.19 or 22.12 on.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=hack/openapi-lint
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Node.js and npm (apt-get) for the OpenAPI lint" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  else
    echo "Node.js and npm are missing and cannot be installed here (need root and apt-get)" >&2
    exit 1
  fi
fi
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number);
  process.exit((a === 20 && b >= 19) || (a === 22 && b >= 12) || a > 22 ? 0 : 1)'; then
  echo "Redocly CLI needs Node.js 20.19 or 22.12 on; this is $(node --version)" >&2
  exit 1
fi
if ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.installed-lock.json"; then
  npm ci --prefix "$dir" --no-audit --no-fund >&2
  cp "$dir/package-lock.json" "$dir/node_modules/.installed-lock.json"
fi
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
"$dir/node_modules/.bin/redocly" lint --config "$dir/redocly.yaml" internal/instancer/openapi.json
