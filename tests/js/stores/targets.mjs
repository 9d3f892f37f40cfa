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
import { EtcdStore } from '../../../pkg/adapters/etcd.mjs';
import { MysqlStore } from '../../../pkg/adapters/mysql.mjs';
import { MemoryCasStore, MemoryTxStore, LyingCasStore, MemoryCommitFromStore } from './memory-stores.mjs';

const require = createRequire(import.meta.url);

export const REDIS_URL = process.env.FENCEGATE_REDIS_URL;
export const PG_URL = process.env.FENCEGATE_PG_URL;
export const MYSQL_URL = process.env.FENCEGATE_MYSQL_URL;
export const ETCD_URLS = process.env.FENCEGATE_ETCD_URLS;
export const REQUIRE_SERVICES = process.env.FENCEGATE_REQUIRE_SERVICES === '1';

if (REQUIRE_SERVICES && (!REDIS_URL || !PG_URL || !MYSQL_URL || !ETCD_URLS)) {
  throw new Error(
    'FENCEGATE_REQUIRE_SERVICES=1 but FENCEGATE_REDIS_URL / FENCEGATE_PG_URL / FENCEGATE_MYSQL_URL / FENCEGATE_ETCD_URLS are not set (scripts/with-services.sh)',
  );
}

import { uniqueKey } from './keys.mjs';
export { uniqueKey };

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
export const memoryCommitFrom = memoryTarget('memory compare-and-set with commitFrom', 'cas', MemoryCommitFromStore);

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
  ownData: true,
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
      own: ownSqlite(() => dbs[dbs.length - 1], file),
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

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * The caller's own data of a SQL target for the transaction-form cases (cases.mjs OWN_CASES):
 * a table `fg_own (id, v)`; `setup(id)` inserts the row, `write(id, v, sleepMs)` is a body that
 * updates it (after `sleepMs` on an async engine), `read(id)` its value; `other()` a second store
 * for "another process" (`{ store, close }`); `sync`: the body must be synchronous (SQLite).
 */
function ownSqlite(db, file) {
  db().exec('CREATE TABLE IF NOT EXISTS fg_own (id TEXT PRIMARY KEY, v TEXT NOT NULL)');
  return {
    sync: true,
    setup: async (id) => void db().prepare("INSERT INTO fg_own VALUES (?, 'init')").run(id),
    write: (id, v) => (tx) => tx.prepare('UPDATE fg_own SET v = ? WHERE id = ?').run(v, id).changes,
    read: async (id) => db().prepare('SELECT v FROM fg_own WHERE id = ?').pluck().get(id),
    other: async () => {
      // a second connection that does not wait for the write lock (busy at once)
      const Database = require('better-sqlite3');
      const other = new Database(file, { timeout: 0 });
      return { store: new SqliteStore(other), close: async () => other.close() };
    },
  };
}

function ownSql({ create, insert, update, select, exec }) {
  return async (current) => {
    await exec(current(), create, []);
    return {
      sync: false,
      setup: (id) => exec(current(), insert, [id]),
      write: (id, v, sleepMs = 0) => async (tx) => {
        if (sleepMs > 0) await sleep(sleepMs);
        await exec(tx, update, [v, id]);
        return 1; // the rows it changed, as SQLite's body answers
      },
      read: async (id) => (await exec(current(), select, [id]))[0]?.v,
      other: async () => null, // the same pool: another connection of it
    };
  };
}

const pgOwn = ownSql({
  create: 'CREATE TABLE IF NOT EXISTS fg_own (id text PRIMARY KEY, v text NOT NULL)',
  insert: "INSERT INTO fg_own VALUES ($1, 'init')",
  update: 'UPDATE fg_own SET v = $1 WHERE id = $2',
  select: 'SELECT v FROM fg_own WHERE id = $1',
  exec: async (c, text, params) => (await c.query(text, params)).rows,
});
const postgresJsOwn = ownSql({
  create: 'CREATE TABLE IF NOT EXISTS fg_own (id text PRIMARY KEY, v text NOT NULL)',
  insert: "INSERT INTO fg_own VALUES ($1, 'init')",
  update: 'UPDATE fg_own SET v = $1 WHERE id = $2',
  select: 'SELECT v FROM fg_own WHERE id = $1',
  exec: async (sql, text, params) => [...(await sql.unsafe(text, params))],
});
const mysqlOwn = ownSql({
  create: 'CREATE TABLE IF NOT EXISTS fg_own (id VARCHAR(200) PRIMARY KEY, v TEXT NOT NULL) ENGINE=InnoDB',
  insert: "INSERT INTO fg_own VALUES (?, 'init')",
  update: 'UPDATE fg_own SET v = ? WHERE id = ?',
  select: 'SELECT v FROM fg_own WHERE id = ?',
  exec: async (c, text, params) => {
    const [r] = await c.query(text, params);
    return Array.isArray(r) ? r : [];
  },
});

