#!/usr/bin/env bash
# `npm run bench:all`: every benchmark of the issue-14 report in one run and one table
# (bench/all.mjs), with real redis-server and PostgreSQL on loopback started and stopped here.
# Builds the package first when pkg/dist is missing, and the Ed25519 variant for its size.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f pkg/dist/fencegate_bg.wasm ] || bash scripts/build.sh
[ -f build/pkg-ed25519/dist/fencegate_bg.wasm ] || FENCEGATE_FEATURES=ed25519 FENCEGATE_OUT=build/pkg-ed25519 bash scripts/build.sh
bash scripts/with-services.sh node bench/all.mjs
# the caller's own data (docs/stores.md "Your own data"): gate.transaction against BEGIN; UPDATE; COMMIT by hand
exec bash scripts/with-services.sh node bench/own-data.mjs
