#!/usr/bin/env bash
# Installs the Debian packages the tests drive for real: Chromium (browser
# tests, through npm playwright-core), redis-server, PostgreSQL and MariaDB
# (store adapters), etcd-server (the etcd adapter's 3-member cluster), and from
# PyPI moto's S3 server (the S3 adapter's emulator: scripts/services.sh install). Skips
# what is already installed; needs root (as on CI).
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
{ [ -x /usr/sbin/mariadbd ] || command -v mariadbd >/dev/null 2>&1; } || need+=(mariadb-server)
command -v etcd >/dev/null 2>&1 || need+=(etcd-server etcd-client)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup-system: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
bash "$(dirname "$0")/services.sh" install
