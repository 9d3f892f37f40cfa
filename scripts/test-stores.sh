#!/usr/bin/env bash
# The host-store tests (conformance, concurrency, exports, docs examples) against
# the BUILT package, with real Redis, PostgreSQL, MariaDB and a 3-member etcd cluster started and stopped around
# them. Prerequisites: scripts/setup.sh and scripts/build.sh have run.
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash scripts/with-services.sh node --test --test-concurrency=1 tests/js/stores/
