// Node.js (ESM) entry: loads the WebAssembly module synchronously at import.
import { readFileSync } from 'node:fs';
import { webcrypto } from 'node:crypto';
import { initSync, setWebCrypto, setIssuerSource } from './lib/runtime.mjs';

setWebCrypto(webcrypto); // Node 18 has no global crypto (lease ids of the Issuer)

initSync(readFileSync(new URL('./dist/fencegate_bg.wasm', import.meta.url)));
// The issuer side, read when an Issuer or reconcile is first used (docs/design.md "Issue 12: two .wasm modules").
setIssuerSource(() => readFileSync(new URL('./dist/fencegate_issuer_bg.wasm', import.meta.url)));

export * from './lib/core.mjs';
