// Opens the two host stores a history client uses on one engine: the resource
// store (behind a Gate) and the issuer store (behind an Issuer), from a
// JSON-able spec (engines.mjs makes them):
//   { kind: 'sqlite', file }                one database file, tables `res` and `iss`
//   { kind: 'redis', url }                  one Redis, key prefixes `res:` and `iss:`
//   { kind: 'pg', url }                     one PostgreSQL database, tables `res` and `iss`
//   { kind: 'etcd', hosts }                 etcd member URLs, key prefixes `res/` and `iss/`
// Every network call has a timeout, so a reply the proxy swallowed ends as an
// error (COMMIT_UNKNOWN for a commit) instead of a hang.
// `broken: true` wraps the resource store in a host whose commit ignores the
// expected version and, for own data, whose fencedTransaction checks outside
// the transaction (the deliberately broken hosts the checker must catch).
// `ownData: true` adds the caller's own data and returns `own` { body(key, opId, value), read(key), log(key) }:
// body is what gate.transaction runs (SQLite, PostgreSQL: a function over the transaction
// handle writing the tables `items` (one row per key: its last value) and `item_log` (one row
// per applied transaction); Redis: the command list writing the hash `items:<key>` (field
// `value`) and the list `item_log:<key>` (one op id per applied transaction)); read(key) and
// log(key) read those back directly. `raw` is the engine's client (the database guard's install).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const adapter = (name) => new URL(`../../pkg/adapters/${name}.mjs`, import.meta.url);
export const TIMEOUT_MS = 2000;

