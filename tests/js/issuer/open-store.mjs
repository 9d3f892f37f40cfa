// Opens a host store from a JSON-able spec, so separate processes can share one:
//   { kind: 'file', dir }            FileCasStore (compare-and-set over files; always available)
//   { kind: 'sqlite', file }         SqliteStore, transaction shape (better-sqlite3)
//   { kind: 'redis', url, prefix }   RedisStore, compare-and-set (ioredis)
//   { kind: 'pg', url, table }       PostgresStore, compare-and-set (pg)
// The real engines use the package's adapters (fencegate/sqlite, /redis, /postgres).
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { FileCasStore } from './stores.mjs';

const require = createRequire(import.meta.url);
const adapter = (name) => new URL(`../../../pkg/adapters/${name}.mjs`, import.meta.url);

export async function openStore(spec) {
  switch (spec.kind) {
    case 'memory': {
      const { MemoryHostStore } = await import('../../../pkg/node.mjs');
      return { store: new MemoryHostStore(), close: async () => {} };
    }
    case 'file':
      return { store: new FileCasStore(spec.dir), close: async () => {} };
    case 'sqlite': {
      const { SqliteStore } = await import(adapter('sqlite'));
      const Database = require('better-sqlite3');
      const db = new Database(spec.file, { timeout: 20000 });
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      return { store: new SqliteStore(db), close: async () => db.close() };
    }
    case 'redis': {
      const { RedisStore } = await import(adapter('redis'));
      const { default: Redis } = await import('ioredis');
      const client = new Redis(spec.url, { maxRetriesPerRequest: 2 });
      return { store: new RedisStore(client, { prefix: spec.prefix }), close: async () => client.disconnect() };
    }
    case 'pg': {
      const { PostgresStore } = await import(adapter('postgres'));
      const { default: pg } = await import('pg');
      const pool = new pg.Pool({ connectionString: spec.url, max: 4 });
      const store = await new PostgresStore(pool, { table: spec.table }).init();
      return { store, close: async () => pool.end() };
    }
    default:
      throw new Error(`unknown store kind ${spec.kind}`);
  }
}

function available(module) {
  try {
    require.resolve(module);
    return true;
  } catch {
    return false;
  }
}

/**
 * The stores the multi-process tests run against: `{ name, store: spec }`.
 * Redis and PostgreSQL need FENCEGATE_REDIS_URL / FENCEGATE_PG_URL
 * (scripts/services.sh start); FENCEGATE_REQUIRE_SERVICES=1 makes their absence an error.
 */
export async function storeSpecs(tmpdir, { multiProcess = false } = {}) {
  const specs = [{ name: 'file compare-and-set', store: { kind: 'file', dir: tmpdir('issuer-file') } }];
  if (!multiProcess) specs.unshift({ name: 'MemoryHostStore', store: { kind: 'memory' } });
  const adapters = existsSync(adapter('sqlite'));
  const redisUrl = process.env.FENCEGATE_REDIS_URL;
  const pgUrl = process.env.FENCEGATE_PG_URL;
  if (process.env.FENCEGATE_REQUIRE_SERVICES === '1' && (!adapters || !redisUrl || !pgUrl)) {
    throw new Error('FENCEGATE_REQUIRE_SERVICES=1 but the adapters or FENCEGATE_REDIS_URL / FENCEGATE_PG_URL are missing');
  }
  if (adapters && available('better-sqlite3')) {
    specs.push({ name: 'sqlite (transaction)', store: { kind: 'sqlite', file: `${tmpdir('issuer-sqlite')}/issuer.db` } });
  }
  const run = `${process.pid}${Date.now().toString(36)}`;
  if (adapters && redisUrl && available('ioredis')) {
    specs.push({ name: 'redis (compare-and-set)', store: { kind: 'redis', url: redisUrl, prefix: `fg-issuer-${run}:` } });
  }
  if (adapters && pgUrl && available('pg')) {
    specs.push({ name: 'postgresql (compare-and-set)', store: { kind: 'pg', url: pgUrl, table: `issuer_${run}` } });
  }
  return specs;
}
