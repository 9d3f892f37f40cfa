#!/usr/bin/env bash
# Packs pkg/ with `npm pack` into build/ and prints the tarball's path.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
rm -f build/fencegate-*.tgz
(cd pkg && npm pack --silent --pack-destination ../build >/dev/null)
ls "$PWD"/build/fencegate-*.tgz
