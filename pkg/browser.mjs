// Browser and default entry: call `await init()` once before using the API
// (it fetches dist/fencegate_bg.wasm next to this file, or the URL/bytes you pass). The issuer
// side, dist/fencegate_issuer_bg.wasm, is fetched when an Issuer or reconcile is first used.
export * from './lib/core.mjs';
