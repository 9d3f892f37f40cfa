#!/usr/bin/env bash
# Host-store benchmark with real Redis, PostgreSQL and MariaDB on loopback (see bench/stores.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash scripts/with-services.sh node bench/stores.mjs "$@"
