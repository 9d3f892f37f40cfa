#!/usr/bin/env bash
# Host-store benchmark with real Redis, PostgreSQL, MariaDB and a 3-member etcd cluster on loopback (see bench/stores.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash scripts/with-services.sh node bench/stores.mjs "$@"
