#!/usr/bin/env bash
# The whole test suite. On a fresh machine it installs what it needs first
# (rustup target, the pinned wasm-bindgen CLI, npm dev dependencies).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup-system.sh

echo "== cargo test (native core) =="
cargo test --quiet

echo "== build the npm package =="
bash scripts/build.sh


echo "== main job: the seed scenario through the installed package =="
bash scripts/demo.sh

echo "== JS tests against the built package, packaging test, Chromium =="
node --test --test-concurrency=1 tests/js/ tests/pack/ tests/browser/
