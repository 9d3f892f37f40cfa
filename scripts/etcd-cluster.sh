#!/usr/bin/env bash
# A 3-member etcd cluster (Debian etcd-server 3.4) on free loopback ports, in a scratch dir:
#   scripts/etcd-cluster.sh install             apt-get installs etcd-server (and etcd-client) if missing
#   scripts/etcd-cluster.sh start DIR [N]       starts N members (default 3), waits for a healthy
#                                                cluster, writes DIR/env (source it)
#   scripts/etcd-cluster.sh stop DIR            stops every member `start DIR` started (SIGTERM, then SIGKILL)
#   scripts/etcd-cluster.sh stop-member DIR I   stops member I (1-based; SIGKILL: a crash)
#   scripts/etcd-cluster.sh start-member DIR I  starts member I again on its ports and data dir
#   scripts/etcd-cluster.sh leader DIR          prints the index of the current leader member
# DIR/env exports FENCEGATE_ETCD_URLS (comma-separated client URLs of all members)
# and FENCEGATE_ETCD_URL (the first one). DIR/mI.pid, DIR/mI.url, DIR/mI.log per member.
# Test data only: the members run with --unsafe-no-fsync when this etcd has it.
set -euo pipefail

install() {
  if ! command -v etcd >/dev/null 2>&1; then
    echo "etcd-cluster: installing etcd-server"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends etcd-server etcd-client >/dev/null
  fi
}

free_port() {
  node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

member_args() {
  # member_args DIR I: the command line of member I (from DIR/cluster)
  local dir=$1 i=$2
  # shellcheck disable=SC1091
  . "$dir/cluster"
  local cport pport
  cport=$(eval echo "\$CPORT$i")
  pport=$(eval echo "\$PPORT$i")
  local extra=()
  if etcd --help 2>&1 | grep -q -- '--unsafe-no-fsync'; then extra+=(--unsafe-no-fsync); fi
  echo --name "m$i" --data-dir "$dir/m$i.data" \
    --listen-client-urls "http://127.0.0.1:$cport" --advertise-client-urls "http://127.0.0.1:$cport" \
    --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
    --initial-cluster "$INITIAL" --initial-cluster-state new --initial-cluster-token "$TOKEN" \
    --heartbeat-interval 50 --election-timeout 500 --log-level warn "${extra[@]}"
}

start_member() {
  local dir=$1 i=$2
  # shellcheck disable=SC2046
  nohup etcd $(member_args "$dir" "$i") >>"$dir/m$i.log" 2>&1 &
  echo $! >"$dir/m$i.pid"
}

healthy() {
  # healthy URLS: every endpoint answers and the cluster has a leader
  ETCDCTL_API=3 etcdctl --endpoints="$1" --command-timeout=2s endpoint health >/dev/null 2>&1
}

wait_healthy() {
  local urls=$1
  for _ in $(seq 1 150); do
    if healthy "$urls"; then return 0; fi
    sleep 0.2
  done
  return 1
}

start() {
  local dir=$1 n=${2:-3} i initial='' urls=''
  command -v etcd >/dev/null || { echo "etcd-cluster: etcd is not installed (run: $0 install)" >&2; exit 1; }
  mkdir -p "$dir"
  : >"$dir/cluster"
  for i in $(seq 1 "$n"); do
    local c p
    c=$(free_port)
    p=$(free_port)
    while [ "$p" = "$c" ]; do p=$(free_port); done
    echo "CPORT$i=$c" >>"$dir/cluster"
    echo "PPORT$i=$p" >>"$dir/cluster"
    echo "http://127.0.0.1:$c" >"$dir/m$i.url"
    initial="$initial${initial:+,}m$i=http://127.0.0.1:$p"
    urls="$urls${urls:+,}http://127.0.0.1:$c"
  done
  {
    echo "N=$n"
    echo "INITIAL=$initial"
    echo "TOKEN=fencegate-$$-$RANDOM"
  } >>"$dir/cluster"
  for i in $(seq 1 "$n"); do start_member "$dir" "$i"; done
  if ! wait_healthy "$urls"; then
    echo "etcd-cluster: the cluster did not become healthy; logs:" >&2
    tail -n 20 "$dir"/m*.log >&2 || true
    stop "$dir"
    exit 1
  fi
  cat >"$dir/env" <<ENV
export FENCEGATE_ETCD_URLS=$urls
export FENCEGATE_ETCD_URL=${urls%%,*}
ENV
  echo "etcd-cluster: $n members, clients at $urls (env in $dir/env)"
}

stop_pid() {
  local pidfile=$1 sig=$2 pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "-$sig" "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

stop() {
  local dir=$1 f
  for f in "$dir"/m*.pid; do [ -e "$f" ] && stop_pid "$f" TERM; done
  return 0
}

leader() {
  local dir=$1 i
  # shellcheck disable=SC1091
  . "$dir/cluster"
  for i in $(seq 1 "$N"); do
    [ -f "$dir/m$i.pid" ] || continue
    if ETCDCTL_API=3 etcdctl --endpoints="$(cat "$dir/m$i.url")" --command-timeout=2s endpoint status -w simple 2>/dev/null |
      awk -F', ' '{ exit ($5 == "true") ? 0 : 1 }'; then
      echo "$i"
      return 0
    fi
  done
  return 1
}

usage() { echo "usage: $0 install | start DIR [N] | stop DIR | stop-member DIR I | start-member DIR I | leader DIR" >&2; exit 2; }

case "${1:-}" in
  install) install ;;
  start) [ -n "${2:-}" ] || usage; start "$2" "${3:-3}" ;;
  stop) [ -n "${2:-}" ] || usage; stop "$2" ;;
  stop-member) [ -n "${3:-}" ] || usage; stop_pid "$2/m$3.pid" KILL ;;
  start-member) [ -n "${3:-}" ] || usage; start_member "$2" "$3" ;;
  leader) [ -n "${2:-}" ] || usage; leader "$2" ;;
  *) usage ;;
esac
