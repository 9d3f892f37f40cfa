#!/usr/bin/env bash
# Fuzzers of everything that parses (docs/decisions/fuzzing.md; README "Fuzzing"):
#   Rust (src/fuzz.rs): state   the resource state decoder, formats v1–v4
#                       json    the JSON reader (serde-json-wasm + pre-check) against serde_json
#                       issuer  the issuer record decoder (wire and checked)
#                       token   parse_token
#   Rust (src/signed.rs): the signed-token parser (scripts/fuzz-signed.sh)
#   JS (tests/fuzz/js.mjs): parseToken, cli-args, cli-urls
# Usage:
#   bash scripts/fuzz.sh ci                 short runs of every target (seconds each; scripts/test.sh)
#   bash scripts/fuzz.sh soak [EXECS]       each Rust target EXECS executions (default 10000000),
#                                           the signed-token parser 120 s, each JS target
#                                           FUZZ_JS_RUNS executions (default 10000000)
#   bash scripts/fuzz.sh rust TARGET[,…] EXECS [SEED]
#   bash scripts/fuzz.sh js TARGET[,…] RUNS [SEED]
# Needs the built package for the JS targets (scripts/build.sh). Every line
# printed names the target, executions, time, seed and findings; exit 1 on a finding.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

rust() {
  # rust TARGETS EXECS [SEED]
  local out rc
  set +e
  out=$(FUZZ_TARGET="$1" FUZZ_EXECS="$2" FUZZ_SEED="${3:-11400714819323198485}" \
    cargo test --release --lib fuzz:: -- --ignored --nocapture --test-threads=1 2>&1)
  rc=$?
  set -e
  grep -oE 'fuzz [a-z].*findings.*|panicked.*|finding:.*' <<<"$out" || true
  if [ "$rc" != 0 ]; then
    tail -n 30 <<<"$out" >&2
    echo "fuzz: a Rust target failed" >&2
    exit 1
  fi
}

js() {
  node tests/fuzz/js.mjs "$1" --runs "$2" --seed "${3:-16}"
}

case "${1:-}" in
  ci)
    rust all 1000000
    node tests/fuzz/js.mjs all
    ;;
  soak)
    n="${2:-10000000}"
    rust all "$n"
    bash scripts/fuzz-signed.sh 120
    for t in parseToken cli-args cli-urls; do js "$t" "${FUZZ_JS_RUNS:-10000000}"; done
    ;;
  rust) [ $# -ge 3 ] || { echo "usage: $0 rust TARGET EXECS [SEED]" >&2; exit 2; }; rust "$2" "$3" "${4:-}" ;;
  js) [ $# -ge 3 ] || { echo "usage: $0 js TARGET RUNS [SEED]" >&2; exit 2; }; js "$2" "$3" "${4:-16}" ;;
  *) echo "usage: $0 ci | soak [EXECS] | rust TARGET EXECS [SEED] | js TARGET RUNS [SEED]" >&2; exit 2 ;;
esac
