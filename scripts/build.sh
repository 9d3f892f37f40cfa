#!/usr/bin/env bash
# Builds the npm package in pkg/: Rust → wasm32 → wasm-bindgen (web target) →
# wasm-opt -Oz (npm binaryen; Debian's is too old) → CommonJS bundle (esbuild).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

cargo build --release --target wasm32-unknown-unknown --lib
rm -rf pkg/dist
wasm-bindgen --target web --no-typescript --out-dir pkg/dist --out-name fencegate \
  target/wasm32-unknown-unknown/release/fencegate.wasm
npx --no-install wasm-opt -Oz \
  --enable-bulk-memory --enable-reference-types --enable-nontrapping-float-to-int \
  --enable-sign-ext --enable-multivalue --enable-mutable-globals \
  pkg/dist/fencegate_bg.wasm -o pkg/dist/fencegate_bg.wasm
# CommonJS copy of the API for require(); the ESM glue's import.meta is unused there
# because node.cjs instantiates synchronously from bytes.
npx --no-install esbuild pkg/lib/cjs-entry.mjs --bundle --format=cjs --platform=node \
  --log-override:empty-import-meta=silent --outfile=pkg/dist/fencegate.cjs --log-level=warning
cp pkg/index.d.ts pkg/dist/index.d.cts
# CommonJS copies of the store adapters (fencegate/sqlite, /redis, /postgres); they import nothing.
for a in sqlite redis postgres; do
  npx --no-install esbuild "pkg/adapters/$a.mjs" --format=cjs --platform=node \
    --outfile="pkg/dist/adapters/$a.cjs" --log-level=warning
  cp "pkg/adapters/$a.d.ts" "pkg/dist/adapters/$a.d.cts"
done
raw=$(wc -c < pkg/dist/fencegate_bg.wasm)
gz=$(gzip -9 -c pkg/dist/fencegate_bg.wasm | wc -c)
echo "build: pkg/dist/fencegate_bg.wasm ${raw} bytes raw, ${gz} bytes gzip -9"
