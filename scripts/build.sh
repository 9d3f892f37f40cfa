#!/usr/bin/env bash
# Builds the npm package in pkg/: Rust → wasm32 → wasm-bindgen (web target) →
# wasm-opt -Oz (npm binaryen; Debian's is too old) → CommonJS bundle (esbuild).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

# Variant builds (docs/signed-tokens.md): FENCEGATE_FEATURES=ed25519 FENCEGATE_OUT=build/pkg-ed25519
# builds a complete copy of the package with Ed25519 compiled in, in its own target dir.
FEATURES="${FENCEGATE_FEATURES:-}"
OUT="${FENCEGATE_OUT:-pkg}"
TARGET_DIR=target
if [ -n "$FEATURES" ]; then TARGET_DIR="target/features-${FEATURES//[, ]/-}"; fi
if [ "$OUT" != pkg ]; then
  rm -rf "$OUT" && mkdir -p "$OUT" && cp -r pkg/. "$OUT"/ && rm -rf "$OUT/dist"
fi

# LLVM's default inlining: a lower inline threshold took 2.3 KB gzip off the resource side
# but made MemoryGate writes 6-12 % slower (docs/decisions/wasm-size.md).
# Two modules from one crate (src/wasm/mod.rs; docs/decisions/two-wasm-modules.md):
# the resource side, which every entry loads at start-up, and the issuer side (Issuer steps,
# the reconcile planner), loaded on first use. The issuer side never needs the variant features
# (Ed25519 verifies and mints on the resource side), so it builds in the default target dir.
module() { # feature, target dir, extra features, out name
  CARGO_TARGET_DIR="$2" cargo build --release --target wasm32-unknown-unknown --lib \
    --no-default-features --features "$1${3:+,$3}"
  wasm-bindgen --target web --no-typescript --out-dir "$OUT/dist" --out-name "$4" \
    "$2/wasm32-unknown-unknown/release/fencegate.wasm"
  # --converge repeats -Oz while it still shrinks; --strip-producers drops the toolchain record;
  # --low-memory-unused lets it fold address offsets (Rust's wasm32 layout keeps the low 1 KiB
  # unused: the stack grows down from 1 MiB towards it, static data lies above).
  npx --no-install wasm-opt -Oz --converge --strip-debug --strip-producers --low-memory-unused \
    --enable-bulk-memory --enable-reference-types --enable-nontrapping-float-to-int \
    --enable-sign-ext --enable-multivalue --enable-mutable-globals \
    "$OUT/dist/$4_bg.wasm" -o "$OUT/dist/$4_bg.wasm"
  # The import and export names and the glue stay as wasm-bindgen writes them: no rewrite
  # (docs/decisions/wasm-size.md).
}
rm -rf "$OUT/dist"
module resource "$TARGET_DIR" "$FEATURES" fencegate
module issuer target "" fencegate_issuer
# devalue (the default value codec's lossless form, lib/codec.mjs), bundled into the
# package so it stays free of runtime dependencies; its licence ships beside it.
npx --no-install esbuild node_modules/devalue/src/index.js --bundle --format=esm --platform=neutral \
  --outfile="$OUT/dist/devalue.mjs" --log-level=warning
cp node_modules/devalue/LICENSE "$OUT/dist/devalue.LICENSE"
# The Node bundles: dist/node.mjs, the Node ESM entry as one file, and dist/fencegate.cjs, the
# API for require() (node.cjs instantiates it from bytes); devalue and the issuer side's glue
# in CommonJS files they require on first use (docs/decisions/cold-start.md).
node scripts/build-node.mjs "$OUT"
# The types: pkg/index.d.ts.in with the declarations Rust defines rendered in (scripts/gen-types.sh).
bash scripts/gen-types.sh "$OUT/index.d.ts"
cp "$OUT/index.d.ts" "$OUT/dist/index.d.cts"
# CommonJS copies of the store adapters and ESM copies for Node, importing lib/'s error class,
# codec and memory store through the package's bundles (scripts/build-adapters.mjs).
node scripts/build-adapters.mjs "$OUT"
# The license texts and the changelog ship in the tarball; their one copy lives at the root.
cp LICENSE-MIT LICENSE-APACHE CHANGELOG.md "$OUT"/
# CommonJS copies of the integrations (fencegate/http, /hono, /express, /otel, /prometheus), and
# ESM copies for Node that import the core through dist/node.mjs.
node scripts/build-integrations.mjs "$OUT"
for m in fencegate fencegate_issuer; do
  raw=$(wc -c < "$OUT/dist/${m}_bg.wasm")
  gz=$(gzip -9 -c "$OUT/dist/${m}_bg.wasm" | wc -c)
  echo "build: $OUT/dist/${m}_bg.wasm ${raw} bytes raw, ${gz} bytes gzip -9${FEATURES:+ (features: $FEATURES)}"
done
