// Cloudflare Workers (workerd) and Vercel edge entry: edge runtimes refuse to
// compile Wasm from bytes, so the .wasm is imported as a module.
import wasmModule from './dist/fencegate_bg.wasm';
import { initSync } from './lib/runtime.mjs';

initSync(wasmModule);

export * from './lib/core.mjs';
