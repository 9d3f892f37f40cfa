// Issue 13 item 8: a Redis that may evict the fence record. A dedicated
// redis-server with `maxmemory 4mb` + `allkeys-lru`: the store refuses to run
// (STORE_ERROR, reason EVICTION_POLICY) before writing anything; with the
// explicit opt-in, the documented danger happens for real (the record is
// evicted and an old epoch's write lands). Safe policies run; a user without
// CONFIG permission needs the same opt-in (EVICTION_POLICY_UNKNOWN).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { Gate, Issuer, FencegateError } from '../../../pkg/node.mjs';
import { RedisStore, SAFE_EVICTION_POLICIES } from '../../../pkg/adapters/redis.mjs';
import { REQUIRE_SERVICES } from './targets.mjs';

const haveRedis = spawnSync('redis-server', ['--version']).status === 0;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function expectStoreError(promise, reason) {
  const e = await promise.then((v) => assert.fail(`expected STORE_ERROR ${reason}, got ${JSON.stringify(v)}`), (x) => x);
  assert.ok(e instanceof FencegateError, String(e));
  assert.equal(e.code, 'STORE_ERROR', e.message);
  assert.equal(e.reason, reason, e.message);
  return e;
}

describe('RedisStore and the eviction policy (a real redis-server, maxmemory 4mb)', { skip: !haveRedis && !REQUIRE_SERVICES && 'redis-server is not installed' }, () => {
  let server;
  let port;
  let Redis;
  const clients = [];
  const client = (options = {}) => {
    const c = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 2, ...options });
    clients.push(c);
    return c;
  };

  before(async () => {
    ({ default: Redis } = await import('ioredis'));
    port = await freePort();
    server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
      '--maxmemory', '4mb', '--maxmemory-policy', 'allkeys-lru', '--maxmemory-samples', '10'], { stdio: 'ignore' });
    for (let i = 0; ; i++) {
      const probe = new Redis({ host: '127.0.0.1', port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
      probe.on('error', () => {});
      try {
        await probe.connect();
        await probe.ping();
        probe.disconnect();
        break;
      } catch (e) {
        probe.disconnect();
        if (i > 100) throw e;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  });

  after(() => {
    for (const c of clients) c.disconnect();
    server.kill('SIGKILL');
  });

  test("allkeys-lru: refused before anything is written; the issue's sequence never starts", async () => {
    const redis = client();
    await redis.flushall();
    const store = new RedisStore(redis);
    const gate = new Gate(store);
    const e = await expectStoreError(gate.establish('k', 9), 'EVICTION_POLICY');
    assert.equal(e.policy, 'allkeys-lru');
    assert.equal(e.key, 'k');
    assert.equal(e.callback, 'load');
    assert.match(e.message, /maxmemory-policy allkeys-lru: it may evict fence records/);
    assert.match(e.message, /allowEviction: true/);
    await expectStoreError(gate.write('k', 3, 'zombie'), 'EVICTION_POLICY');
    await expectStoreError(gate.read('k'), 'EVICTION_POLICY');
    // a direct commit is refused too
    await expectStoreError(store.commit('k', null, { v: 1, mark: '9' }, { kind: 'none' }), 'EVICTION_POLICY');
    assert.equal(await redis.exists(store.redisKey('k')), 0);
    await expectStoreError(store.checkEvictionPolicy(), 'EVICTION_POLICY');
    // the issuer's records are fence records too: an evicted one would hand out an epoch again
    await expectStoreError(new Issuer(new RedisStore(redis)).acquire({ scope: 's', holder: 'a', ttlMs: 1000, now: 1 }), 'EVICTION_POLICY');
    assert.equal(await redis.dbsize(), 0);
    for (const policy of ['allkeys-lfu', 'allkeys-random']) {
      await redis.config('SET', 'maxmemory-policy', policy);
      const err = await expectStoreError(new Gate(new RedisStore(redis)).establish('k', 9), 'EVICTION_POLICY');
      assert.equal(err.policy, policy);
    }
    await redis.config('SET', 'maxmemory-policy', 'allkeys-lru');
  });

  test('allkeys-lru with allowEviction: true shows the documented danger: the record is evicted and the paused epoch-3 write lands', async () => {
    const redis = client();
    await redis.flushall();
    const store = new RedisStore(redis, { allowEviction: true });
    const gate = new Gate(store);
    assert.deepEqual(await gate.establish('k', 9), { key: 'k', ok: true, outcome: 'advance', code: null, token: 9, markBefore: 0, markAfter: 9 });
    const filler = 'x'.repeat(10_000);
    let evicted = false;
    for (let i = 0; i < 5000 && !evicted; i++) {
      await redis.set(`filler:${i}`, filler);
      if (i % 20 === 19) evicted = (await redis.exists(store.redisKey('k'))) === 0;
    }
    assert.ok(evicted, 'the fence record was evicted');
    assert.deepEqual(await gate.write('k', 3, 'zombie'), { key: 'k', ok: true, outcome: 'advance', code: null, token: 3, markBefore: 0, markAfter: 3 });
    assert.deepEqual(await gate.read('k'), { mark: 3, value: 'zombie', hasValue: true });
    assert.deepEqual(await store.checkEvictionPolicy(), [{ node: `127.0.0.1:${port}`, policy: 'allkeys-lru' }]);
    await redis.flushall();
  });

  test('noeviction and every volatile-* policy run; a full noeviction Redis refuses the write with nothing written', async () => {
    const redis = client();
    await redis.flushall();
    for (const policy of SAFE_EVICTION_POLICIES) {
      await redis.config('SET', 'maxmemory-policy', policy);
      const store = new RedisStore(redis);
      assert.deepEqual(await store.checkEvictionPolicy(), [{ node: `127.0.0.1:${port}`, policy }]);
      const gate = new Gate(store);
      assert.equal((await gate.establish(`k-${policy}`, 9)).outcome, 'advance');
      assert.deepEqual((await gate.write(`k-${policy}`, 3, 'zombie')).code, 'STALE_TOKEN');
    }
    // noeviction at the memory limit: Redis answers OOM, the script writes nothing, STORE_ERROR
    await redis.config('SET', 'maxmemory-policy', 'noeviction');
    const gate = new Gate(new RedisStore(redis));
    assert.equal((await gate.write('full', 5, 'five')).outcome, 'advance');
    const filler = 'y'.repeat(10_000);
    for (let i = 0; i < 5000; i++) {
      try {
        await redis.set(`filler:${i}`, filler);
      } catch {
        break;
      }
    }
    const e = await gate.write('full', 6, 'z'.repeat(100_000)).catch((x) => x);
    assert.equal(e.code, 'STORE_ERROR');
    assert.match(e.message, /OOM/);
    assert.deepEqual(await gate.read('full'), { mark: 5, value: 'five', hasValue: true });
    await redis.flushall();
    await redis.config('SET', 'maxmemory-policy', 'allkeys-lru');
  });

  test('CONFIG GET not permitted (an ACL user without @admin): EVICTION_POLICY_UNKNOWN, and the same opt-in', async () => {
    const admin = client();
    await admin.flushall();
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    await admin.call('ACL', 'SETUSER', 'app', 'on', '>app-pw', '~*', '+@all', '-config');
    const app = client({ username: 'app', password: 'app-pw' });
    await assert.rejects(app.config('GET', 'maxmemory-policy'), /NOPERM/);
    const e = await expectStoreError(new Gate(new RedisStore(app)).establish('k', 9), 'EVICTION_POLICY_UNKNOWN');
    assert.match(e.message, /cannot read Redis's maxmemory-policy/);
    assert.equal(await admin.exists('fencegate:k'), 0);
    const opted = new RedisStore(app, { allowEviction: true });
    assert.equal((await new Gate(opted).establish('k', 9)).outcome, 'advance');
    assert.deepEqual(await opted.checkEvictionPolicy(), [{ node: `127.0.0.1:${port}`, policy: null }]);
    app.disconnect(); // DELUSER drops its connection, and a reconnect would print WRONGPASS
    await admin.call('ACL', 'DELUSER', 'app');
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
  });

  test('node-redis (RESP2 and RESP3): the same refusals and results; a flushed script cache falls back to EVAL', async () => {
    const { createClient } = await import('redis');
    const admin = client();
    await admin.flushall();
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    const opened = [];
    const nodeRedis = async (options = {}) => {
      const c = createClient({ socket: { host: '127.0.0.1', port, reconnectStrategy: false }, ...options });
      c.on('error', () => {});
      opened.push(c);
      return c.connect();
    };
    try {
      for (const RESP of [2, 3]) {
        await admin.flushall();
        await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
        const nr = await nodeRedis({ RESP });
        const e = await expectStoreError(new Gate(new RedisStore(nr)).establish('k', 9), 'EVICTION_POLICY');
        assert.equal(e.policy, 'allkeys-lru');
        assert.equal(e.node, `127.0.0.1:${port}`);
        assert.equal(await admin.dbsize(), 0, `RESP${RESP}: nothing written`);
        await admin.config('SET', 'maxmemory-policy', 'noeviction');
        const store = new RedisStore(nr, { prefix: `resp${RESP}:` });
        assert.deepEqual(await store.checkEvictionPolicy(), [{ node: `127.0.0.1:${port}`, policy: 'noeviction' }]);
        const gate = new Gate(store);
        assert.equal((await gate.write('k', 9, 'nine')).outcome, 'advance');
        await admin.script('FLUSH'); // EVALSHA now answers NOSCRIPT: the store runs EVAL
        assert.deepEqual(await gate.write('k', 10, 'ten'), { key: 'k', ok: true, outcome: 'advance', code: null, token: 10, markBefore: 9, markAfter: 10 });
        assert.equal((await gate.write('k', 8, 'zombie')).code, 'STALE_TOKEN');
        assert.deepEqual(await gate.read('k'), { mark: 10, value: 'ten', hasValue: true });
        assert.deepEqual(await admin.hgetall(`resp${RESP}:k`), { state: '{"v":1,"mark":"10"}', value: '"ten"', version: '2' });
      }
      // an ACL user without CONFIG: EVICTION_POLICY_UNKNOWN, and the same opt-in
      await admin.call('ACL', 'SETUSER', 'nr-app', 'on', '>nr-pw', '~*', '+@all', '-config');
      const app = await nodeRedis({ username: 'nr-app', password: 'nr-pw' });
      await expectStoreError(new Gate(new RedisStore(app)).establish('acl', 9), 'EVICTION_POLICY_UNKNOWN');
      assert.equal(await admin.exists('fencegate:acl'), 0);
      const opted = new RedisStore(app, { allowEviction: true });
      assert.equal((await new Gate(opted).establish('acl', 9)).outcome, 'advance');
      assert.deepEqual(await opted.checkEvictionPolicy(), [{ node: `127.0.0.1:${port}`, policy: null }]);
      await admin.call('ACL', 'DELUSER', 'nr-app');
    } finally {
      for (const c of opened) if (c.isOpen) c.destroy();
      await admin.flushall();
      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    }
  });

  test('the check runs once per store; a failed check (no answer) is asked again', async () => {
    let calls = 0;
    let fail = true;
    const fake = {
      defineCommand() {},
      config: async () => {
        calls++;
        if (fail) throw new Error('connect ECONNREFUSED');
        return ['maxmemory-policy', 'noeviction'];
      },
      hmget: async () => [null, null, null],
    };
    const store = new RedisStore(fake);
    const e = await new Gate(store).read('k').catch((x) => x);
    assert.equal(e.code, 'STORE_ERROR');
    assert.equal(e.reason, undefined);
    fail = false;
    assert.deepEqual(await new Gate(store).read('k'), { mark: 0, value: undefined, hasValue: false });
    await new Gate(store).read('k');
    assert.equal(calls, 2);
    assert.throws(() => new RedisStore(fake, { allowEviction: 'yes' }), (x) => x.code === 'INVALID_ARGUMENT');
    const empty = { ...fake, config: async () => [] };
    await expectStoreError(new Gate(new RedisStore(empty)).read('k'), 'EVICTION_POLICY_UNKNOWN');
  });
});
