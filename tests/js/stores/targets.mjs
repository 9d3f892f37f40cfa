// The stores the conformance suite runs against. Each target opens a host
// store plus raw access to its bytes (to check that rejected and failed
// operations wrote nothing, and to plant corrupt state).
//
// Real engines need FENCEGATE_REDIS_URL / FENCEGATE_PG_URL (scripts/services.sh);
// without them those targets are skipped, unless FENCEGATE_REQUIRE_SERVICES=1.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';

import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';
import { RedisStore } from '../../../pkg/adapters/redis.mjs';
import { PostgresStore } from '../../../pkg/adapters/postgres.mjs';
import { MemoryCasStore, MemoryTxStore, LyingCasStore } from './memory-stores.mjs';

const require = createRequire(import.meta.url);

export const REDIS_URL = process.env.FENCEGATE_REDIS_URL;
export const PG_URL = process.env.FENCEGATE_PG_URL;
export const REQUIRE_SERVICES = process.env.FENCEGATE_REQUIRE_SERVICES === '1';

if (REQUIRE_SERVICES && (!REDIS_URL || !PG_URL)) {
  throw new Error('FENCEGATE_REQUIRE_SERVICES=1 but FENCEGATE_REDIS_URL / FENCEGATE_PG_URL are not set (scripts/services.sh start)');
}

export { uniqueKey } from './keys.mjs';

function memoryTarget(name, shape, Store) {
  return {
    name,
    shape,
    async open(options) {
      const store = new Store(options);
      return {
        store,
        reopen: async () => store, // the same memory is the "file"
        raw: async (key) => {
          const e = store.entries.get(key);
          return e === undefined ? null : { state: e.state, value: e.value ?? null };
        },
        putRaw: async (key, state, value) => {
          store.entries.set(key, { state, value: value ?? undefined, version: 100 });
        },
        close: async () => {},
      };
    },
  };
}

export const memoryCas = memoryTarget('memory compare-and-set', 'cas', MemoryCasStore);
export const memoryTx = memoryTarget('memory transaction', 'transaction', MemoryTxStore);
export const lyingCas = memoryTarget('lying compare-and-set (ignores the expected version)', 'cas', LyingCasStore);

export function openSqlite(file) {
  const Database = require('better-sqlite3');
  const db = new Database(file, { timeout: 20000 });
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  return db;
}

export const sqlite = {
  name: 'sqlite (better-sqlite3)',
  shape: 'transaction',
  async open(options) {
    const dir = mkdtempSync(join(tmpdir(), 'fencegate-sqlite-'));
    const file = join(dir, 'store.db');
    const dbs = [openSqlite(file)];
    const store = new SqliteStore(dbs[0], options);
    const raw = (key) => {
      const row = dbs[dbs.length - 1].prepare('SELECT state, value FROM fencegate WHERE key = ?').get(key);
      return row === undefined ? null : { state: row.state, value: row.value };
    };
    return {
      store,
      file,
      // Close the database and open the same file again: a process restart.
      reopen: async () => {
        dbs[dbs.length - 1].close();
        dbs.push(openSqlite(file));
        return new SqliteStore(dbs[dbs.length - 1], options);
      },
      raw: async (key) => raw(key),
      putRaw: async (key, state, value) => {
        dbs[dbs.length - 1]
          .prepare('INSERT OR REPLACE INTO fencegate (key, state, value, version) VALUES (?, ?, ?, 100)')
          .run(key, state, value);
      },
      close: async () => {
        for (const db of dbs) if (db.open) db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

export async function redisClient() {
  const { default: Redis } = await import('ioredis');
  return new Redis(REDIS_URL, { maxRetriesPerRequest: 2, lazyConnect: false });
}

export const redis = {
  name: 'redis (ioredis)',
  shape: 'cas',
  skip: !REDIS_URL && 'FENCEGATE_REDIS_URL is not set (scripts/services.sh start)',
  async open(options) {
    const clients = [await redisClient()];
    const store = new RedisStore(clients[0], options);
    const c = () => clients[clients.length - 1];
    return {
      store,
      reopen: async () => {
        c().disconnect();
        clients.push(await redisClient());
        return new RedisStore(c(), options);
      },
      raw: async (key) => {
        const [state, value, version] = await c().hmget(store.redisKey(key), 'state', 'value', 'version');
        return state === null && value === null && version === null ? null : { state, value };
      },
      putRaw: async (key, state, value) => {
        const k = store.redisKey(key);
        await c().del(k);
        await c().hset(k, 'state', state, 'version', '100', ...(value === null ? [] : ['value', value]));
      },
      close: async () => {
        for (const client of clients) client.disconnect();
      },
    };
  },
};

export async function pgPool() {
  const { default: pg } = await import('pg');
  return new pg.Pool({ connectionString: PG_URL, max: 4 });
}

export const postgres = {
  name: 'postgresql (pg)',
  shape: 'cas',
  skip: !PG_URL && 'FENCEGATE_PG_URL is not set (scripts/services.sh start)',
  async open(options) {
    const pools = [await pgPool()];
    const store = await new PostgresStore(pools[0], options).init();
    const p = () => pools[pools.length - 1];
    return {
      store,
      reopen: async () => {
        await p().end();
        pools.push(await pgPool());
        return new PostgresStore(p(), options);
      },
      raw: async (key) => {
        const r = await p().query('SELECT state, value FROM fencegate WHERE key = $1', [key]);
        return r.rows.length === 0 ? null : { state: r.rows[0].state, value: r.rows[0].value };
      },
      putRaw: async (key, state, value) => {
        await p().query(
          'INSERT INTO fencegate (key, state, value, version) VALUES ($1, $2, $3, 100) ' +
            'ON CONFLICT (key) DO UPDATE SET state = $2, value = $3, version = 100',
          [key, state, value],
        );
      },
      close: async () => {
        await p().end();
      },
    };
  },
};

/** Every target the conformance suite must pass. */
export const TARGETS = [memoryCas, memoryTx, sqlite, redis, postgres];
