// CommonJS copies of the store adapters (fencegate/memory, /sqlite, /redis, /postgres, /mysql,
// /etcd, /s3, /guard) with their .d.cts types, and ESM copies for Node (the "node" import
// condition; Deno and Bun match it too). Each adapter is bundled with its own modules and the
// shared option checks (lib/options.mjs); the lib/ modules that hold the core's one error class,
// codec and memory store (errors, codec, memory) come from the package's bundle instead
// (dist/fencegate.cjs, dist/node.mjs), so a program mixing `fencegate` and `fencegate/sqlite`
// has one FencegateError (and MemoryHostStore) class and one Wasm instance. Any other lib/
// module is a build error: the bundles do not export it.
// Usage: node scripts/build-adapters.mjs <package dir>
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

const out = resolve(process.argv[2] ?? 'pkg');
const lib = join(out, 'lib');
const dest = join(out, 'dist/adapters');
mkdirSync(dest, { recursive: true });

/** Resolves lib/ imports by the file they name: the bundle's modules external, options.mjs inlined. */
const fromBundle = (bundle) => ({
  name: 'fencegate-adapter-paths',
  setup(b) {
    b.onResolve({ filter: /^\./ }, (args) => {
      const file = resolve(args.resolveDir, args.path);
      if (!file.startsWith(lib + '/')) return undefined; // the adapter's own modules: bundled
      const name = file.slice(lib.length + 1);
      if (name === 'options.mjs') return undefined;
      if (name === 'errors.mjs' || name === 'codec.mjs' || name === 'memory.mjs') return { path: bundle, external: true };
      throw new Error(`${args.importer}: imports lib/${name}, which the package's bundle does not provide`);
    });
  },
});
const common = { bundle: true, platform: 'node', logLevel: 'warning' };

for (const a of ['memory', 'sqlite', 'redis', 'postgres', 'mysql', 'etcd', 's3', 'guard']) {
  await build({ ...common, entryPoints: [join(out, 'adapters', `${a}.mjs`)], format: 'cjs', outfile: join(dest, `${a}.cjs`), plugins: [fromBundle('../fencegate.cjs')] });
  copyFileSync(join(out, 'adapters', `${a}.d.ts`), join(dest, `${a}.d.cts`));
}
for (const a of ['memory', 'sqlite', 'redis', 'postgres', 'mysql', 'etcd', 'deno-kv', 'indexeddb', 's3', 'guard']) {
  await build({ ...common, entryPoints: [join(out, 'adapters', `${a}.mjs`)], format: 'esm', outfile: join(dest, `${a}.mjs`), plugins: [fromBundle('../node.mjs')] });
}
