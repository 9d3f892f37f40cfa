// Source of dist/fencegate.cjs (bundled by scripts/build.sh with esbuild).
export * from './core.mjs';
export { initSync as __initSync, setWebCrypto as __setWebCrypto, setIssuerSource as __setIssuerSource } from './runtime.mjs';
