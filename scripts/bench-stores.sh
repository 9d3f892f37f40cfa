#!/usr/bin/env bash
# Host-store benchmark with real Redis and PostgreSQL on loopback (see bench/stores.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/services.sh install
dir=$(mktemp -d "${TMPDIR:-/tmp}/fencegate-services.XXXXXX")
trap 'bash scripts/services.sh stop "$dir" || true; rm -rf "$dir"' EXIT
bash scripts/services.sh start "$dir"
# shellcheck disable=SC1091
. "$dir/env"
node bench/stores.mjs
