#!/usr/bin/env bash
# Runs the host-store tests (conformance, concurrency, exports) against the BUILT
# package with real Redis and PostgreSQL on loopback, and stops them on any exit.
# Prerequisites: scripts/setup.sh and scripts/build.sh have run.
# Installs redis-server / postgresql with apt-get when missing (CI).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/services.sh install
dir=$(mktemp -d "${TMPDIR:-/tmp}/fencegate-services.XXXXXX")
cleanup() {
  bash scripts/services.sh stop "$dir" || true
  rm -rf "$dir"
}
trap cleanup EXIT
bash scripts/services.sh start "$dir"
# shellcheck disable=SC1091
. "$dir/env"
export FENCEGATE_REQUIRE_SERVICES=1
node --test --test-concurrency=1 tests/js/stores/*.test.mjs
