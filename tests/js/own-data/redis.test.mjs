// The caller's own data on Redis (docs/stores.md "Your own data: Redis"): Gate.transaction
// with a command list runs the fence check, the caller's commands and the fence write in
// one script. Exact verdicts, replies, marks and the caller's keys (DUMP) after each case,
// on ioredis and node-redis, with the state cache off and on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Gate, FencegateError } from '../../../pkg/node.mjs';
import { RedisStore } from '../../../pkg/adapters/redis.mjs';
import { REDIS_URL, REQUIRE_SERVICES, redisClient, nodeRedisClient } from '../stores/targets.mjs';

const skip = !REDIS_URL && !REQUIRE_SERVICES && 'FENCEGATE_REDIS_URL is not set (scripts/with-services.sh)';

const clients = [
  ['ioredis', redisClient, (c) => c.disconnect()],
  ['node-redis', nodeRedisClient, (c) => c.quit()],
];

/** The DUMP of every key (null: none) and its TTL state: byte-identical comparison. */
async function dumps(plain, keys) {
  const out = {};
  for (const k of keys) {
    const d = await plain.dumpBuffer(k);
    out[k] = d === null ? null : d.toString('hex');
  }
  return out;
}

for (const [name, open, close] of clients) {
  for (const stateCache of [0, 1024]) {
    test(`${name} (stateCache ${stateCache}): advance, accept, stale refused; the caller's keys byte-identical after a refusal`, { skip }, async () => {
      const client = await open();
      const plain = await redisClient();
      const p = `fg-own-${name}-${stateCache}-${process.pid}:`;
      const store = new RedisStore(client, { prefix: `${p}fence:` });
      const gate = new Gate(store, { stateCache });
      const job = `${p}job:7`;
      const done = `${p}jobs:done`;
      const keys = [job, done];
      try {
        assert.deepEqual(await gate.transaction('job/7', 33, [['HSET', job, 'state', 'paid'], ['INCR', done]]), {
          key: 'job/7', ok: true, outcome: 'advance', code: null, token: 33, markBefore: 0, markAfter: 33, result: [1, 1],
        });
        assert.deepEqual(await gate.transaction('job/7', 34, [['HSET', job, 'state', 'shipped', 'by', 34], ['INCRBY', done, 2], ['SET', `${p}x`, 'y']]), {
          key: 'job/7', ok: true, outcome: 'advance', code: null, token: 34, markBefore: 33, markAfter: 34, result: [1, 3, 'OK'],
        });
        assert.deepEqual(await gate.transaction('job/7', 34, [['HSET', job, 'state', 'shipped-2'], ['PEXPIRE', `${p}x`, 600000]]), {
          key: 'job/7', ok: true, outcome: 'accept', code: null, token: 34, markBefore: 34, markAfter: 34, result: [0, 1],
        });
        const before = await dumps(plain, [...keys, `${p}x`]);
        const ttl = await plain.pttl(`${p}x`);
        assert.deepEqual(await gate.transaction('job/7', 33, [['HSET', job, 'state', 'refunded'], ['DEL', done, `${p}x`]]), {
          key: 'job/7', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 33, markBefore: 34, markAfter: 34,
        });
        assert.deepEqual(await dumps(plain, [...keys, `${p}x`]), before);
        assert.ok((await plain.pttl(`${p}x`)) <= ttl && (await plain.pttl(`${p}x`)) > 0);
        assert.deepEqual(await plain.hgetall(job), { state: 'shipped-2', by: '34' });
        assert.equal(await plain.get(done), '3');
        assert.equal(await gate.mark('job/7'), 34);
        // the fence hash: state and version, no value field (the caller's data is elsewhere)
        assert.deepEqual(Object.keys(await plain.hgetall(store.redisKey('job/7'))).sort(), ['state', 'version']);
        assert.equal(await plain.hget(store.redisKey('job/7'), 'version'), '3');
        // A plain gate write on another key of the same store still works next to it
        assert.equal((await gate.write('other', 3, 'v')).outcome, 'advance');
        // A fresh gate (nothing cached) sees the same mark and refuses the same stale token
        assert.equal((await new Gate(store, { stateCache }).transaction('job/7', 12, [['DEL', job]])).code, 'STALE_TOKEN');
        assert.deepEqual(await dumps(plain, [...keys, `${p}x`]), before);
      } finally {
        await plain.del(job, done, `${p}x`, store.redisKey('job/7'), store.redisKey('other'));
        plain.disconnect();
        await close(client);
      }
    });
  }

  test(`${name}: the same op id applies once; a failing command keeps nothing of the list (CALLBACK_FAILED, mark unchanged)`, { skip }, async () => {
    const client = await open();
    const plain = await redisClient();
    const p = `fg-own-op-${name}-${process.pid}:`;
    const store = new RedisStore(client, { prefix: `${p}fence:` });
    const gate = new Gate(store);
    try {
      const first = await gate.transaction('acct', 7, [['INCRBY', `${p}bal`, 100], ['RPUSH', `${p}log`, 'refund-1']], { opId: 'refund-1' });
      assert.deepEqual(first, { key: 'acct', ok: true, outcome: 'advance', code: null, token: 7, markBefore: 0, markAfter: 7, result: [100, 1] });
      const again = await gate.transaction('acct', 7, [['INCRBY', `${p}bal`, 100], ['RPUSH', `${p}log`, 'refund-1']], { opId: 'refund-1' });
      assert.deepEqual(again, { key: 'acct', ok: true, outcome: 'duplicate', code: null, original: 'advance', token: 7, markBefore: 7, markAfter: 7 });
      assert.equal(await plain.get(`${p}bal`), '100');
      assert.deepEqual(await plain.lrange(`${p}log`, 0, -1), ['refund-1']);

      // The 3rd command fails (WRONGTYPE): the first two changes are put back (a missing key stays missing, a TTL stays)
      await plain.set(`${p}str`, 'text', 'PX', 900000);
      const keys = [`${p}bal`, `${p}log`, `${p}new`, `${p}str`];
      const before = await dumps(plain, keys);
      const fenceBefore = await plain.hgetall(store.redisKey('acct'));
      const err = await gate.transaction('acct', 8, [['INCRBY', `${p}bal`, 5], ['SET', `${p}new`, 'n'], ['APPEND', `${p}str`, '!'], ['LPUSH', `${p}str`, 'x'], ['DEL', `${p}log`]]).catch((e) => e);
      assert.ok(err instanceof FencegateError);
      assert.equal(err.code, 'CALLBACK_FAILED');
      assert.equal(err.key, 'acct');
      assert.equal(err.cause.index, 3);
      assert.equal(err.cause.command, 'LPUSH');
      assert.match(err.cause.reply, /^WRONGTYPE /);
      assert.equal(err.verdict.outcome, 'advance');
      assert.equal(err.verdict.markBefore, 7);
      assert.deepEqual(await dumps(plain, keys), before);
      assert.ok((await plain.pttl(`${p}str`)) > 800000);
      assert.deepEqual(await plain.hgetall(store.redisKey('acct')), fenceBefore);
      assert.equal(await gate.mark('acct'), 7);
      // a failing first (and only) command: the same, nothing kept
      const one = await gate.transaction('acct', 8, [['INCR', `${p}str`]]).catch((e) => e);
      assert.equal(one.code, 'CALLBACK_FAILED');
      assert.equal(one.cause.index, 0);
      assert.deepEqual(await dumps(plain, keys), before);
      // and the next good list applies at 8
      assert.deepEqual((await gate.transaction('acct', 8, [['INCRBY', `${p}bal`, 1]])).result, [101]);
    } finally {
      await plain.del(`${p}bal`, `${p}log`, `${p}new`, `${p}str`, store.redisKey('acct'));
      plain.disconnect();
      await close(client);
    }
  });

  test(`${name}: bad command lists are INVALID_ARGUMENT with nothing sent`, { skip }, async () => {
    const client = await open();
    const plain = await redisClient();
    const p = `fg-own-bad-${name}-${process.pid}:`;
    const store = new RedisStore(client, { prefix: `${p}fence:` });
    const gate = new Gate(store);
    try {
      await gate.write('warm', 1, 'x'); // the eviction-policy check has run
      const commands = async () => {
        const info = await plain.info('stats');
        return Number(/total_commands_processed:(\d+)/.exec(info)[1]);
      };
      const bad = [
        undefined, null, 'SET a b', {}, (tx) => tx, [['SET']], [[]], ['SET a b'], [['EVAL', 'return 1', '0']], [['FCALL', 'f', '0']],
        [['MULTI']], [['SELECT', '1']], [['FLUSHALL']], [['FLUSHDB']], [['CONFIG', 'SET', 'x', 'y']], [['SCRIPT', 'FLUSH']],
        [['FUNCTION', 'FLUSH']], [['GET', `${p}a`]], [['SPOP', `${p}a`]], [['MOVE', `${p}a`, '1']], [['COPY', `${p}a`, `${p}b`]],
        [['SORT', `${p}a`, 'STORE', `${p}b`]], [['SET', `${p}a`, {}]], [['SET', `${p}a`, null]], [['SET', `${p}a`, NaN]], [['SET', `${p}a`, true]],
        [['SET', `${p}fence:warm`, 'x']], [['HSET', `${p}fence:other`, 'state', '{}']], [['MSET', `${p}a`, '1', `${p}b`]],
        [['ZUNIONSTORE', `${p}d`, '3', `${p}a`]], [['ZUNIONSTORE', `${p}d`, 'x', `${p}a`]], [['BITOP', 'AND', `${p}d`]], [['RENAME', `${p}a`]],
        [['SET', `${p}a`, '1'], 'INCR'], [['SET', `${p}a`, '1'], ['DEBUG', 'SLEEP', '0']], [[Buffer.from('SET'), `${p}a`, '1']],
        [new Array(5000).fill('1').map((x, i) => (i === 0 ? 'DEL' : `${p}k${i}`))],
      ];
      const before = await commands();
      for (const body of bad) {
        const e = await gate.transaction('job', 5, body).catch((x) => x);
        assert.ok(e instanceof FencegateError, String(body));
        assert.equal(e.code, 'INVALID_ARGUMENT', JSON.stringify(body)?.slice(0, 80));
      }
      assert.equal(await commands(), before + 1); // only the INFO between
      assert.equal(await plain.exists(store.redisKey('job'), `${p}a`, `${p}b`, `${p}d`), 0);
      // the good shapes of those layouts run (names in any case, numbers and Buffers as arguments)
      assert.deepEqual((await gate.transaction('job', 5, [['mset', `${p}a`, 1, `${p}b`, Buffer.from('two')], ['zadd', `${p}z`, 1, 'm'],
        ['ZUNIONSTORE', `${p}d`, 1, `${p}z`], ['del', `${p}z`]])).result, ['OK', 1, 1, 1]);
      assert.deepEqual([await plain.get(`${p}a`), await plain.get(`${p}b`), await plain.zrange(`${p}d`, 0, -1)], ['1', 'two', ['m']]);
    } finally {
      await plain.del(store.redisKey('warm'), store.redisKey('job'), `${p}a`, `${p}b`, `${p}d`, `${p}z`);
      plain.disconnect();
      await close(client);
    }
  });
}

