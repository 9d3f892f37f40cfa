// The Node ESM entry as one file, dist/node.mjs (docs/design.md "Issue 14: cold start"): the
// "node" import condition of "." points there, so `import 'fencegate'` on Node loads one JS
// module instead of about fifteen. lib/node-entry.mjs reaches the .wasm as '../dist/…', which
// holds from dist/ too.
//
// Two parts that a first verdict never runs stay out of the start-up parse, each in a CommonJS
// file beside the bundle that the bundle requires on first use: devalue (dist/devalue.cjs: the
// default codec's non-JSON values) and the issuer side's glue (dist/fencegate_issuer_node.cjs:
// loaded with the issuer side's .wasm, on the first Issuer or reconcile). Both hold no state
// shared with lib/ (devalue is pure functions; the glue holds only its own Wasm instance, and
// this file is required by dist/node.mjs alone, so it stays one instance per realm).
//
// --minify-whitespace --minify-syntax (names kept, for stack traces) drop the comments: esbuild
// keeps some verbatim, and one non-ASCII character in them makes V8 hold and scan the whole
// source as two-byte text.
// Usage: node scripts/build-node-esm.mjs <package dir>
import { build } from 'esbuild';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const out = resolve(process.argv[2] ?? 'pkg');
const dist = join(out, 'dist');
const compact = { minifyWhitespace: true, minifySyntax: true, logLevel: 'warning' };

const glue = await import(pathToFileURL(join(dist, 'fencegate_issuer.js')).href);
const names = Object.keys(glue).filter((k) => k !== 'default');
if (!names.includes('initSync')) throw new Error('build-node-esm: the issuer glue has no initSync');
const lazy = (file, body) => `import { createRequire } from 'node:module';
let m;
const load = () => (m ??= createRequire(import.meta.url)('./${file}'));
${body}`;
const shims = {
  'fencegate_issuer.js': lazy(
    'fencegate_issuer_node.cjs',
    `export default (...a) => load().default(...a);\n${names.map((n) => `export function ${n}(...a) { return load().${n}(...a); }`).join('\n')}\n`,
  ),
  'devalue.mjs': lazy('devalue.cjs', 'export const stringify = (...a) => load().stringify(...a);\nexport const parse = (...a) => load().parse(...a);\n'),
};

await build({
  entryPoints: [join(out, 'lib/node-entry.mjs')], bundle: true, format: 'esm', platform: 'node', outfile: join(dist, 'node.mjs'), ...compact,
  plugins: [{
    name: 'fencegate-lazy-parts',
    setup(b) {
      b.onResolve({ filter: /^\.\.\/dist\/(fencegate_issuer\.js|devalue\.mjs)$/ }, (a) => ({ path: a.path.slice('../dist/'.length), namespace: 'lazy' }));
      b.onLoad({ filter: /.*/, namespace: 'lazy' }, (a) => ({ contents: shims[a.path], loader: 'js', resolveDir: dist }));
    },
  }],
});
await build({
  entryPoints: [join(dist, 'fencegate_issuer.js')], bundle: true, format: 'cjs', platform: 'node', outfile: join(dist, 'fencegate_issuer_node.cjs'), ...compact,
  logOverride: { 'empty-import-meta': 'silent' }, // only its async init reads import.meta.url; Node instantiates from bytes
});
await build({ entryPoints: [join(dist, 'devalue.mjs')], bundle: true, format: 'cjs', platform: 'node', outfile: join(dist, 'devalue.cjs'), ...compact });