/**
 * `target` with its store's `fencedTransaction` made to lie: it decides on a state read
 * outside the transaction (check-then-act), then writes that decision unconditionally inside
 * one. The transaction-form interleaving case must catch it.
 */
export function lyingFencedTransaction(target) {
  return {
    ...target,
    name: `${target.name}: fencedTransaction checks outside the transaction`,
    async open(options) {
      const t = await target.open(options);
      const real = t.store;
      const lie = (key, step, record) => {
        const plan = step.decide(record === null || record === undefined ? null : record.state);
        if (plan === null) return null;
        return real.fencedTransaction(key, { cached: null, decide: () => plan, run: step.run, body: step.body });
      };
      const store = {
        load: (key) => real.load(key),
        encodeValue: (v) => real.encodeValue(v),
        fencedTransaction: (key, step) => {
          const r = real.load(key);
          return r !== null && typeof r === 'object' && typeof r.then === 'function' ? r.then((x) => lie(key, step, x)) : lie(key, step, r);
        },
      };
      if (typeof real.commit === 'function') store.commit = (...a) => real.commit(...a);
      if (typeof real.transaction === 'function') store.transaction = (...a) => real.transaction(...a);
      return { ...t, store };
    },
  };
}

/**
 * A target's connection, one open at a time: `current()` is the open one; `reopen()` ends it
 * and resolves to a new one from `connect()` (the store reopened); `close()` ends the open one.
 */
async function connections(connect, end) {
  const all = [await connect()];
  const current = () => all[all.length - 1];
  return {
    current,
    reopen: async () => {
      await end(current());
      all.push(await connect());
      return current();
    },
    close: async () => {
      await end(current());
    },
  };
}

/**
 * A SQL store target: `Store` (its table made by `init()`) on a pool from `connect()`, ended
 * with `end()`; `select(pool, key)` gives the key's rows (state, value), `upsert` plants a row.
 */
function sqlTarget({ name, skip, Store, connect, select, upsert, own }) {
  return {
    name,
    shape: 'cas',
    skip,
    ownData: own !== undefined,
    async open(options) {
      const { current, reopen, close } = await connections(connect, (pool) => pool.end());
      const store = await new Store(current(), options).init();
      return {
        store,
        reopen: async () => new Store(await reopen(), options),
        raw: async (key) => {
          const rows = await select(current(), key);
          return rows.length === 0 ? null : { state: rows[0].state, value: rows[0].value };
        },
        putRaw: (key, state, value) => upsert(current(), key, state, value),
        own: own === undefined ? undefined : await own(current),
        close,
      };
    },
  };
}

export async function redisClient() {
  const { default: Redis } = await import('ioredis');
  return new Redis(REDIS_URL, { maxRetriesPerRequest: 2, lazyConnect: false });
}

export const redis = {
  name: 'redis (ioredis)',
  shape: 'cas',
  skip: !REDIS_URL && 'FENCEGATE_REDIS_URL is not set (scripts/services.sh start)',
  async open(options) {
    const { current: c, reopen, close } = await connections(redisClient, (client) => client.disconnect());
    const store = new RedisStore(c(), options);
    return {
      store,
      reopen: async () => new RedisStore(await reopen(), options),
      raw: async (key) => {
        const [state, value, version] = await c().hmget(store.redisKey(key), 'state', 'value', 'version');
        return state === null && value === null && version === null ? null : { state, value };
      },
      putRaw: async (key, state, value) => {
        const k = store.redisKey(key);
        await c().del(k);
        await c().hset(k, 'state', state, 'version', '100', ...(value === null ? [] : ['value', value]));
      },
      close,
    };
  },
};

export async function pgPool() {
  const { default: pg } = await import('pg');
  return new pg.Pool({ connectionString: PG_URL, max: 4 });
}