export async function openStores(spec) {
  let res, iss, close, raw;
  let own = null;
  switch (spec.kind) {
    case 'sqlite': {
      const { SqliteStore } = await import(adapter('sqlite'));
      const Database = require('better-sqlite3');
      const db = new Database(spec.file, { timeout: 10000 });
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      res = new SqliteStore(db, { table: 'res' });
      iss = new SqliteStore(db, { table: 'iss' });
      // own data (--own-data): the caller's table `items` (one row per key, the last value written
      // through gate.transaction) and `item_log` (one row per applied transaction: at most once per op id)
      if (spec.ownData) {
        db.exec('CREATE TABLE IF NOT EXISTS items (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL); CREATE TABLE IF NOT EXISTS item_log (op_id TEXT NOT NULL, key TEXT NOT NULL)');
        own = {
          body: (key, opId, value) => (tx) => {
            tx.prepare('INSERT INTO items (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, JSON.stringify(value));
            tx.prepare('INSERT INTO item_log (op_id, key) VALUES (?, ?)').run(opId, key);
          },
          read: async (key) => {
            const row = db.prepare('SELECT value FROM items WHERE key = ?').get(key);
            return row === undefined ? { hasValue: false } : { hasValue: true, value: JSON.parse(row.value) };
          },
          log: async (key) => db.prepare('SELECT op_id FROM item_log WHERE key = ? ORDER BY rowid').pluck().all(key),
        };
      }
      raw = db;
      close = async () => db.close();
      break;
    }
    case 'redis': {
      const { RedisStore } = await import(adapter('redis'));
      const { default: Redis } = await import('ioredis');
      // resend: false makes a reply lost with its connection an error (COMMIT_UNKNOWN for a commit);
      // true is ioredis' default: it sends the command again on the new connection.
      const client = new Redis(spec.url, {
        maxRetriesPerRequest: 1,
        commandTimeout: TIMEOUT_MS,
        connectTimeout: TIMEOUT_MS,
        autoResendUnfulfilledCommands: spec.resend ?? true,
      });
      client.on('error', () => {}); // reconnects on its own; each failed call is logged by the caller
      res = new RedisStore(client, { prefix: 'res:' });
      iss = new RedisStore(client, { prefix: 'iss:' });
      // own data (--own-data): the caller's keys, written by the command list inside the fence script
      if (spec.ownData) {
        own = {
          body: (key, opId, value) => [
            ['HSET', `items:${key}`, 'value', JSON.stringify(value)],
            ['RPUSH', `item_log:${key}`, opId],
          ],
          read: async (key) => {
            const v = await client.hget(`items:${key}`, 'value');
            return v === null ? { hasValue: false } : { hasValue: true, value: JSON.parse(v) };
          },
          log: async (key) => client.lrange(`item_log:${key}`, 0, -1),
        };
      }
      raw = client;
      close = async () => client.disconnect();
      break;
    }
    case 'pg': {
      const { PostgresStore } = await import(adapter('postgres'));
      const { default: pg } = await import('pg');
      const pool = new pg.Pool({ connectionString: spec.url, max: 2, query_timeout: TIMEOUT_MS, connectionTimeoutMillis: TIMEOUT_MS });
      pool.on('error', () => {}); // an idle client cut by the proxy or a restart
      res = new PostgresStore(pool, { table: 'res' });
      iss = new PostgresStore(pool, { table: 'iss' });
      for (let i = 0; ; i++) {
        try {
          await res.init();
          await iss.init();
          break;
        } catch (e) {
          if (i >= 20) throw e;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
      if (spec.ownData) {
        for (let i = 0; ; i++) {
          try {
            await pool.query('CREATE TABLE IF NOT EXISTS items (key TEXT PRIMARY KEY, value TEXT NOT NULL); CREATE TABLE IF NOT EXISTS item_log (n BIGSERIAL PRIMARY KEY, op_id TEXT NOT NULL, key TEXT NOT NULL)');
            break;
          } catch (e) {
            if (i >= 20) throw e;
            await new Promise((r) => setTimeout(r, 200));
          }
        }
        own = {
          body: (key, opId, value) => async (tx) => {
            await tx.query('INSERT INTO items (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value', [key, JSON.stringify(value)]);
            await tx.query('INSERT INTO item_log (op_id, key) VALUES ($1, $2)', [opId, key]);
          },
          read: async (key) => {
            const { rows } = await pool.query('SELECT value FROM items WHERE key = $1', [key]);
            return rows.length === 0 ? { hasValue: false } : { hasValue: true, value: JSON.parse(rows[0].value) };
          },
          log: async (key) => (await pool.query('SELECT op_id FROM item_log WHERE key = $1 ORDER BY n', [key])).rows.map((r) => r.op_id),
        };
      }
      raw = pool;
      close = async () => pool.end();
      break;
    }
    case 'etcd': {
      const { EtcdStore } = await import(adapter('etcd'));
      const { Etcd3, isRecoverableError } = await import('etcd3');
      // etcd3's own cockatiel (not a dependency of ours): the same per-host circuit breaker as its default
      // (open after 3 consecutive failures) but half-open after 250 ms, not 5 s,
      // or one cut connection fails every call fast for 5 s. Its global policy
      // (3 attempts over the hosts, resends included) stays as users get it;
      // each call gets a deadline; gRPC reconnects quickly after a member restart.
      const { circuitBreaker, handleWhen, ConsecutiveBreaker } = createRequire(require.resolve('etcd3'))('cockatiel');
      const client = new Etcd3({
        hosts: spec.hosts,
        faultHandling: { host: () => circuitBreaker(handleWhen(isRecoverableError), { halfOpenAfter: 250, breaker: new ConsecutiveBreaker(3) }) },
        dialTimeout: TIMEOUT_MS,
        defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + TIMEOUT_MS }),
        grpcOptions: { 'grpc.initial_reconnect_backoff_ms': 100, 'grpc.max_reconnect_backoff_ms': 1000 },
      });
      res = new EtcdStore(client, { prefix: 'res/' });
      iss = new EtcdStore(client, { prefix: 'iss/' });
      raw = client;
      close = async () => client.close();
      break;
    }
    default:
      throw new Error(`unknown store kind ${spec.kind}`);
  }
  if (spec.ownData && own === null) throw new Error(`--own-data is not implemented for ${spec.kind}`);
  if (spec.broken) res = brokenHost(res);
  return { res, iss, close, own, raw };
}

/**
 * A compare-and-set host whose commit ignores the expected version: it
 * re-reads the current version (after a short pause that widens the race)
 * and commits over it. Lost updates and a mark that goes back follow.
 */
export function brokenHost(inner) {
  const host = {
    load: (key) => inner.load(key),
    encodeValue: (value) => inner.encodeValue(value),
    async commit(key, _expectedVersion, nextState, change) {
      await new Promise((r) => setTimeout(r, Math.random() * 15));
      if (typeof inner.transaction === 'function') {
        await inner.transaction(key, () => ({ nextState, change }));
        return true;
      }
      const cur = await inner.load(key);
      return inner.commit(key, cur === null ? null : cur.version, nextState, change);
    },
  };
  // own data on Redis: the command list is checked by the store, as the gate asks of any host
  if (typeof inner.checkBody === 'function') host.checkBody = (body) => inner.checkBody(body);
  if (typeof inner.fencedTransaction === 'function') {
    // own data: the check outside the transaction. The fence record is read and
    // decided on a plain read; after a pause the transaction writes the decided
    // state and runs the caller's statements without looking again.
    host.fencedTransaction = async (key, step) => {
      const cur = await inner.load(key);
      const plan = step.decide(cur === null ? null : cur.state);
      if (plan === null) return null;
      await new Promise((r) => setTimeout(r, Math.random() * 15));
      return inner.fencedTransaction(key, { cached: null, decide: () => plan, run: step.run, body: step.body });
    };
  }
  return host;
}

/**
 * Writes `state` as the stored issuer record of `key` (a restore from a
 * backup), through the adapter's own callbacks: a transaction, or
 * load + compare-and-set until it lands. Returns the record it replaced
 * (parsed), read in the same atomic step: the last state of the lost issuer.
 */
export async function putRecord(store, key, state) {
  const parse = (s) => (s === null || s === undefined ? null : typeof s === 'string' ? JSON.parse(s) : s);
  if (typeof store.transaction === 'function') {
    let replaced = null;
    await store.transaction(key, (current) => {
      replaced = parse(current);
      return { nextState: state, change: { kind: 'none' } };
    });
    return replaced;
  }
  for (;;) {
    const cur = await store.load(key);
    if (await store.commit(key, cur === null ? null : cur.version, state, { kind: 'none' })) return cur === null ? null : parse(cur.state);
  }
}
