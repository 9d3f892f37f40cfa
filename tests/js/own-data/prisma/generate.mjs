// Generates the Prisma 7 client of schema.prisma into a directory and bundles it (with
// @prisma/adapter-pg and pg) into one ES module, from the npm packages alone:
//   node tests/js/own-data/prisma/generate.mjs OUT_DIR   → OUT_DIR/prisma.mjs
// exporting { PrismaClient, PrismaPg }.
//
// `prisma generate` first tries to download its schema engine from binaries.prisma.sh (outside
// the npm registry). The client itself needs no engine binary (Prisma 7 runs queries through the
// query compiler, Wasm inside @prisma/client, and a driver adapter); the schema engine is only for
// migrations. PRISMA_SCHEMA_ENGINE_BINARY pointing at a stub that exits 1 lets generate run offline.
// The generated client is TypeScript (.ts imports): esbuild bundles it, since Node 20 cannot strip types.
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../../../..');

/** Generates and bundles the client into `outDir`; answers the file URL of the bundle. */
export async function generatePrisma(outDir) {
  mkdirSync(outDir, { recursive: true });
  const schema = join(outDir, 'schema.prisma');
  copyFileSync(join(here, 'schema.prisma'), schema); // its `output = "./generated"` lands in outDir
  const stub = join(outDir, 'no-schema-engine.sh');
  writeFileSync(stub, '#!/bin/sh\necho "schema engine not installed (offline test set-up: generate only)" >&2\nexit 1\n');
  chmodSync(stub, 0o755);
  const cli = join(root, 'node_modules/prisma/build/index.js');
  const env = { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: stub, CHECKPOINT_DISABLE: '1', PRISMA_HIDE_UPDATE_MESSAGE: '1', NO_COLOR: '1' };
  const r = spawnSync(process.execPath, [cli, 'generate', '--schema', schema], { cwd: root, env, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`prisma generate failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  const entry = join(outDir, 'entry.ts');
  writeFileSync(entry, "export { PrismaClient } from './generated/client.ts';\nexport { PrismaPg } from '@prisma/adapter-pg';\n");
  const outfile = join(outDir, 'prisma.mjs');
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    nodePaths: [join(root, 'node_modules')],
    // the bundled CommonJS parts (pg) call require()
    banner: { js: "import { createRequire as __fgRequire } from 'node:module'; const require = __fgRequire(import.meta.url);" },
    logLevel: 'error',
  });
  return pathToFileURL(outfile).href;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = process.argv[2];
  if (!out) {
    console.error('usage: node tests/js/own-data/prisma/generate.mjs OUT_DIR');
    process.exit(2);
  }
  console.log(await generatePrisma(resolve(out)));
}
