#!/usr/bin/env bash
# The model check (docs/decisions/model-check.md; model/ and docs/guarantees.md).
#   scripts/model-check.sh           the CI bounds: the teeth tests (both broken
#                                    variants give counterexamples), then the
#                                    exhaustive CI runs with 0 counterexamples
#   scripts/model-check.sh --large   the larger bound (long: see docs/guarantees.md)
# Extra arguments go to the checker (e.g. --threads 2, --set clients=3).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
# model/ is a crate of its own (not a workspace member): its build lives in
# target/model so the package's target/ and .wasm are untouched.
TARGET=target/model
if [ "${1:-}" != "--large" ]; then
  cargo test --quiet --release --manifest-path model/Cargo.toml --target-dir "$TARGET"
fi
cargo build --quiet --release --manifest-path model/Cargo.toml --target-dir "$TARGET"
"$TARGET/release/model-check" --threads "${MODEL_THREADS:-2}" "$@"
