// The two Node bundles (docs/decisions/cold-start.md):
// - dist/node.mjs, the Node ESM entry as one file: the "node" import condition of "." points
//   there, so `import 'fencegate'` on Node loads one JS module instead of about fifteen.
//   lib/node-entry.mjs reaches the .wasm as '../dist/…', which holds from dist/ too.
// - dist/fencegate.cjs, the API for require() (node.cjs instantiates it from bytes).
//
// Two parts that a first verdict never runs stay out of the start-up parse, in CommonJS files
// beside the bundles that they require on first use: devalue (dist/devalue.cjs: the default
// codec's non-JSON values; pure functions, so both bundles share it) and the issuer side's glue,
// loaded with the issuer side's .wasm on the first Issuer or reconcile. The glue holds a Wasm
// instance and the FencegateError class its errors use, so each bundle has its own copy
// (dist/fencegate_issuer_node.cjs for the ESM one, dist/fencegate_issuer_cjs.cjs for the
// CommonJS one): a program that both imports and requires fencegate already has two of
// everything, and must not have their issuer sides share one error class.
//
// The bundles' lib/runtime.mjs gets the resource module's `__tables()` (its names and limits) as a
// literal, read here from the same .wasm, in place of `const BUILD_TABLES = null;`, so the
// import makes no `__tables()` call: that first call (its code compiled and run once) is a
// measured part of import → first verdict, which the cold-start target keeps from growing
// (docs/decisions/names-from-rust.md, docs/decisions/cold-start.md). The unbundled entries
// (workerd, browsers, lib/) still read it from Wasm at instantiation.
//
// --minify-whitespace --minify-syntax (names kept, for stack traces) drop the comments: esbuild
// keeps some verbatim, and one non-ASCII character in them makes V8 hold and scan the whole
// source as two-byte text.
// Usage: node scripts/build-node.mjs <package dir>
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const out = resolve(process.argv[2] ?? 'pkg');
const dist = join(out, 'dist');
const compact = { minifyWhitespace: true, minifySyntax: true, logLevel: 'warning' };

const glue = await import(pathToFileURL(join(dist, 'fencegate_issuer.js')).href);
const names = Object.keys(glue).filter((k) => k !== 'default');
if (!names.includes('initSync')) throw new Error('build-node: the issuer glue has no initSync');
// A stand-in for a module, forwarding each export to the CommonJS file `file`, required on first use.
const lazy = (esm, file, body) => `${esm ? "import { createRequire } from 'node:module';\n" : ''}let m;
const load = () => (m ??= ${esm ? 'createRequire(import.meta.url)' : 'require'}('./${file}'));
${body}`;
const glueBody = `export default (...a) => load().default(...a);\n${names.map((n) => `export function ${n}(...a) { return load().${n}(...a); }`).join('\n')}\n`;
const devalueBody = 'export const stringify = (...a) => load().stringify(...a);\nexport const parse = (...a) => load().parse(...a);\n';
const lazyParts = (esm) => ({
  name: 'fencegate-lazy-parts',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/dist\/(fencegate_issuer\.js|devalue\.mjs)$/ }, (a) => ({ path: a.path.slice('../dist/'.length), namespace: 'lazy' }));
    b.onResolve({ filter: /^\.\/(devalue|fencegate_issuer_(node|cjs))\.cjs$/ }, (a) => ({ path: a.path, external: true }));
    b.onLoad({ filter: /.*/, namespace: 'lazy' }, (a) => ({
      contents: a.path === 'devalue.mjs' ? lazy(esm, 'devalue.cjs', devalueBody) : lazy(esm, `fencegate_issuer_${esm ? 'node' : 'cjs'}.cjs`, glueBody),
      loader: 'js',
      resolveDir: dist,
    }));
  },
});
const resource = await import(pathToFileURL(join(dist, 'fencegate.js')).href);
resource.initSync({ module: readFileSync(join(dist, 'fencegate_bg.wasm')) });
const tablesLiteral = `const BUILD_TABLES = ${JSON.stringify(resource.__tables())};`;
const buildTables = {
  name: 'fencegate-build-tables',
  setup(b) {
    b.onLoad({ filter: /[\\/]lib[\\/]runtime\.mjs$/ }, (a) => {
      const source = readFileSync(a.path, 'utf8');
      const parts = source.split('const BUILD_TABLES = null;');
      if (parts.length !== 2) throw new Error('build-node: lib/runtime.mjs has no single `const BUILD_TABLES = null;`');
      return { contents: parts.join(tablesLiteral), loader: 'js' };
    });
  },
};
// Only the glue's async init reads import.meta.url (browsers); Node instantiates from bytes.
const noImportMeta = { 'empty-import-meta': 'silent' };

await build({
  entryPoints: [join(out, 'lib/node-entry.mjs')], bundle: true, format: 'esm', platform: 'node', outfile: join(dist, 'node.mjs'), ...compact,
  plugins: [lazyParts(true), buildTables],
});
await build({
  entryPoints: [join(out, 'lib/cjs-entry.mjs')], bundle: true, format: 'cjs', platform: 'node', outfile: join(dist, 'fencegate.cjs'), ...compact,
  plugins: [lazyParts(false), buildTables], logOverride: noImportMeta,
});
for (const copy of ['node', 'cjs']) {
  await build({
    entryPoints: [join(dist, 'fencegate_issuer.js')], bundle: true, format: 'cjs', platform: 'node', outfile: join(dist, `fencegate_issuer_${copy}.cjs`), ...compact,
    logOverride: noImportMeta,
  });
}
await build({ entryPoints: [join(dist, 'devalue.mjs')], bundle: true, format: 'cjs', platform: 'node', outfile: join(dist, 'devalue.cjs'), ...compact });
