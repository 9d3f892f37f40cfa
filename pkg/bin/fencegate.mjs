#!/usr/bin/env node
// fencegate command line: `fencegate reconcile …` (docs/restore.md).
//
//   npx fencegate reconcile --sqlite app.db --scope orders --keys orders/1,orders/2 [--dry-run]
//   npx fencegate reconcile --redis redis://127.0.0.1:6379 --prefix app: --scope jobs --keys a,b
//   npx fencegate reconcile --postgres postgres://… --table fencegate --scope s --keys k
//
// The issuer's records and the resources' fence records are read from one
// store (as in docs/issuer.md: the issuer's keys are `issuer:<scope>`), or the
// issuer's from another one given with --issuer-sqlite / --issuer-redis /
// --issuer-postgres. Each --scope takes the comma-separated resource keys of
// the --keys that follows it. Prints the JSON report of `reconcile()`.
// Exit status: 0 done (changes or not), 3 done but some keys could not be read
// or repaired (see `errors` in the report), 1 failed (JSON error on stderr), 2 usage.
import { parseArgs } from 'node:util';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const USAGE = `usage: fencegate reconcile (--sqlite FILE | --redis URL | --postgres URL)
         --scope SCOPE --keys KEY[,KEY…] [--scope SCOPE --keys …]
         [--issuer-sqlite FILE | --issuer-redis URL | --issuer-postgres URL]
         [--table NAME] [--prefix PREFIX] [--issuer-table NAME] [--issuer-prefix PREFIX]
         [--key-prefix issuer:] [--epochs number|bigint] [--now MS] [--dry-run]`;

function usage(message) {
  process.stderr.write(`${message ? `fencegate: ${message}\n` : ''}${USAGE}\n`);
  process.exit(2);
}

const json = (value) => JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? v.toString() : v), 2);

/** Loads a peer dependency from the caller's project (where fencegate is installed) or next to the package. */
async function peer(name) {
  for (const base of [path.join(process.cwd(), 'noop.js'), import.meta.url]) {
    try {
      const resolved = createRequire(base).resolve(name);
      const mod = await import(path.isAbsolute(resolved) ? pathToFileURL(resolved).href : resolved);
      return mod.default ?? mod;
    } catch {
      // try the next base
    }
  }
  throw new Error(`the ${name} package is needed for this store: npm install ${name}`);
}

/** Opens the store named by --<pfx>sqlite / --<pfx>redis / --<pfx>postgres, or null. */
async function openStore(values, pfx) {
  const given = ['sqlite', 'redis', 'postgres'].filter((k) => values[pfx + k] !== undefined);
  if (given.length > 1) usage(`give one of --${pfx}sqlite, --${pfx}redis, --${pfx}postgres`);
  if (given.length === 0) return null;
  const target = values[pfx + given[0]];
  const table = values[`${pfx}table`];
  const prefix = values[`${pfx}prefix`];
  switch (given[0]) {
    case 'sqlite': {
      const Database = await peer('better-sqlite3');
      const { SqliteStore } = await import('../adapters/sqlite.mjs');
      const db = new Database(target, { fileMustExist: true, timeout: 5000 });
      return { store: new SqliteStore(db, { ...(table && { table }), createTable: false }), close: () => db.close() };
    }
    case 'redis': {
      const Redis = await peer('ioredis');
      const { RedisStore } = await import('../adapters/redis.mjs');
      const client = new Redis(target, { maxRetriesPerRequest: 2, lazyConnect: false });
      return { store: new RedisStore(client, prefix === undefined ? {} : { prefix }), close: () => client.disconnect() };
    }
    default: {
      const pg = await peer('pg');
      const { PostgresStore } = await import('../adapters/postgres.mjs');
      const pool = new pg.Pool({ connectionString: target, max: 2 });
      return { store: new PostgresStore(pool, table ? { table } : {}), close: () => pool.end() };
    }
  }
}

async function main(argv) {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === undefined) usage();
  if (command !== 'reconcile') usage(`unknown command ${JSON.stringify(command)}`);
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      strict: true,
      options: {
        sqlite: { type: 'string' },
        redis: { type: 'string' },
        postgres: { type: 'string' },
        table: { type: 'string' },
        prefix: { type: 'string' },
        'issuer-sqlite': { type: 'string' },
        'issuer-redis': { type: 'string' },
        'issuer-postgres': { type: 'string' },
        'issuer-table': { type: 'string' },
        'issuer-prefix': { type: 'string' },
        'key-prefix': { type: 'string' },
        epochs: { type: 'string' },
        scope: { type: 'string', multiple: true },
        keys: { type: 'string', multiple: true },
        now: { type: 'string' },
        'dry-run': { type: 'boolean' },
      },
    });
  } catch (e) {
    usage(e.message);
  }
  const { values } = parsed;
  const scopes = values.scope ?? [];
  const keys = values.keys ?? [];
  if (scopes.length === 0 || scopes.length !== keys.length) usage('give each --scope its --keys');
  const mapping = scopes.map((scope, i) => ({ scope, keys: keys[i].split(',').filter((k) => k !== '') }));
  let now;
  if (values.now !== undefined) {
    if (!/^(0|[1-9][0-9]*)$/.test(values.now) || !Number.isSafeInteger(Number(values.now))) usage('--now is host time in ms');
    now = Number(values.now);
  }

  const { Issuer, Gate, reconcile } = await import('../node.mjs');
  const resources = await openStore(values, '');
  if (resources === null) usage('name the store: --sqlite FILE, --redis URL or --postgres URL');
  let issuerStore = null;
  try {
    issuerStore = await openStore(values, 'issuer-');
    const issuer = new Issuer((issuerStore ?? resources).store, {
      ...(values['key-prefix'] !== undefined && { keyPrefix: values['key-prefix'] }),
      ...(values.epochs !== undefined && { epochs: values.epochs }),
    });
    const gate = new Gate(resources.store);
    const report = await reconcile({ issuer, gate, scopes: mapping, now, dryRun: values['dry-run'] === true });
    process.stdout.write(`${json(report)}\n`);
    if (report.errors > 0) process.exitCode = 3;
  } finally {
    await issuerStore?.close();
    await resources.close();
  }
}

main(process.argv.slice(2)).then(
  () => process.exit(process.exitCode ?? 0),
  (e) => {
    process.stderr.write(`${json({ error: { code: e?.code ?? null, message: e?.message ?? String(e) } })}\n`);
    process.exit(1);
  },
);
