// Browser and default entry: call `await init()` once before using the API
// (it fetches dist/fencegate_bg.wasm next to this file, or the URL/bytes you pass).
export * from './lib/core.mjs';