export const postgres = sqlTarget({
  name: 'postgresql (pg)',
  own: pgOwn,
  skip: !PG_URL && 'FENCEGATE_PG_URL is not set (scripts/services.sh start)',
  Store: PostgresStore,
  connect: pgPool,
  select: async (pool, key) => (await pool.query('SELECT state, value FROM fencegate WHERE key = $1', [key])).rows,
  upsert: async (pool, key, state, value) => {
    await pool.query(
      'INSERT INTO fencegate (key, state, value, version) VALUES ($1, $2, $3, 100) ' +
        'ON CONFLICT (key) DO UPDATE SET state = $2, value = $3, version = 100',
      [key, state, value],
    );
  },
});

/** A connected node-redis (npm `redis`) client. */
export async function nodeRedisClient() {
  const { createClient } = await import('redis');
  const client = createClient({ url: REDIS_URL, socket: { reconnectStrategy: false } });
  client.on('error', () => {}); // surfaced by the command that fails
  await client.connect();
  return client;
}

export const nodeRedis = {
  name: 'redis (node-redis)',
  shape: 'cas',
  skip: !REDIS_URL && 'FENCEGATE_REDIS_URL is not set (scripts/services.sh start)',
  async open(options) {
    const { current: c, reopen, close } = await connections(nodeRedisClient, async (client) => {
      if (client.isOpen) await client.close();
    });
    const store = new RedisStore(c(), options);
    return {
      store,
      reopen: async () => new RedisStore(await reopen(), options),
      raw: async (key) => {
        const [state, value, version] = await c().hmGet(store.redisKey(key), ['state', 'value', 'version']);
        return state === null && value === null && version === null ? null : { state, value };
      },
      putRaw: async (key, state, value) => {
        const k = store.redisKey(key);
        await c().del(k);
        await c().hSet(k, { state, version: '100', ...(value === null ? {} : { value }) });
      },
      close,
    };
  },
};

/** A postgres.js `sql` instance (npm `postgres`), notices silenced. */
export async function postgresJs() {
  const { default: postgresJsClient } = await import('postgres');
  return postgresJsClient(PG_URL, { max: 4, onnotice: () => {} });
}

export const postgresJsTarget = sqlTarget({
  name: 'postgresql (postgres.js)',
  own: postgresJsOwn,
  skip: !PG_URL && 'FENCEGATE_PG_URL is not set (scripts/services.sh start)',
  Store: PostgresStore,
  connect: postgresJs,
  select: (sql, key) => sql`SELECT state, value FROM fencegate WHERE key = ${key}`,
  upsert: async (sql, key, state, value) => {
    await sql`INSERT INTO fencegate (key, state, value, version) VALUES (${key}, ${state}, ${value}, 100)
      ON CONFLICT (key) DO UPDATE SET state = ${state}, value = ${value}, version = 100`;
  },
});

/** A mysql2 promise Pool on FENCEGATE_MYSQL_URL. */
export async function mysqlPool() {
  const mysql = await import('mysql2/promise');
  return mysql.createPool({ uri: MYSQL_URL, connectionLimit: 4 });
}

export const mysql = sqlTarget({
  name: 'mysql (mysql2, MariaDB)',
  own: mysqlOwn,
  skip: !MYSQL_URL && 'FENCEGATE_MYSQL_URL is not set (scripts/services.sh start)',
  Store: MysqlStore,
  connect: mysqlPool,
  select: async (pool, key) => (await pool.execute('SELECT state, value FROM fencegate WHERE k = ?', [key]))[0],
  upsert: async (pool, key, state, value) => {
    await pool.execute(
      'INSERT INTO fencegate (k, state, value, version) VALUES (?, ?, ?, 100) ' +
        'ON DUPLICATE KEY UPDATE state = VALUES(state), value = VALUES(value), version = 100',
      [key, state, value],
    );
  },
});

/**
 * `target` with its store's commit made to lie: it drops the version
 * precondition (commits against whatever version is there now), the bug a
 * conditional UPDATE or Lua check exists to prevent. The conformance suite must catch it.
 */
export function lyingVariant(target) {
  return {
    ...target,
    name: `lying ${target.name} (drops the version precondition)`,
    async open(options) {
      const t = await target.open(options);
      const real = t.store;
      const store = {
        load: (key) => real.load(key),
        encodeValue: (v) => real.encodeValue(v),
        commit: async (key, _expected, next, change) => {
          const now = await real.load(key);
          return real.commit(key, now === null ? null : now.version, next, change);
        },
      };
      return { ...t, store };
    },
  };
}

/**
 * `target` with its store's `commitFrom` made to lie (issue 14): it commits
 * against whatever is stored now (`versionOnly`: it checks the version but not
 * the state text). The cache cases must catch both.
 */
