// Issue 14: one round trip per fenced write. A cached Gate's uncontended write
// is one statement on PostgreSQL and one script call (EVALSHA) on Redis, one
// Txn on etcd, counted at the client (the statements and commands it sends).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Gate } from '../../../pkg/node.mjs';
import { RedisStore } from '../../../pkg/adapters/redis.mjs';
import { PostgresStore } from '../../../pkg/adapters/postgres.mjs';
import { MysqlStore } from '../../../pkg/adapters/mysql.mjs';
import { EtcdStore } from '../../../pkg/adapters/etcd.mjs';
import { redisClient, nodeRedisClient, pgPool, mysqlPool, etcdClient, REDIS_URL, PG_URL, MYSQL_URL, ETCD_URLS, uniqueKey } from './targets.mjs';

const N = 100;

describe('one round trip per cached write', () => {
  test(`PostgreSQL (pg): ${N} writes on one key = 1 SELECT + ${N} statements; with stateCache: 0, ${N} SELECTs + ${N}`, { skip: !PG_URL && 'FENCEGATE_PG_URL is not set' }, async () => {
    const pool = await pgPool();
    try {
      const seen = [];
      const counted = { query: (q) => (seen.push(q.text.split(' ')[0]), pool.query(q)) };
      const store = await new PostgresStore(counted).init();
      for (const [options, selects] of [[{}, 1], [{ stateCache: 0 }, N]]) {
        const gate = new Gate(store, options);
        const key = uniqueKey('rt-pg');
        seen.length = 0;
        for (let i = 1; i <= N; i++) assert.equal((await gate.write(key, 7, `v${i}`)).ok, true);
        const counts = {};
        for (const s of seen) counts[s] = (counts[s] ?? 0) + 1;
        assert.deepEqual(counts, { SELECT: selects, INSERT: 1, UPDATE: N - 1 }, JSON.stringify(options));
        assert.deepEqual(await gate.read(key), { mark: 7, value: `v${N}`, hasValue: true });
      }
    } finally {
      await pool.end();
    }
  });

  test(`Redis (ioredis): ${N} writes on one key = 1 HMGET + ${N} EVALSHA; a flushed script cache falls back to EVAL once`, { skip: !REDIS_URL && 'FENCEGATE_REDIS_URL is not set' }, async () => {
    const redis = await redisClient();
    try {
      // every command ioredis sends goes through sendCommand (defined scripts too: EVALSHA, EVAL on NOSCRIPT)
      const sent = [];
      const send = redis.sendCommand.bind(redis);
      redis.sendCommand = (cmd, ...rest) => (sent.push(cmd.name), send(cmd, ...rest));
      const store = new RedisStore(redis, { prefix: `${uniqueKey('rt')}:` });
      const gate = new Gate(store);
      await store.checkEvictionPolicy();
      await redis.script('LOAD', '-- warm: nothing'); // (connection ready)
      sent.length = 0;
      for (let i = 1; i <= N; i++) assert.equal((await gate.write('k', 7, `v${i}`)).ok, true);
      const count = (list) => list.reduce((o, s) => ((o[s] = (o[s] ?? 0) + 1), o), {});
      const c = count(sent);
      // the first use of the script on a fresh server may be one NOSCRIPT EVALSHA + EVAL
      assert.deepEqual({ ...c, eval: undefined }, { hmget: 1, evalsha: N + (c.eval ?? 0), eval: undefined }, JSON.stringify(c));
      assert.ok((c.eval ?? 0) <= 1);
      // SCRIPT FLUSH: the next write gets NOSCRIPT and ioredis falls back (loading the script again), then one EVALSHA per write again
      await redis.script('FLUSH');
      sent.length = 0;
      assert.equal((await gate.write('k', 8, 'after flush')).outcome, 'advance');
      const afterFlush = count(sent);
      assert.ok(afterFlush.evalsha >= 1 && !afterFlush.hmget, JSON.stringify(afterFlush));
      sent.length = 0;
      assert.equal((await gate.write('k', 8, 'again')).outcome, 'accept');
      assert.deepEqual(count(sent), { evalsha: 1 });
      assert.deepEqual(await gate.read('k'), { mark: 8, value: 'again', hasValue: true });
    } finally {
      redis.disconnect();
    }
  });

  test(`Redis (node-redis): ${N} writes = 1 HMGET + ${N} EVALSHA (+ 1 SCRIPT LOAD)`, { skip: !REDIS_URL && 'FENCEGATE_REDIS_URL is not set' }, async () => {
    const client = await nodeRedisClient();
    try {
      const sent = [];
      const send = client.sendCommand.bind(client);
      client.sendCommand = (args, ...rest) => (sent.push(String(args[0]).toUpperCase()), send(args, ...rest));
      const store = new RedisStore(client, { prefix: `${uniqueKey('rt-nr')}:` });
      const gate = new Gate(store);
      await store.checkEvictionPolicy();
      sent.length = 0;
      for (let i = 1; i <= N; i++) assert.equal((await gate.write('k', 7, `v${i}`)).ok, true);
      const counts = {};
      for (const s of sent) counts[s] = (counts[s] ?? 0) + 1;
      assert.deepEqual(counts, { HMGET: 1, SCRIPT: 1, EVALSHA: N });
    } finally {
      await client.close();
    }
  });

  test(`MySQL (mysql2): ${N} writes on one key = 1 SELECT + ${N} statements`, { skip: !MYSQL_URL && 'FENCEGATE_MYSQL_URL is not set' }, async () => {
    const pool = await mysqlPool();
    try {
      const seen = [];
      const counted = { execute: (sql, params) => (seen.push(sql.split(' ')[0]), pool.execute(sql, params)), query: (...a) => pool.query(...a) };
      const store = await new MysqlStore(counted, { table: 'fencegate_rt' }).init();
      const gate = new Gate(store);
      const key = uniqueKey('rt-my');
      for (let i = 1; i <= N; i++) assert.equal((await gate.write(key, 7, `v${i}`)).ok, true);
      const counts = {};
      for (const s of seen) counts[s] = (counts[s] ?? 0) + 1;
      assert.deepEqual(counts, { SELECT: 1, INSERT: 1, UPDATE: N - 1 });
    } finally {
      await pool.end();
    }
  });

  test(`etcd (etcd3): ${N} writes on one key = 1 load Txn + ${N} commit Txns, no range; with stateCache: 0, ${N} load Txns + ${N}`, { skip: !ETCD_URLS && 'FENCEGATE_ETCD_URLS is not set' }, async () => {
    const client = await etcdClient();
    const prefix = `${uniqueKey('rt-etcd')}/`;
    try {
      // every request the store sends goes through client.kv: a Txn without compares is a load
      const sent = [];
      const kv = {
        txn: (req) => (sent.push(req.compare.length === 0 ? 'load' : 'commit'), client.kv.txn(req)),
        range: (req) => (sent.push('range'), client.kv.range(req)),
      };
      const store = new EtcdStore({ kv }, { prefix });
      for (const [options, loads] of [[{}, 1], [{ stateCache: 0 }, N]]) {
        const gate = new Gate(store, options);
        const key = uniqueKey('k');
        sent.length = 0;
        for (let i = 1; i <= N; i++) assert.equal((await gate.write(key, 7, `v${i}`)).ok, true);
        const counts = {};
        for (const s of sent) counts[s] = (counts[s] ?? 0) + 1;
        assert.deepEqual(counts, { load: loads, commit: N }, JSON.stringify(options));
        assert.deepEqual(await gate.read(key), { mark: 7, value: `v${N}`, hasValue: true });
        // the version the cache holds is the state key's mod_revision, what load answers: the next cached write is one Txn again
        const rev = (await client.get(store.etcdKeys(key).state).exec()).kvs[0].mod_revision;
        assert.equal((await store.load(key)).version, rev);
        sent.length = 0;
        assert.equal((await gate.write(key, 8, 'last')).outcome, 'advance');
        assert.deepEqual(sent, options.stateCache === 0 ? ['load', 'commit'] : ['commit']);
      }
    } finally {
      await client.delete().prefix(prefix);
      client.close();
    }
  });
});
