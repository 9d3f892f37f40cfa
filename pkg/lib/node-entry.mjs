// The Node.js (ESM) entry's code: loads the WebAssembly module synchronously at import.
// scripts/build.sh bundles this file and everything it imports into dist/node.mjs,
// the file `import 'fencegate'` loads on Node (docs/decisions/cold-start.md);
// node.mjs re-exports it unbundled. Both lib/ and dist/ sit one level below the
// package root, so the '../dist/…' URLs below hold from either place.
//
// Node built-ins come through process.getBuiltinModule (Node ≥ 20.16 / 22.3) where it
// exists: an `import` of node:fs makes the ESM loader build a facade of all of fs's
// exports at start-up (docs/decisions/cold-start.md). Older Node takes them from createRequire.
import { createRequire } from 'node:module';
import { initSync, setWebCrypto, setIssuerSource } from './runtime.mjs';

const builtin = (id) => (typeof process.getBuiltinModule === 'function' ? process.getBuiltinModule(id) : createRequire(import.meta.url)(id));
const readFile = (name) => builtin('node:fs').readFileSync(new URL(`../dist/${name}`, import.meta.url));

// Node 18 has no global crypto (lease ids of the Issuer): node:crypto's, loaded on first use.
setWebCrypto(() => builtin('node:crypto').webcrypto);

initSync(readFile('fencegate_bg.wasm'));
// The issuer side, read when an Issuer or reconcile is first used (docs/decisions/two-wasm-modules.md).
setIssuerSource(() => readFile('fencegate_issuer_bg.wasm'));

export * from './core.mjs';
