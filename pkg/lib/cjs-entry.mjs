// Source of dist/fencegate.cjs (bundled by scripts/build.sh with esbuild).
export * from './core.mjs';
export { initSync as __initSync } from './runtime.mjs';
