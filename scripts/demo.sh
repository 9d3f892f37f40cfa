#!/usr/bin/env bash
# The main job: set up, build, pack the npm package, install the tarball into a
# scratch project and replay the seed scenario, the issuer scenario and the
# own-data scenario (a real SQLite orders table) through it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
tarball=$(bash scripts/pack.sh)
demo=build/demo
rm -rf "$demo" && mkdir -p "$demo"
cp examples/seed-scenario.mjs examples/issuer-scenario.mjs examples/orders-scenario.mjs "$demo/"
(cd "$demo" && echo '{"name":"fencegate-demo","private":true,"type":"module"}' > package.json &&
  npm install --no-audit --no-fund --silent "$tarball")
node "$demo/seed-scenario.mjs"
node "$demo/issuer-scenario.mjs"
node "$demo/orders-scenario.mjs"
