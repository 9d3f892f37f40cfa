#!/usr/bin/env bash
# Starts / stops the real stores the store tests use, on loopback, in a scratch dir:
#   scripts/services.sh install           apt-get installs redis-server and postgresql if missing
#   scripts/services.sh start DIR         starts both, writes DIR/env (source it)
#   scripts/services.sh stop DIR          stops what `start DIR` started (by pid file / pg_ctl)
# DIR/env exports FENCEGATE_REDIS_URL and FENCEGATE_PG_URL.
# Redis runs with no persistence (--save '' --appendonly no); PostgreSQL runs as
# the postgres user (initdb/pg_ctl refuse root) with fsync off: test data only.
set -euo pipefail

pg_bin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
}

install() {
  local need=()
  command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
  pg_bin >/dev/null || need+=(postgresql)
  if [ ${#need[@]} -gt 0 ]; then
    echo "services: installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # apt-get update only when an install is needed (a fresh machine has no package lists).
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
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

  rport=$(free_port)
  redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize yes --pidfile "$dir/redis.pid" --dir "$dir" --logfile "$dir/redis.log"

  mkdir -p "$dir/pg"
  [ "$(id -u)" = 0 ] && chown postgres: "$dir/pg"
  as_postgres "$bin/initdb" -D "$dir/pg/data" -U postgres --auth=trust -E UTF8 --no-sync >"$dir/pg-initdb.log" 2>&1 || {
    cat "$dir/pg-initdb.log" >&2; exit 1; }
  pport=$(free_port)
  as_postgres "$bin/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/server.log" -w -t 30 \
    -o "-p $pport -k $dir/pg -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    start >/dev/null || { cat "$dir/pg/server.log" >&2; exit 1; }

  for _ in $(seq 1 50); do
    if node -e "require('net').connect($rport,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))"; then break; fi
    sleep 0.1
  done
  cat >"$dir/env" <<ENV
export FENCEGATE_REDIS_URL=redis://127.0.0.1:$rport
export FENCEGATE_PG_URL=postgres://postgres@127.0.0.1:$pport/postgres
ENV
  echo "services: redis on 127.0.0.1:$rport, postgresql on 127.0.0.1:$pport (env in $dir/env)"
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
}

case "${1:-}" in
  install) install ;;
  start) [ -n "${2:-}" ] || { echo "usage: $0 start DIR" >&2; exit 2; }; start "$2" ;;
  stop) [ -n "${2:-}" ] || { echo "usage: $0 stop DIR" >&2; exit 2; }; stop "$2" ;;
  *) echo "usage: $0 install | start DIR | stop DIR" >&2; exit 2 ;;
esac