export function lyingCommitFrom(target, versionOnly) {
  return {
    ...target,
    name: `${target.name}: commitFrom ${versionOnly ? 'checks the version only' : 'drops its precondition'}`,
    versionOnly,
    async open(options) {
      const t = await target.open(options);
      const real = t.store;
      const store = {
        load: (key) => real.load(key),
        commit: (...args) => real.commit(...args),
        encodeValue: (v) => real.encodeValue(v),
        commitFrom: async (key, expected, next, change) => {
          const now = await real.load(key);
          if (versionOnly && (now === null ? expected !== null : expected === null || String(now.version) !== String(expected.version))) return false;
          return real.commitFrom(key, now === null ? null : { version: now.version, state: now.state }, next, change);
        },
      };
      return { ...t, store };
    },
  };
}

/** An etcd3 client on every member of the cluster (FENCEGATE_ETCD_URLS, comma-separated). */
export async function etcdClient() {
  const { Etcd3 } = await import('etcd3');
  return new Etcd3({ hosts: ETCD_URLS.split(',') });
}

export const etcd = {
  name: 'etcd 3-member cluster (etcd3)',
  shape: 'cas',
  ownData: true,
  skip: !ETCD_URLS && 'FENCEGATE_ETCD_URLS is not set (scripts/etcd-cluster.sh start)',
  async open(options) {
    const { current: c, reopen, close } = await connections(etcdClient, (client) => client.close());
    const prefix = `${uniqueKey('fg')}/`;
    const store = new EtcdStore(c(), { prefix, ...options });
    // the caller's own keys, outside the store's prefix (which is fencegate's), joined to the fence Txn
    const ownKey = (id) => `own/${prefix}${id}`;
    return {
      store,
      client: c(),
      own: {
        sync: false,
        optimistic: true, // no lock: the Txn compares the fence key at commit
        setup: async (id) => void (await c().put(ownKey(id)).value('init')),
        // the puts join the fence Txn, sent when the body has returned (a sleep holds it back)
        write: (id, v, sleepMs = 0) => async (tx) => {
          if (sleepMs > 0) await sleep(sleepMs);
          tx.put(ownKey(id), v);
          return 1;
        },
        read: async (id) => c().get(ownKey(id)).string(),
        other: async () => null, // the same client: the Txn compare decides between writers
      },
      reopen: async () => new EtcdStore(await reopen(), { prefix, ...options }),
      raw: async (key) => {
        const k = store.etcdKeys(key);
        const [state, value] = await Promise.all([c().get(k.state).string(), c().get(k.value).string()]);
        return state === null && value === null ? null : { state, value };
      },
      putRaw: async (key, state, value) => {
        const k = store.etcdKeys(key);
        await c().put(k.state).value(state);
        if (value === null) await c().delete().key(k.value);
        else await c().put(k.value).value(value);
      },
      close: async () => {
        await c().delete().prefix(prefix);
        await c().delete().prefix(`own/${prefix}`);
        await close();
      },
    };
  },
};

/** Every target the conformance suite must pass. */
export const TARGETS = [memoryCas, memoryCommitFrom, memoryTx, sqlite, redis, nodeRedis, postgres, postgresJsTarget, mysql, etcd];

/** The new adapters and clients whose lying variants the suite must catch (issue 15; etcd, issue 16). */
export const LYING_REAL = [nodeRedis, postgresJsTarget, mysql, etcd].map(lyingVariant);

/**
 * Lying commitFrom variants (issue 14): memory, ioredis, pg and MySQL, each without any check and with the version only;
 * etcd without any check (a planted record always gets a new mod_revision there, so the version-only variant is not
 * caught by a planted record; etcd.test.mjs checks its text compare directly).
 */
export const LYING_COMMIT_FROM = [
  ...[memoryCommitFrom, redis, postgres, mysql].flatMap((t) => [lyingCommitFrom(t, false), lyingCommitFrom(t, true)]),
  lyingCommitFrom(etcd, false),
];

// ---- Objects: S3 (moto's server, an emulator) through @aws-sdk/client-s3 (docs/stores.md "Objects: S3 and R2")
import { S3Store, decodeObjectBody, encodeObjectBody } from '../../../pkg/adapters/s3.mjs';
import { valueCodec } from '../../../pkg/node.mjs';

export const S3_URL = process.env.FENCEGATE_S3_URL;
/** The bucket scripts/services.sh creates. */
export const S3_BUCKET = 'fencegate';

if (REQUIRE_SERVICES && !S3_URL) {
  throw new Error('FENCEGATE_REQUIRE_SERVICES=1 but FENCEGATE_S3_URL is not set (scripts/with-services.sh)');
}