test('ioredis: a stale state cache entry (another gate moved the fence) loses the script, reads, decides again: stale refused, nothing runs', { skip }, async () => {
  const client = await redisClient();
  const p = `fg-own-cache-${process.pid}:`;
  const store = new RedisStore(client, { prefix: `${p}fence:` });
  const a = new Gate(store, { stateCache: 64 });
  const b = new Gate(store, { stateCache: 0 });
  try {
    assert.equal((await a.transaction('k', 3, [['SET', `${p}v`, 'a3']])).outcome, 'advance'); // a caches mark 3
    assert.equal((await b.transaction('k', 5, [['SET', `${p}v`, 'b5']])).outcome, 'advance');
    // a's cache says 3: its decision for 4 (advance) is sent with the old state text, lost; the re-read says 5: refused
    assert.deepEqual(await a.transaction('k', 4, [['SET', `${p}v`, 'a4']]), {
      key: 'k', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 4, markBefore: 5, markAfter: 5,
    });
    assert.equal(await client.get(`${p}v`), 'b5');
    assert.equal((await a.transaction('k', 6, [['SET', `${p}v`, 'a6']])).markBefore, 5);
    assert.equal(await client.get(`${p}v`), 'a6');
    assert.equal(await client.hget(store.redisKey('k'), 'version'), '3');
  } finally {
    await client.del(`${p}v`, store.redisKey('k'));
    client.disconnect();
  }
});
