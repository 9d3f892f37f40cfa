#!/usr/bin/env node
// fencegate command line: `fencegate reconcile …` (docs/restore.md).
//
//   npx fencegate reconcile --sqlite app.db --scope orders --key orders/1 --key orders/2 [--dry-run]
//   npx fencegate reconcile --redis redis://127.0.0.1:6379 --prefix app: --scope jobs --key a --key b
//   npx fencegate reconcile --postgres postgres://… --table fencegate --scopes scopes.json
//   npx fencegate reconcile --mysql mysql://user:password@127.0.0.1:3306/app --scopes scopes.json
//
// The issuer's records and the resources' fence records are read from one
// store (as in docs/issuer.md: the issuer's keys are `issuer:<scope>`), or the
// issuer's from another one given with --issuer-sqlite / --issuer-redis /
// --issuer-postgres / --issuer-mysql. Each --key names one resource key of the --scope before
// it, exactly as given (any character, commas included); --scopes FILE reads
// `{ "scope": ["key", …] }` (or `[{ "scope", "keys" }]`) as JSON instead. The
// old comma-separated --keys is refused: it cannot name a key with a comma,
// and a key it split wrongly could raise an issuer from a key nobody named.
// Prints the JSON report of `reconcile()`.
// Exit status: 0 done (changes or not), 3 done but some keys could not be read
// or repaired (see `errors` in the report), 1 failed (JSON error on stderr), 2
// usage: a malformed command line (the usage text), or an argument's value the
// library refused before anything was written (INVALID_ARGUMENT: a bad key,
// table name or --scopes entry; the JSON error on stderr). One rule: 2 is what
// the caller must change in the command, 1 what went wrong while running it.
//
// No password reaches stdout or stderr: every secret the store URLs (or
// PGPASSWORD / REDISCLI_AUTH / MYSQL_PWD) carry is masked in everything printed, URL
// passwords of any other form too, and the drivers' error events are listened
// to (no "Unhandled error event" print of a connection string).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { secretsIn, redact, parseCommand, UsageError } from './args.mjs';

const USAGE = `usage: fencegate reconcile (--sqlite FILE | --redis URL | --postgres URL | --mysql URL)
         (--scope SCOPE --key KEY [--key KEY…] [--scope SCOPE --key …] | --scopes FILE.json)
         [--issuer-sqlite FILE | --issuer-redis URL | --issuer-postgres URL | --issuer-mysql URL]
         [--table NAME] [--prefix PREFIX] [--issuer-table NAME] [--issuer-prefix PREFIX]
         [--key-prefix issuer:] [--epochs number|bigint] [--now MS] [--dry-run]
       fencegate guard (--postgres URL | --mysql URL | --sqlite FILE) --table NAME --key SQL
         [--fence-table NAME] [--dry-run]
       fencegate guard (--postgres URL | --mysql URL | --sqlite FILE) --remove [--table NAME] [--fence]
         [--fence-table NAME] [--dry-run]
       fencegate --help

  --key KEY          one resource key of the --scope before it, exactly as written (repeat it)
  --scopes FILE      JSON: { "scope": ["key", …] } or [{ "scope": "…", "keys": ["…"] }]
  Exit status: 0 done, 3 done but some keys could not be read or repaired,
  1 failed (JSON error on stderr), 2 usage (a bad command line, or an argument
  the library refused: JSON error with code INVALID_ARGUMENT). See docs/restore.md.
  guard: installs (or --remove removes) the database guard of a protected table: a change to
  a row is refused unless its transaction passed the fence for the row's key (--key, an SQL
  expression over the row, e.g. "'orders/' || id"); --dry-run prints the SQL and changes
  nothing. Prints { engine, table, fenceTable } as JSON. See docs/guard.md.`;

export { secretsIn, redact };

const SECRETS = secretsIn(process.argv.slice(2), process.env);
const rawOut = process.stdout.write.bind(process.stdout);
const rawErr = process.stderr.write.bind(process.stderr);
/** Anything else printed (a driver's console output, a warning) is masked too. */
function masked(raw) {
  return (chunk, ...rest) => raw(typeof chunk === 'string' || chunk instanceof Uint8Array ? redact(Buffer.from(chunk).toString('utf8'), SECRETS) : chunk, ...rest);
}
process.stdout.write = masked(rawOut);
process.stderr.write = masked(rawErr);

function usage(message) {
  rawErr(`${message ? `fencegate: ${redact(message, SECRETS)}\n` : ''}${USAGE}\n`);
  process.exit(2);
}

const json = (value) => JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? v.toString() : v), 2);

/** The report with secrets masked in its strings only (numbers stay numbers, the JSON stays valid). */
function redactStrings(value) {
  if (typeof value === 'string') return redact(value, SECRETS);
  if (Array.isArray(value)) return value.map(redactStrings);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [redact(k, SECRETS), redactStrings(v)]));
  }
  return value;
}

/** The last error event of a store driver (a connection failure behind "Connection is closed."). */
let lastDriverError = null;

/** Prints a failure as a JSON error on stderr (masked) and exits 1, or 2 for INVALID_ARGUMENT (an argument to change: a usage error). */
function fail(e) {
  let code = null;
  let message;
  try {
    code = typeof e?.code === 'string' ? e.code : null;
    message = typeof e?.message === 'string' ? e.message : typeof e === 'string' ? e : 'an error without a message';
  } catch {
    message = 'an error that cannot be read';
  }
  const driver = typeof lastDriverError?.message === 'string' ? { driver: lastDriverError.message } : {};
  rawErr(`${redact(json({ error: { code, message, ...driver } }), SECRETS)}\n`);
  process.exit(code === 'INVALID_ARGUMENT' ? 2 : 1);
}
process.on('uncaughtException', fail);
process.on('unhandledRejection', fail);

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