/** An `S3` client on FENCEGATE_S3_URL (path-style, any credentials: moto checks none). */
export async function s3Client(options = {}) {
  const { S3 } = await import('@aws-sdk/client-s3');
  return new S3({
    endpoint: S3_URL, region: 'us-east-1', forcePathStyle: true,
    credentials: { accessKeyId: 'fencegate', secretAccessKey: 'fencegate' }, ...options,
  });
}

const utf8Text = (b) => new TextDecoder('utf-8', { fatal: true }).decode(b);

/** The fenced object at `objectKey` as `{ state, value }` (value: UTF-8 text or null), `{ state: undefined }` for a plain object, or null. */
export async function s3Raw(client, objectKey) {
  let r;
  try {
    r = await client.getObject({ Bucket: S3_BUCKET, Key: objectKey });
  } catch (e) {
    if (e.$metadata?.httpStatusCode === 404) return null;
    throw e;
  }
  const body = decodeObjectBody(await r.Body.transformToByteArray());
  if (body === null) return { state: undefined, value: undefined };
  return { state: body.state, value: body.value === null ? null : utf8Text(body.value) };
}

/**
 * An S3Store target on moto. The conformance cases write JS values, so the
 * store takes a codec (`valueCodec`, the other adapters' default); byte values,
 * the store's default, are tests/js/stores/s3.test.mjs. `lie`: the client drops
 * If-Match / If-None-Match from every PUT (the bug the conformance suite must catch).
 */
function s3Target(name, lie) {
  return {
    name,
    shape: 'cas',
    skip: !S3_URL && 'FENCEGATE_S3_URL is not set (scripts/with-services.sh)',
    async open(options) {
      const real = await s3Client();
      const client = lie
        ? { getObject: (i) => real.getObject(i), putObject: ({ IfMatch, IfNoneMatch, ...i }) => real.putObject(i) }
        : real;
      const prefix = `${uniqueKey('conf')}/`;
      const make = () => new S3Store(client, { bucket: S3_BUCKET, prefix, ...valueCodec, ...options });
      const store = make();
      return {
        store,
        reopen: async () => make(),
        raw: async (key) => {
          let objectKey;
          try {
            objectKey = store.objectKey(key);
          } catch {
            return null; // a key the store refuses cannot have been written
          }
          return s3Raw(real, objectKey);
        },
        putRaw: async (key, state, value) => {
          const body = encodeObjectBody(state, value === null || value === undefined ? null : new TextEncoder().encode(value));
          await real.putObject({ Bucket: S3_BUCKET, Key: store.objectKey(key), Body: body });
        },
        close: async () => real.destroy(),
      };
    },
  };
}

export const s3 = s3Target('S3 (moto server, @aws-sdk/client-s3)', false);
export const lyingS3 = { ...s3Target('lying S3 (the client drops If-Match / If-None-Match)', true) };
TARGETS.push(s3);
LYING_REAL.push(lyingS3);
LYING_COMMIT_FROM.push(lyingCommitFrom(s3, false));

/** The transaction-form liars (check outside the transaction) the suite must catch, one per target with the verb. */
export const LYING_OWN = [...[sqlite, postgres, postgresJsTarget, mysql].map(lyingFencedTransaction), lyingEtcdOwn()];

/**
 * etcd's lying own-data store: it decides on a load and then writes the fence state and the
 * caller's puts without the Txn's compare on the fence key (an optimistic engine's "check outside
 * the transaction": deciding first is how etcd works, committing without the compare is the lie).
 */
function lyingEtcdOwn() {
  return {
    ...etcd,
    name: `${etcd.name}: fencedTransaction writes without the Txn compare`,
    async open(options) {
      const t = await etcd.open(options);
      const real = t.store;
      const client = t.client;
      const store = {
        load: (key) => real.load(key),
        encodeValue: (v) => real.encodeValue(v),
        commit: (...a) => real.commit(...a),
        async fencedTransaction(key, step) {
          const record = await real.load(key);
          const plan = step.decide(record === null ? null : record.state);
          if (plan === null) return null;
          const puts = [];
          const tx = {
            put(k, v) {
              puts.push([k, v]);
              return tx;
            },
          };
          await step.run(tx);
          await client.put(real.etcdKeys(key).state).value(plan.nextStateText);
          for (const [k, v] of puts) await client.put(k).value(v);
          return {};
        },
      };
      return { ...t, store };
    },
  };
}
