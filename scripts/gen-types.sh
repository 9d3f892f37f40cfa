#!/usr/bin/env bash
# Writes pkg/index.d.ts (not tracked) from its template pkg/index.d.ts.in: the declarations
# Rust defines (the ErrorCode, Outcome and persisted-state lists, and the records declared
# beside their Rust types) rendered in their places by src/typescript.rs
# (docs/decisions/generated-types.md). scripts/build.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
cargo run --quiet --bin fencegate-types -- pkg/index.d.ts.in "${1:-pkg/index.d.ts}"
