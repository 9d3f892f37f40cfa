// Node.js (ESM) entry, unbundled: loads the WebAssembly module synchronously at import.
// The package's "node" import condition points at dist/node.mjs, the same code bundled
// into one file by scripts/build.sh (docs/decisions/cold-start.md).
export * from './lib/node-entry.mjs';
