// Bundles a Worker as wrangler would (workerd export condition, the .wasm
// imported as a module) and starts it in real workerd through Miniflare.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../../', import.meta.url));

// For the conformance cases, which run in Node too: pkg/node.mjs becomes the
// workerd entry, and node:fs only serves the one fixture cases.mjs reads.
const forCases = {
  name: 'cases-in-workerd',
  setup(build) {
    build.onResolve({ filter: /pkg\/node\.mjs$/ }, () => ({ path: join(root, 'pkg/workerd.mjs') }));
    build.onResolve({ filter: /^node:fs$/ }, () => ({ path: 'fs', namespace: 'fixture-fs' }));
    build.onLoad({ filter: /.*/, namespace: 'fixture-fs' }, () => ({
      contents: `export function readFileSync() { return ${JSON.stringify(readFileSync(join(root, 'tests/fixtures/state-v1-v3.json'), 'utf8'))}; }`,
    }));
  },
};

/**
 * Bundles `entry` (a file, or `{ source }` text) into a fresh build dir whose
 * node_modules/fencegate is pkg/ (so `fencegate/...` resolves through the exports map).
 * Returns `{ dir, out, modules }` for Miniflare.
 */
export async function bundleWorker(entry, name = 'worker') {
  mkdirSync(join(root, 'build'), { recursive: true });
  const dir = mkdtempSync(join(root, 'build', `${name}-`));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(join(root, 'pkg'), join(dir, 'node_modules', 'fencegate'), 'dir');
  let src = entry;
  if (typeof entry === 'object') {
    src = join(dir, 'worker-src.mjs');
    writeFileSync(src, entry.source);
  }
  const out = join(dir, 'out');
  mkdirSync(join(out, 'dist'), { recursive: true });
  const esbuild = await import(join(root, 'node_modules/esbuild/lib/main.js'));
  await esbuild.build({
    entryPoints: [src], bundle: true, format: 'esm', platform: 'neutral', outfile: join(out, 'worker.mjs'),
    conditions: ['workerd', 'worker', 'browser'], mainFields: ['module', 'main'], external: ['*.wasm', 'node:*', 'cloudflare:*'],
    nodePaths: [join(dir, 'node_modules')], plugins: [forCases], define: { 'import.meta.url': '"file:///worker/"' }, logLevel: 'warning', absWorkingDir: dir,
  });
  const modules = [
    { type: 'ESModule', path: join(out, 'worker.mjs'), contents: readFileSync(join(out, 'worker.mjs'), 'utf8') },
    ...wasmModules(join(root, 'pkg'), out),
  ];
  return { dir, out, modules };
}

/**
 * The package's two .wasm files (the resource side and the issuer side, which
 * workerd.mjs imports as modules), copied from `pkg` into `out/dist` and listed
 * as Miniflare CompiledWasm modules, as wrangler's default rule bundles them.
 */
export function wasmModules(pkg, out) {
  return ['fencegate_bg.wasm', 'fencegate_issuer_bg.wasm'].map((f) => {
    copyFileSync(join(pkg, 'dist', f), join(out, 'dist', f));
    return { type: 'CompiledWasm', path: join(out, 'dist', f), contents: readFileSync(join(out, 'dist', f)) };
  });
}

export async function miniflare(bundle, options) {
  const { Miniflare } = await import(join(root, 'node_modules/miniflare/dist/src/index.js'));
  const mf = new Miniflare({ modulesRoot: bundle.out, modules: bundle.modules, compatibilityDate: '2026-04-01', ...options });
  await mf.ready;
  return mf;
}

/**
 * A Miniflare for `src`, bundled inside `project` (a scratch project with the packed
 * fencegate installed in its node_modules) into `out`: the installed package as
 * wrangler would bundle it, its .wasm copied beside the bundle and imported as a module.
 * `options` go to Miniflare as they are.
 */
export async function installedWorker(project, src, out, options = {}) {
  mkdirSync(join(out, 'dist'), { recursive: true });
  const esbuild = await import(join(root, 'node_modules/esbuild/lib/main.js'));
  await esbuild.build({
    entryPoints: [src], bundle: true, format: 'esm', platform: 'neutral', outfile: join(out, 'worker.mjs'),
    conditions: ['workerd', 'worker', 'browser'], mainFields: ['module', 'main'], external: ['*.wasm'], logLevel: 'warning', absWorkingDir: project,
  });
  const { Miniflare } = await import(join(root, 'node_modules/miniflare/dist/src/index.js'));
  return new Miniflare({
    modulesRoot: out,
    modules: [
      { type: 'ESModule', path: join(out, 'worker.mjs'), contents: readFileSync(join(out, 'worker.mjs'), 'utf8') },
      ...wasmModules(join(project, 'node_modules/fencegate'), out),
    ],
    compatibilityDate: '2026-04-01',
    ...options,
  });
}
