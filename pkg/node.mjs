// Node.js (ESM) entry: loads the WebAssembly module synchronously at import.
import { readFileSync } from 'node:fs';
import { initSync } from './lib/runtime.mjs';

initSync(readFileSync(new URL('./dist/fencegate_bg.wasm', import.meta.url)));

export * from './lib/core.mjs';
