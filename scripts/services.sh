#!/usr/bin/env bash
# Starts / stops the real stores the store tests use, on loopback, in a scratch dir:
#   scripts/services.sh install           apt-get installs redis-server, postgresql and mariadb-server if missing
#   scripts/services.sh start DIR         starts all three, writes DIR/env (source it)
#   scripts/services.sh stop DIR          stops what `start DIR` started (by pid file / pg_ctl)
# DIR/env exports FENCEGATE_REDIS_URL, FENCEGATE_PG_URL and FENCEGATE_MYSQL_URL,
# and FENCEGATE_S3_URL: moto's S3 server (PyPI `moto[server]`, an emulator of S3's
# API with conditional PUTs; the most real S3-compatible server that installs from
# the registries here: docs/stores.md "Objects: S3 and R2"), bucket `fencegate`.
# FENCEGATE_REDIS_CLUSTER_URLS: a 3-master Redis Cluster (no replicas), comma-separated.
# Redis runs with no persistence (--save '' --appendonly no); PostgreSQL runs as
# the postgres user (initdb/pg_ctl refuse root) with fsync off; MariaDB runs in
# DIR (as root when started by root: --user=root) with its redo-log flush off,
# no doublewrite and a small buffer pool: test data only. Its user `fencegate`
# (password `fgtestpw`, database `fencegate`) is reached on 127.0.0.1 only.
# FENCEGATE_SERVICES_DURABLE=1: PostgreSQL and MariaDB with their durable defaults
# instead (fsync, synchronous_commit, full_page_writes on; the redo log flushed at
# each commit, doublewrite on): for benchmarks whose figure depends on what a commit
# costs on a server configured as in production (bench/guard.mjs).
set -euo pipefail
DURABLE=${FENCEGATE_SERVICES_DURABLE:-0}

pg_bin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
}

