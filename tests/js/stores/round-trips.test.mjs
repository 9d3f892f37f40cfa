// Issue 14: one round trip per fenced write. A cached Gate's uncontended write
// is one statement on PostgreSQL and one script call (EVALSHA) on Redis,
// counted at the client (the statements and commands it sends).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Gate } from '../../../pkg/node.mjs';
import { RedisStore } from '../../../pkg/adapters/redis.mjs';
import { PostgresStore } from '../../../pkg/adapters/postgres.mjs';
import { MysqlStore } from '../../../pkg/adapters/mysql.mjs';
import { redisClient, nodeRedisClient, pgPool, mysqlPool, REDIS_URL, PG_URL, MYSQL_URL, uniqueKey } from './targets.mjs';

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
});
