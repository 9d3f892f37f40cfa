#!/usr/bin/env bash
# The history workload on every engine (docs/decisions/history-checker.md; tests/history/run.mjs):
#   scripts/history.sh [OPS] [SEED]      default 2000 operations, seed 16 (the CI run)
#   scripts/history.sh 100000            the soak: 100 000 operations per engine
#   HISTORY_ENGINES="redis" scripts/history.sh 20000 7
# After the engines, short seeded runs (500 operations each) of the own-data mode
# (gate.transaction over the caller's own data: --own-data on sqlite, redis, postgres)
# and of the database guard with its rogue writer (--own-data --guard on sqlite and
# postgres: every raw write refused, 0 landed), for the engines in the list.
# Each engine's server is started by the workload itself (it restarts it as a
# fault); `scripts/services.sh install` provides redis-server and PostgreSQL,
# `scripts/etcd-cluster.sh install` etcd (the `etcd` engine, one member, is not
# in the default list: `etcd-cluster` runs the same store on three members).
# Histories go to build/history/<engine>-<seed>.jsonl (<engine>-own-<seed>, <engine>-guard-<seed>
# for those runs); re-check one with
# `node tests/history/check.mjs FILE`. Fails on any violation.
set -euo pipefail
cd "$(dirname "$0")/.."
ops=${1:-2000}
seed=${2:-16}
engines=${HISTORY_ENGINES:-sqlite redis postgres etcd-cluster}
bash scripts/services.sh install
bash scripts/etcd-cluster.sh install
mkdir -p build/history
summaries=()
for engine in $engines; do
  echo "== history: $engine, $ops operations, seed $seed =="
  node tests/history/run.mjs --engine "$engine" --ops "$ops" --procs 4 --seed "$seed" | tee "build/history/$engine-$seed.log" | grep -v '^    L' | tail -n 12
  summaries+=("$(grep '^history: summary' "build/history/$engine-$seed.log")")
done
# own data (gate.transaction over the caller's own tables or keys), a short seeded run each
for engine in sqlite redis postgres; do
  [[ " $engines " == *" $engine "* ]] || continue
  echo "== history: $engine own data, 500 operations, seed $seed =="
  node tests/history/run.mjs --engine "$engine" --own-data --ops 500 --procs 4 --seed "$seed" --out "build/history/$engine-own-$seed.jsonl" | tee "build/history/$engine-own-$seed.log" | grep -v '^    L' | tail -n 12
  summaries+=("$(grep '^history: summary' "build/history/$engine-own-$seed.log")")
done
# the database guard on the own tables, with the rogue writer writing them (and the fence rows) directly
for engine in sqlite postgres; do
  [[ " $engines " == *" $engine "* ]] || continue
  echo "== history: $engine own data + guard + rogue writer, 500 operations, seed $seed =="
  node tests/history/run.mjs --engine "$engine" --own-data --guard --ops 500 --procs 4 --seed "$seed" --out "build/history/$engine-guard-$seed.jsonl" | tee "build/history/$engine-guard-$seed.log" | grep -v '^    L' | grep -v '^check:   [a-z-]* *attempts' | tail -n 14
  summaries+=("$(grep '^history: summary' "build/history/$engine-guard-$seed.log")")
done
printf '%s\n' "${summaries[@]}"
