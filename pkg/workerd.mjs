// Cloudflare Workers (workerd) and Vercel edge entry: edge runtimes refuse to
// compile Wasm from bytes, so the .wasm is imported as a module.
import wasmModule from './dist/fencegate_bg.wasm';
import issuerModule from './dist/fencegate_issuer_bg.wasm';
import { initSync, setIssuerSource } from './lib/runtime.mjs';

initSync(wasmModule);
// The issuer side: compiled with the Worker, instantiated when an Issuer or reconcile is first used.
setIssuerSource(() => issuerModule);

export * from './lib/core.mjs';