install() {
  local need=()
  command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
  pg_bin >/dev/null || need+=(postgresql)
  mariadb_bin >/dev/null || need+=(mariadb-server)
  if [ ${#need[@]} -gt 0 ]; then
    echo "services: installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # apt-get update only when an install is needed (a fresh machine has no package lists).
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
  moto_bin >/dev/null || {
    echo "services: installing moto[server] $MOTO_VERSION (PyPI)"
    python3 -m pip install -q --disable-pip-version-check "moto[server]==$MOTO_VERSION"
  }
}

MOTO_VERSION=5.2.1

# moto's S3 server, run by scripts/moto-s3.py (one request at a time: moto's own
# threaded server does not make a conditional PUT atomic; see that file).
moto_bin() {
  python3 -c 'import moto.server, flask_cors, werkzeug' >/dev/null 2>&1 && { echo "python3 $(dirname "$0")/moto-s3.py"; return 0; }
  return 1
}

# moto in DIR/moto on a free loopback port; waits until it answers, then creates
# the bucket `fencegate`. Sets S3_PORT.
start_moto() {
  local dir=$1 bin i
  bin=$(moto_bin) || { echo "services: moto is not installed (run: $0 install)" >&2; exit 1; }
  mkdir -p "$dir/moto"
  S3_PORT=$(free_port)
  # shellcheck disable=SC2086
  (exec $bin 127.0.0.1 "$S3_PORT" </dev/null >"$dir/moto/server.log" 2>&1) &
  echo $! >"$dir/moto/moto.pid"
  for i in $(seq 1 150); do
    if node -e "require('net').connect($S3_PORT,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))"; then break; fi
    [ "$i" = 150 ] && { echo "services: moto did not answer within 15 s" >&2; cat "$dir/moto/server.log" >&2; exit 1; }
    sleep 0.1
  done
  node -e "fetch('http://127.0.0.1:$S3_PORT/fencegate',{method:'PUT'}).then((r)=>process.exit(r.ok?0:1),()=>process.exit(1))" ||
    { echo "services: moto: creating bucket fencegate failed" >&2; cat "$dir/moto/server.log" >&2; exit 1; }
}

stop_moto() {
  local f="$1/moto/moto.pid" pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  kill "$pid" 2>/dev/null || true
  rm -f "$f"
}

mariadb_bin() {
  local b
  for b in /usr/sbin/mariadbd "$(command -v mariadbd 2>/dev/null || true)"; do
    [ -n "$b" ] && [ -x "$b" ] && command -v mariadb-install-db >/dev/null 2>&1 && { echo "$b"; return 0; }
  done
  return 1
}

free_port() {
  node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  local dir=$1
  mkdir -p "$dir"
  chmod 755 "$dir"  # postgres must reach its data dir inside it
  local bin rport pport
  bin=$(pg_bin) || { echo "services: PostgreSQL is not installed (run: $0 install)" >&2; exit 1; }
  command -v redis-server >/dev/null || { echo "services: redis-server is not installed (run: $0 install)" >&2; exit 1; }

  local pg_sync='-c fsync=off -c synchronous_commit=off -c full_page_writes=off'
  [ "$DURABLE" = 1 ] && pg_sync='-c fsync=on -c synchronous_commit=on -c full_page_writes=on'
  rport=$(free_port)
  redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize yes --pidfile "$dir/redis.pid" --dir "$dir" --logfile "$dir/redis.log"

  mkdir -p "$dir/pg"
  [ "$(id -u)" = 0 ] && chown postgres: "$dir/pg"
  as_postgres "$bin/initdb" -D "$dir/pg/data" -U postgres --auth=trust -E UTF8 --no-sync >"$dir/pg-initdb.log" 2>&1 || {
    cat "$dir/pg-initdb.log" >&2; exit 1; }
  pport=$(free_port)
  as_postgres "$bin/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/server.log" -w -t 30 \
    -o "-p $pport -k $dir/pg -c listen_addresses=127.0.0.1 $pg_sync" \
    start >/dev/null || { cat "$dir/pg/server.log" >&2; exit 1; }

  start_mariadb "$dir"
  start_moto "$dir"
  start_redis_cluster "$dir"

  for _ in $(seq 1 50); do
    if node -e "require('net').connect($rport,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))"; then break; fi
    sleep 0.1
  done
  cat >"$dir/env" <<ENV
export FENCEGATE_REDIS_URL=redis://127.0.0.1:$rport
export FENCEGATE_PG_URL=postgres://postgres@127.0.0.1:$pport/postgres
export FENCEGATE_MYSQL_URL=mysql://fencegate:fgtestpw@127.0.0.1:$MYSQL_PORT/fencegate
export FENCEGATE_REDIS_CLUSTER_URLS=$REDIS_CLUSTER_URLS
ENV
  echo "export FENCEGATE_S3_URL=http://127.0.0.1:$S3_PORT" >>"$dir/env"
  echo "services: moto S3 on 127.0.0.1:$S3_PORT (bucket fencegate)"
  echo "services: redis on 127.0.0.1:$rport, postgresql on 127.0.0.1:$pport, mariadb on 127.0.0.1:$MYSQL_PORT, redis cluster on $REDIS_CLUSTER_URLS (env in $dir/env)"
}

# A 3-master Redis Cluster (no replicas) in DIR/redis-cluster: three redis-server
# --cluster-enabled nodes on free loopback ports (client port and cluster bus
# port each picked free: --cluster-port), joined by redis-cli --cluster create;
# waits until every node answers cluster_state:ok. Sets REDIS_CLUSTER_URLS.
start_redis_cluster() {
  local d="$1/redis-cluster" i port bus addrs=() urls=() n
  mkdir -p "$d"
  for i in 1 2 3; do
    port=$(free_port)
    bus=$(free_port)
    mkdir -p "$d/$i"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --cluster-enabled yes --cluster-port "$bus" --cluster-config-file "$d/$i/nodes.conf" --cluster-node-timeout 5000 \
      --daemonize yes --pidfile "$d/$i/redis.pid" --dir "$d/$i" --logfile "$d/$i/redis.log"
    addrs+=("127.0.0.1:$port")
    urls+=("redis://127.0.0.1:$port")
  done
  for i in $(seq 1 50); do
    n=0
    for a in "${addrs[@]}"; do redis-cli -h 127.0.0.1 -p "${a##*:}" ping >/dev/null 2>&1 && n=$((n + 1)); done
    [ "$n" = 3 ] && break
    [ "$i" = 50 ] && { echo "services: redis cluster nodes did not answer within 5 s" >&2; exit 1; }
    sleep 0.1
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$d/create.log" 2>&1 || {
    cat "$d/create.log" >&2; exit 1; }
  for i in $(seq 1 100); do
    n=0
    for a in "${addrs[@]}"; do
      redis-cli -h 127.0.0.1 -p "${a##*:}" cluster info 2>/dev/null | grep -q '^cluster_state:ok' && n=$((n + 1))
    done
    [ "$n" = 3 ] && break
    [ "$i" = 100 ] && { echo "services: redis cluster did not reach cluster_state:ok within 20 s" >&2; cat "$d/create.log" >&2; exit 1; }
    sleep 0.2
  done
  REDIS_CLUSTER_URLS=$(IFS=,; echo "${urls[*]}")
}

stop_redis_cluster() {
  local d="$1/redis-cluster" f
  [ -d "$d" ] || return 0
  for f in "$d"/*/redis.pid; do
    [ -f "$f" ] || continue
    kill "$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
  done
}

# MariaDB in DIR/mysql: a fresh data dir (mariadb-install-db), then mariadbd in
# the background on a free loopback port; waits until it answers on its socket,
# then creates the test user and database. Sets MYSQL_PORT.
start_mariadb() {
  local dir=$1 bin d as_user=() i
  bin=$(mariadb_bin) || { echo "services: mariadb-server is not installed (run: $0 install)" >&2; exit 1; }
  d="$dir/mysql"
  mkdir -p "$d"
  [ "$(id -u)" = 0 ] && as_user=(--user=root)
  mariadb-install-db --no-defaults "${as_user[@]}" --datadir="$d/data" --auth-root-authentication-method=normal \
    --skip-test-db --skip-name-resolve >"$d/install.log" 2>&1 || { cat "$d/install.log" >&2; exit 1; }
  MYSQL_PORT=$(free_port)
  local sync=(--innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0)
  [ "$DURABLE" = 1 ] && sync=(--innodb-flush-log-at-trx-commit=1 --innodb-doublewrite=1)
  "$bin" --no-defaults "${as_user[@]}" --datadir="$d/data" --socket="$d/sock" --pid-file="$d/mariadbd.pid" \
    --port="$MYSQL_PORT" --bind-address=127.0.0.1 --skip-name-resolve --log-error="$d/server.log" \
    "${sync[@]}" --innodb-buffer-pool-size=32M \
    --innodb-log-file-size=16M --performance-schema=OFF --skip-log-bin </dev/null >/dev/null 2>&1 &
  echo $! >"$d/mariadbd.pid" # stop_mariadb finds it even if the start fails below (mariadbd rewrites the same pid)
  for i in $(seq 1 150); do
    if mariadb --no-defaults -uroot --socket="$d/sock" -e 'SELECT 1' >/dev/null 2>&1; then break; fi
    [ "$i" = 150 ] && { echo "services: mariadbd did not answer within 15 s" >&2; cat "$d/server.log" >&2; exit 1; }
    sleep 0.1
  done
  mariadb --no-defaults -uroot --socket="$d/sock" -e "CREATE DATABASE fencegate CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
    CREATE USER 'fencegate'@'127.0.0.1' IDENTIFIED BY 'fgtestpw';
    GRANT ALL ON fencegate.* TO 'fencegate'@'127.0.0.1';
    CREATE USER 'fencegate_noroutine'@'127.0.0.1' IDENTIFIED BY 'fgtestpw';
    GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER ON fencegate.* TO 'fencegate_noroutine'@'127.0.0.1';" || { cat "$d/server.log" >&2; exit 1; }
}

stop_mariadb() {
  local d="$1/mysql" pid i
  [ -f "$d/mariadbd.pid" ] || return 0
  pid=$(cat "$d/mariadbd.pid")
  kill "$pid" 2>/dev/null || true
  for i in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    [ "$i" = 50 ] && kill -9 "$pid" 2>/dev/null || true
    sleep 0.1
  done
  rm -f "$d/mariadbd.pid"
}

stop() {
  local dir=$1 bin
  if [ -f "$dir/redis.pid" ]; then
    kill "$(cat "$dir/redis.pid")" 2>/dev/null || true
    rm -f "$dir/redis.pid"
  fi
  if [ -f "$dir/pg/data/postmaster.pid" ] && bin=$(pg_bin); then
    as_postgres "$bin/pg_ctl" -D "$dir/pg/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  stop_mariadb "$dir"
  stop_moto "$dir"
  stop_redis_cluster "$dir"
}

case "${1:-}" in
  install) install ;;
  start) [ -n "${2:-}" ] || { echo "usage: $0 start DIR" >&2; exit 2; }; start "$2" ;;
  stop) [ -n "${2:-}" ] || { echo "usage: $0 stop DIR" >&2; exit 2; }; stop "$2" ;;
  *) echo "usage: $0 install | start DIR | stop DIR" >&2; exit 2 ;;
esac
