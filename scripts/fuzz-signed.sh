#!/usr/bin/env bash
# Runs the signed-token text parser fuzzer (src/signed.rs, fuzz_parser_for_a_while)
# for a fixed time: no panic on any input, no accepted mutation of a valid token.
# Usage: bash scripts/fuzz-signed.sh [seconds]   (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
echo "fuzz: compiling the fuzzer (cargo test --release, signed::tests): no output until it runs; the first time about 75 s on 2 cores"
FUZZ_SECONDS="${1:-60}" cargo test --release --lib signed::tests::fuzz_parser_for_a_while \
  -- --ignored --nocapture --exact 2>&1 | grep -E '^fuzz:|test result|panicked|accepted'
