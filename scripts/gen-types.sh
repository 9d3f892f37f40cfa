#!/usr/bin/env bash
# Writes the TypeScript aliases rendered from Rust (src/typescript.rs: ErrorCode, Outcome,
# PersistedState, PersistedIssuerState) into pkg/index.d.ts; `cargo test` fails while they differ.
set -euo pipefail
cd "$(dirname "$0")/.."
FENCEGATE_WRITE_TYPES=1 cargo test --quiet --lib typescript::
