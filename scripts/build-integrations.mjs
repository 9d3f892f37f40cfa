// CommonJS copies of the integration subpaths (fencegate/http, /hono, /express,
// /otel, /prometheus) for require(), with their .d.cts types. Each ESM module is
// converted on its own: imports of the other integration modules become
// require('./NAME.cjs'), the core (lib/core.mjs, and lib/errors.mjs, which the inlined
// option checks of lib/options.mjs import) becomes require('../../node.cjs'),
// so a CommonJS program shares one core (and one FencegateError class) with
// require('fencegate'); packages (@opentelemetry/api, prom-client) stay external.
// ESM copies beside them (NAME.mjs) do the same for Node's "node" import condition, with
// the core from dist/node.mjs, the ESM bundle.
// Usage: node scripts/build-integrations.mjs <package dir>
import { build } from 'esbuild';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const out = resolve(process.argv[2] ?? 'pkg');
const src = join(out, 'integrations');
const lib = join(out, 'lib');
/** The lib/ module an import names ('core.mjs', 'options.mjs', …), or null for any other path. */
const libModule = (args) => {
  if (!args.path.startsWith('.')) return null;
  const file = resolve(args.resolveDir, args.path);
  return file.startsWith(lib + '/') ? file.slice(lib.length + 1) : null;
};
const dest = join(out, 'dist/integrations');
mkdirSync(dest, { recursive: true });

const redirect = {
  name: 'fencegate-cjs-paths',
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      const m = libModule(args);
      if (m === 'core.mjs' || m === 'errors.mjs') return { path: '../../node.cjs', external: true };
      if (m === 'options.mjs') return undefined; // the shared option checks: inlined
      const sibling = /^\.\/([a-z]+)\.mjs$/.exec(args.path);
      if (sibling) return { path: `./${sibling[1]}.cjs`, external: true };
      if (args.path.startsWith('.')) throw new Error(`${args.importer}: unexpected relative import ${args.path}`);
      return { path: args.path, external: true };
    });
  },
};

// The ESM copies for Node (the "node" import condition): the core is the ESM bundle
// dist/node.mjs, the one `import 'fencegate'` loads there; siblings stay ESM.
const redirectEsm = {
  name: 'fencegate-node-esm-paths',
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      const m = libModule(args);
      if (m === 'core.mjs' || m === 'errors.mjs') return { path: '../node.mjs', external: true };
      if (m === 'options.mjs') return undefined; // the shared option checks: inlined
      if (/^\.\/[a-z]+\.mjs$/.test(args.path)) return { path: args.path, external: true };
      if (args.path.startsWith('.')) throw new Error(`${args.importer}: unexpected relative import ${args.path}`);
      return { path: args.path, external: true };
    });
  },
};

for (const file of readdirSync(src).filter((f) => f.endsWith('.mjs'))) {
  await build({
    entryPoints: [join(src, file)], bundle: true, format: 'esm', platform: 'node', target: 'node18',
    outfile: join(dest, file), plugins: [redirectEsm], logLevel: 'warning',
  });

  const name = file.slice(0, -4);
  await build({
    entryPoints: [join(src, file)], bundle: true, format: 'cjs', platform: 'node', target: 'node18',
    outfile: join(dest, `${name}.cjs`), plugins: [redirect], logLevel: 'warning',
  });
  // types: the same declarations; sibling imports point at the .d.cts copies
  const types = readFileSync(join(src, `${name}.d.ts`), 'utf8').replace(/from '\.\/([a-z]+)\.js'/g, "from './$1.cjs'");
  writeFileSync(join(dest, `${name}.d.cts`), types);
}
