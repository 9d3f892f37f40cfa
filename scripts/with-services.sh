#!/usr/bin/env bash
# Runs a command with real Redis and PostgreSQL on loopback, and stops them on
# any exit (success, failure, Ctrl-C):
#   bash scripts/with-services.sh node --test tests/js/
# Installs redis-server / postgresql with apt-get when missing (CI). The command
# sees FENCEGATE_REDIS_URL, FENCEGATE_PG_URL and FENCEGATE_REQUIRE_SERVICES=1
# (store tests then fail instead of skipping when a service is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }

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
"$@"
