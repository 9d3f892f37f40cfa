#!/usr/bin/env bash
# Runs a command with real Redis, PostgreSQL, MariaDB and a 3-member etcd cluster
# on loopback, and stops them on any exit (success, failure, Ctrl-C):
#   bash scripts/with-services.sh node --test tests/js/
# Installs redis-server / postgresql / mariadb-server / etcd-server with apt-get
# when missing (CI).
# The command sees FENCEGATE_REDIS_URL, FENCEGATE_PG_URL, FENCEGATE_MYSQL_URL,
# FENCEGATE_S3_URL (moto's S3 server, bucket `fencegate`), FENCEGATE_ETCD_URLS
# (all members, comma-separated), FENCEGATE_ETCD_URL (the first member),
# FENCEGATE_ETCD_DIR (for scripts/etcd-cluster.sh stop-member / start-member)
# and FENCEGATE_REQUIRE_SERVICES=1
# (store tests then fail instead of skipping when a service is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }

bash scripts/services.sh install
bash scripts/etcd-cluster.sh install
dir=$(mktemp -d "${TMPDIR:-/tmp}/fencegate-services.XXXXXX")
cleanup() {
  bash scripts/etcd-cluster.sh stop "$dir/etcd" || true
  bash scripts/services.sh stop "$dir" || true
  rm -rf "$dir"
}
trap cleanup EXIT
bash scripts/services.sh start "$dir"
bash scripts/etcd-cluster.sh start "$dir/etcd" 3
# shellcheck disable=SC1091
. "$dir/env"
# shellcheck disable=SC1091
. "$dir/etcd/env"
export FENCEGATE_ETCD_DIR="$dir/etcd"
export FENCEGATE_REQUIRE_SERVICES=1
"$@"
