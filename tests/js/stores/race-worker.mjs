// One OS process of the concurrency test: opens its own connection to the
// engine, waits for "go", then runs a seeded mix of writes, deletes and
// establishes with current and stale tokens on a few shared keys, and sends
// back every attempt with CLOCK_MONOTONIC times (comparable across processes).
// About 1 commit in 5 is made "unknown": the reply is lost after the commit
// landed, or the connection "fails" before it; the op is then retried with the
// same token until it gets a verdict.
import { Gate } from '../../../pkg/node.mjs';
import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';
import { RedisStore } from '../../../pkg/adapters/redis.mjs';
import { PostgresStore } from '../../../pkg/adapters/postgres.mjs';
import { MysqlStore } from '../../../pkg/adapters/mysql.mjs';
import { EtcdStore } from '../../../pkg/adapters/etcd.mjs';
import { openSqlite, redisClient, pgPool, nodeRedisClient, postgresJs, mysqlPool, etcdClient } from './targets.mjs';

const now = () => process.hrtime.bigint();

function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

async function open(engine, config) {
  if (engine === 'sqlite') {
    const db = openSqlite(config.file);
    return { store: new SqliteStore(db), close: async () => db.close() };
  }
  if (engine === 'redis') {
    const client = await redisClient();
    return { store: new RedisStore(client, { prefix: config.prefix }), close: async () => client.disconnect() };
  }
  if (engine === 'node-redis') {
    const client = await nodeRedisClient();
    return { store: new RedisStore(client, { prefix: config.prefix }), close: () => client.close() };
  }
  if (engine === 'postgres-js') {
    const sql = await postgresJs();
    return { store: new PostgresStore(sql, { table: config.table }), close: () => sql.end() };
  }
  if (engine === 'mysql') {
    const pool = await mysqlPool();
    return { store: new MysqlStore(pool, { table: config.table }), close: () => pool.end() };
  }
  if (engine === 'etcd') {
    const client = await etcdClient();
    return { store: new EtcdStore(client, { prefix: config.prefix }), close: async () => client.close() };
  }
  const pool = await pgPool();
  return { store: new PostgresStore(pool, { table: config.table }), close: () => pool.end() };
}

/** Wraps the commit step so that some commits come back "unknown"; records whether it landed. */
function flaky(store, random, rate, note) {
  const lost = () => Object.assign(new Error('injected: reply lost'), { commitUnknown: true });
  if (typeof store.transaction === 'function') {
    // SqliteStore's own verb (textTransaction: text in, { version } out) where it has it, so its state cache stays on
    const verb = typeof store.textTransaction === 'function' ? 'textTransaction' : 'transaction';
    const t = {
      load: (k) => store.load(k),
      [verb]: async (key, fn) => {
        const roll = random();
        if (roll < rate / 2) throw lost(); // never reached the store
        let wrote = false;
        const r = await store[verb](key, (s) => {
          const out = fn(s);
          wrote = out !== null && out !== undefined;
          return out;
        });
        if (roll < rate && wrote) {
          note.landed = true;
          throw lost(); // committed, reply lost
        }
        return r;
      },
    };
    // SqliteStore's state cache: its commitFrom, with the same faults
    if (typeof store.commitFrom === 'function') t.commitFrom = commitFromOf(store, random, rate, note, lost);
    return t;
  }
  const w = {
    load: (k) => store.load(k),
    commit: async (key, expected, next, change) => {
      const roll = random();
      if (roll < rate / 2) throw lost();
      const ok = await store.commit(key, expected, next, change);
      note.conflicts += ok ? 0 : 1;
      if (roll < rate && ok) {
        note.landed = true;
        throw lost();
      }
      return ok;
    },
  };
  // the state cache's commit (issue 14), with the same faults
  if (typeof store.commitFrom === 'function') w.commitFrom = commitFromOf(store, random, rate, note, lost);
  return w;
}

/** `store.commitFrom` with injected faults: lost before it reached the store, or committed with the reply lost. */
function commitFromOf(store, random, rate, note, lost) {
  return async (key, expected, nextText, change) => {
    const roll = random();
    if (roll < rate / 2) throw lost();
    const r = await store.commitFrom(key, expected, nextText, change);
    note.conflicts += r === false ? 1 : 0;
    if (roll < rate && r !== false) {
      note.landed = true;
      throw lost();
    }
    return r;
  };
}

process.once('message', async (config) => {
  const { engine, worker, ops, keys, epoch0, seed, unknownRate } = config;
  const random = rng(seed);
  const { store, close } = await open(engine, config);
  const note = { landed: false, conflicts: 0 };
  const gate = new Gate(flaky(store, random, unknownRate, note), { maxRetries: 50, stateCache: config.stateCache });
  process.send({ ready: true });
  await new Promise((r) => process.once('message', r)); // go
  const history = [];
  for (let i = 0; i < ops; i++) {
    const key = keys[Math.floor(random() * keys.length)];
    const base = Math.floor(i / 3);
    const roll = random();
    let kind;
    let token;
    if (roll < 0.06) {
      kind = 'establish'; // a new owner's barrier, ahead of the writers
      token = epoch0 + BigInt(base + 2);
    } else {
      kind = roll < 0.1 ? 'delete' : 'set';
      const delta = random() < 0.3 ? -1 - Math.floor(random() * 5) : Math.floor(random() * 3); // stale or current
      token = epoch0 + BigInt(Math.max(1, base + delta));
    }
    const value = kind === 'set' ? `w${worker}-${i}` : undefined;
    const op = { worker, i, key, kind, token, value, attempts: [] };
    for (let attempt = 0; attempt < 30; attempt++) {
      note.landed = false;
      note.conflicts = 0;
      const t0 = now();
      let verdict = null;
      let error = null;
      try {
        verdict =
          kind === 'set' ? await gate.write(key, token, value) : kind === 'delete' ? await gate.delete(key, token) : await gate.establish(key, token);
      } catch (e) {
        error = { code: e.code, message: e.message };
      }
      op.attempts.push({ t0, t1: now(), verdict, error, landed: note.landed, conflicts: note.conflicts });
      if (verdict !== null) break;
      if (error.code !== 'COMMIT_UNKNOWN' && error.code !== 'COMMIT_CONFLICT') break;
    }
    history.push(op);
  }
  await close();
  process.send({ history });
  process.disconnect();
});
