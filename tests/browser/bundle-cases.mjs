// Bundles tests/browser/conformance-entry.mjs (or another entry) for Chromium: the conformance
// cases use node:assert (npm `assert`, the browser port), Buffer (npm `buffer`)
// and read one fixture (inlined); the package is left to the server.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Bundles `entry` (repository-relative; default the conformance entry) into
 * build/<name>/entry.js; resolves to that file's path on the test server.
 */
export async function bundleCases(entry = 'tests/browser/conformance-entry.mjs', name = 'browser-conformance') {
  const out = join(root, 'build', name);
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'strict.mjs'), "import assert from 'assert';\nexport default assert.strict;\n");
  writeFileSync(join(out, 'globals.mjs'), "export { Buffer } from 'buffer';\nexport const process = { env: {} };\n");
  const fixture = readFileSync(join(root, 'tests/fixtures/state-v1-v3.json'), 'utf8');
  const esbuild = await import(join(root, 'node_modules/esbuild/lib/main.js'));
  await esbuild.build({
    entryPoints: [join(root, entry)], bundle: true, format: 'esm', platform: 'browser',
    outfile: join(out, 'entry.js'), logLevel: 'warning', inject: [join(out, 'globals.mjs')],
    define: { 'import.meta.url': '"http://localhost/tests/js/stores/cases.mjs"' },
    plugins: [{
      name: 'node-for-browser',
      setup(build) {
        build.onResolve({ filter: /^\/pkg\// }, (a) => ({ path: a.path, external: true }));
        build.onResolve({ filter: /pkg\/node\.mjs$/ }, () => ({ path: '/pkg/browser.mjs', external: true }));
        build.onResolve({ filter: /^node:assert\/strict$/ }, () => ({ path: join(out, 'strict.mjs') }));
        build.onResolve({ filter: /^node:fs$/ }, () => ({ path: 'fs', namespace: 'fixture-fs' }));
        build.onLoad({ filter: /.*/, namespace: 'fixture-fs' }, () => ({ contents: `export function readFileSync() { return ${JSON.stringify(fixture)}; }` }));
      },
    }],
  });
  return `/build/${name}/entry.js`;
}
