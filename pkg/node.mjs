// Node.js (ESM) entry: loads the WebAssembly module synchronously at import.
import { readFileSync } from 'node:fs';
import { webcrypto } from 'node:crypto';
import { initSync, setWebCrypto } from './lib/runtime.mjs';

setWebCrypto(webcrypto); // Node 18 has no global crypto (lease ids of the Issuer)

initSync(readFileSync(new URL('./dist/fencegate_bg.wasm', import.meta.url)));

export * from './lib/core.mjs';