/** Opens a store parsed by parseCommand (`{ kind, target, table, prefix }`: sqlite, redis, postgres or mysql), or null. */
async function openStore(spec) {
  if (spec === null) return null;
  const { target, table, prefix } = spec;
  switch (spec.kind) {
    case 'sqlite': {
      const { SqliteStore } = await import('../adapters/sqlite.mjs');
      let db;
      if (process.versions.bun) {
        // Bun cannot load better-sqlite3 (a V8 addon); its built-in bun:sqlite has the same API
        const { Database } = await import('bun:sqlite');
        db = new Database(target, { readwrite: true, create: false });
        db.exec('PRAGMA busy_timeout = 5000');
      } else {
        const Database = await peer('better-sqlite3');
        db = new Database(target, { fileMustExist: true, timeout: 5000 });
      }
      return { store: new SqliteStore(db, { ...(table && { table }), createTable: false }), close: () => db.close() };
    }
    case 'redis': {
      const Redis = await peer('ioredis');
      const { RedisStore } = await import('../adapters/redis.mjs');
      // A few quick reconnects, then give up (the command fails with a masked JSON error).
      const client = new Redis(target, { maxRetriesPerRequest: 2, lazyConnect: false, retryStrategy: (n) => (n > 2 ? null : 100) });
      client.on('error', (e) => { lastDriverError = e; }); // reported (masked) with the failure; never ioredis's own print
      return { store: new RedisStore(client, prefix === undefined ? {} : { prefix }), close: () => client.disconnect() };
    }
    case 'mysql': {
      const mysql = await peer('mysql2/promise');
      const { MysqlStore } = await import('../adapters/mysql.mjs');
      const pool = mysql.createPool({ uri: target, connectionLimit: 2, connectTimeout: 10000 });
      return { store: new MysqlStore(pool, table ? { table } : {}), close: () => pool.end() };
    }
    default: {
      const pg = await peer('pg');
      const { PostgresStore } = await import('../adapters/postgres.mjs');
      const pool = new pg.Pool({ connectionString: target, max: 2, connectionTimeoutMillis: 10000 });
      pool.on('error', (e) => { lastDriverError = e; }); // an idle client's error: reported (masked) with the failure
      return { store: new PostgresStore(pool, table ? { table } : {}), close: () => pool.end() };
    }
  }
}

/** `fencegate guard`: install or remove the guard (docs/guard.md); --dry-run prints the SQL only. */
async function guard(cmd) {
  const { installGuard, removeGuard } = await import('../adapters/guard.mjs');
  const { kind, target } = cmd.store;
  let client;
  let close;
  if (kind === 'sqlite') {
    const Database = await peer('better-sqlite3');
    client = new Database(target, { fileMustExist: true, timeout: 5000 });
    close = () => client.close();
  } else if (kind === 'mysql') {
    const mysql = await peer('mysql2/promise');
    client = mysql.createPool({ uri: target, connectionLimit: 1, connectTimeout: 10000 });
    close = () => client.end();
  } else {
    const pg = await peer('pg');
    client = new pg.Pool({ connectionString: target, max: 1, connectionTimeoutMillis: 10000 });
    client.on('error', (e) => { lastDriverError = e; });
    close = () => client.end();
  }
  try {
    const options = {
      ...(cmd.table !== undefined && { table: cmd.table }),
      ...(cmd.fenceTable !== undefined && { fenceTable: cmd.fenceTable }),
      ...(cmd.dryRun && { dryRun: true }),
    };
    const done = cmd.remove
      ? await removeGuard(client, { ...options, ...(cmd.fence && { fence: true }) })
      : await installGuard(client, { ...options, key: cmd.key });
    if (cmd.dryRun) rawOut(done.sql);
    else rawOut(`${json({ engine: done.engine, table: done.table ?? null, fenceTable: done.fenceTable, removed: cmd.remove })}\n`);
  } finally {
    await close();
  }
}

async function main(argv) {
  let cmd;
  try {
    cmd = parseCommand(argv, (file) => readFileSync(file, 'utf8'));
  } catch (e) {
    if (e instanceof UsageError) usage(e.message);
    throw e;
  }
  if (cmd.help) {
    rawOut(`${USAGE}\n`);
    return;
  }
  if (cmd.command === 'guard') {
    await guard(cmd);
    return;
  }
  const { scopes: mapping, now } = cmd;

  const { Issuer, Gate, reconcile } = await import('../node.mjs');
  const resources = await openStore(cmd.resources);
  let issuerStore = null;
  try {
    issuerStore = await openStore(cmd.issuerStore);
    const issuer = new Issuer((issuerStore ?? resources).store, {
      ...(cmd.keyPrefix !== undefined && { keyPrefix: cmd.keyPrefix }),
      ...(cmd.epochs !== undefined && { epochs: cmd.epochs }),
    });
    const gate = new Gate(resources.store);
    const report = await reconcile({ issuer, gate, scopes: mapping, now, dryRun: cmd.dryRun });
    rawOut(`${json(redactStrings(report))}\n`);
    if (report.errors > 0) process.exitCode = 3;
  } finally {
    await issuerStore?.close();
    await resources.close();
  }
}

main(process.argv.slice(2)).then(() => process.exit(process.exitCode ?? 0), fail);
