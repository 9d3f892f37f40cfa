#!/usr/bin/env bash
# The whole test suite. On a fresh machine it installs what it needs first
# (rustup target, the pinned wasm-bindgen CLI, npm dev dependencies).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup-system.sh

echo "== cargo fmt --check, cargo clippy -D warnings =="
cargo fmt --check
cargo clippy --quiet --all-targets -- -D warnings
# Each of the two Wasm modules alone (src/wasm/mod.rs): what only the other one uses must not warn.
cargo clippy --quiet --lib --no-default-features --features resource -- -D warnings
cargo clippy --quiet --lib --no-default-features --features issuer -- -D warnings

echo "== cargo test (native core) =="
cargo test --quiet

echo "== model check: issuer + gate + paused clients + restores + reconcile (model/, CI bounds) =="
bash scripts/model-check.sh

echo "== build the npm package =="
bash scripts/build.sh

echo "== Ed25519 build (a separate package build: docs/signed-tokens.md) =="
cargo test --quiet --features ed25519 --lib signed
FENCEGATE_FEATURES=ed25519 FENCEGATE_OUT=build/pkg-ed25519 bash scripts/build.sh

echo "== fuzz the signed-token parser for 15 s (first a release build of the test binary: about 75 s on 2 cores, silent) =="
bash scripts/fuzz-signed.sh 15

echo "== fuzz the state and issuer decoders, parse_token, and (JS) parseToken and the CLI's arguments and URLs: short runs =="
bash scripts/fuzz.sh ci


echo "== main job: the seed scenario through the installed package =="
bash scripts/demo.sh

echo "== JS tests against the built package, packaging test, Chromium, the examples in their runtimes =="
bash scripts/with-services.sh node --test --test-concurrency=1 --test-reporter=tap --test-reporter-destination=stdout --test-reporter=./tests/reporters/failures.mjs --test-reporter-destination=stdout tests/js/ tests/pack/ tests/browser/ tests/examples/

echo "== history workload: 2,000 seeded operations per engine under faults (tests/history, scripts/history.sh) =="
bash scripts/with-services.sh bash scripts/history.sh 2000 16
