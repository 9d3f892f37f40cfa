// RedisStore.commitFrom, the state cache's one-script commit (docs/decisions/one-round-trip-commits.md,
// docs/decisions/state-cache.md): the precondition is the stored
// state text (ARGV[1]; the version is bumped, not compared, and must be there), the next
// state and the change (`s<value>`, `d`, `k`) are one argument each; no record expected:
// two arguments. These cases pin it on ioredis and node-redis alike: a stored state that
// holds newlines (JSON from another writer may) still matches itself and nothing else;
// the same state at another version is written (the decision reads only the state text);
// no hash is not; each change kind writes exactly its fields; a record whose version is
// not one the store writes (none, 0, negative, not an integer) fails the script, and
// load, with STORE_ERROR reason BAD_VERSION before anything is written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RedisStore } from '../../../pkg/adapters/redis.mjs';
import { Gate } from '../../../pkg/node.mjs';
import { REDIS_URL, REQUIRE_SERVICES, redisClient, nodeRedisClient } from './targets.mjs';

const skip = !REDIS_URL && !REQUIRE_SERVICES && 'FENCEGATE_REDIS_URL is not set (scripts/with-services.sh)';

const clients = [
  ['ioredis', redisClient, (c) => c.disconnect()],
  ['node-redis', nodeRedisClient, (c) => c.quit()],
];

for (const [name, open, close] of clients) {
  test(`${name}: commitFrom with the state text as its precondition (newlines in the state, change kinds, no version, a broken version)`, { skip }, async () => {
    const client = await open();
    const plain = await redisClient(); // reads and plants raw fields, whatever the client under test
    const prefix = `fg-cf-${name}-${process.pid}-${Date.now()}:`;
    const store = new RedisStore(client, { prefix });
    const h = store.redisKey('k');
    const fields = async () => {
      const all = await plain.hgetall(h);
      return Object.fromEntries(Object.entries(all).sort());
    };
    try {
      // A state written by another writer with newlines and spaces: valid JSON, mark 5.
      const spaced = '{\n  "v": 1,\n  "mark": "5"\n}';
      await plain.hset(h, 'state', spaced, 'version', '7', 'value', store.encodeValue('old'));

      // The same version with another state (the compact spelling of the same mark, a prefix, a longer text): not written.
      assert.equal(await store.commitFrom('k', { version: '7', state: '{"v":1,"mark":"5"}' }, '{"v":1,"mark":"6"}', { kind: 'set', value: 'x' }), false);
      assert.equal(await store.commitFrom('k', { version: '7', state: spaced.slice(0, -1) }, '{"v":1,"mark":"6"}', { kind: 'set', value: 'x' }), false);
      assert.equal(await store.commitFrom('k', { version: '7', state: `${spaced} ` }, '{"v":1,"mark":"6"}', { kind: 'set', value: 'x' }), false);
      assert.equal(await store.commitFrom('k', { version: '7', state: '' }, '{"v":1,"mark":"6"}', { kind: 'set', value: 'x' }), false);
      assert.deepEqual(await fields(), { state: spaced, value: store.encodeValue('old'), version: '7' });

      // The exact state, whatever version the caller remembers: written, answering the version the record now has.
      assert.deepEqual(await store.commitFrom('k', { version: '3', state: spaced }, '{"v":1,"mark":"6"}', { kind: 'set', value: 'x' }), { version: '8' });
      assert.deepEqual(await fields(), { state: '{"v":1,"mark":"6"}', value: store.encodeValue('x'), version: '8' });
      // keep: the value stays; delete: it goes.
      assert.deepEqual(await store.commitFrom('k', { version: '8', state: '{"v":1,"mark":"6"}' }, '{"v":1,"mark":"7"}', { kind: 'none' }), { version: '9' });
      assert.deepEqual(await fields(), { state: '{"v":1,"mark":"7"}', value: store.encodeValue('x'), version: '9' });
      assert.deepEqual(await store.commitFrom('k', { version: '9', state: '{"v":1,"mark":"7"}' }, '{"v":1,"mark":"7"}', { kind: 'delete' }), { version: '10' });
      assert.deepEqual(await fields(), { state: '{"v":1,"mark":"7"}', version: '10' });
      // A value whose text starts with the change letters is kept whole.
      assert.deepEqual(await store.commitFrom('k', { version: '10', state: '{"v":1,"mark":"7"}' }, '{"v":1,"mark":"7"}', { kind: 'set', value: 'sdk' }), { version: '11' });
      assert.equal((await fields()).value, store.encodeValue('sdk'));

      // No record expected, but there is one: not written. A new key: version 1.
      assert.equal(await store.commitFrom('k', null, '{"v":1,"mark":"9"}', { kind: 'set', value: 'y' }), false);
      assert.deepEqual(await store.commitFrom('n', null, '{"v":1,"mark":"2"}', { kind: 'set', value: 'y' }), { version: '1' });
      assert.deepEqual(await plain.hgetall(store.redisKey('n')), { state: '{"v":1,"mark":"2"}', value: store.encodeValue('y'), version: '1' });
      // A record expected but none there (an expected empty state included), and a hash with the state but no version: not written.
      assert.equal(await store.commitFrom('none', { version: '1', state: '{"v":1,"mark":"2"}' }, '{"v":1,"mark":"3"}', { kind: 'set', value: 'y' }), false);
      assert.equal(await store.commitFrom('none', { version: '1', state: '' }, '{"v":1,"mark":"3"}', { kind: 'set', value: 'y' }), false);
      assert.equal(await plain.exists(store.redisKey('none')), 0);

      // A state with a version this store never writes (none, 0, negative, not canonical, not an integer: a
      // foreign or damaged record): STORE_ERROR reason BAD_VERSION from the script, nothing written. (A version
      // at 0 or below came back from HINCRBY as 0 or less, which read as "not written" though it was.)
      const bad = { code: 'STORE_ERROR', reason: 'BAD_VERSION', key: 'k' };
      for (const version of [null, '0', '-1', '-20', '007', '1.5', 'abc']) {
        await plain.del(h);
        await plain.hset(h, 'state', spaced, 'value', store.encodeValue('old'), ...(version === null ? [] : ['version', version]));
        const before = await fields();
        await assert.rejects(store.commitFrom('k', { version: version ?? '', state: spaced }, '{"v":1,"mark":"8"}', { kind: 'set', value: 'z' }),
          { ...bad, version }, `version ${version}`);
        assert.deepEqual(await fields(), before, `version ${version}`);
        // load refuses it the same way, so a gate never decides from it (cached or not)
        await assert.rejects(store.load('k'), { ...bad, version }, `load, version ${version}`);
        for (const options of [{}, { stateCache: 0 }, { sameEpoch: 'strict' }]) {
          await assert.rejects(new Gate(store, options).write('k', 6, 'two', { opId: 'op-1' }), { ...bad, version }, `gate ${JSON.stringify(options)}, version ${version}`);
          assert.deepEqual(await fields(), before, `gate ${JSON.stringify(options)}, version ${version}`);
        }
      }
      await plain.del(h);
      await plain.hset(h, 'state', spaced, 'version', '7', 'value', store.encodeValue('old'));

      // Through a Gate: a cached write over the spaced state from another writer.
      await plain.hset(h, 'state', spaced, 'version', '20');
      const gate = new Gate(store);
      const stale = await gate.write('k', 4, 'late');
      assert.deepEqual([stale.ok, stale.code, stale.markBefore, stale.markAfter], [false, 'STALE_TOKEN', 5, 5]);
      const v = await gate.write('k', 5, 'now');
      assert.deepEqual([v.ok, v.outcome, v.markBefore, v.markAfter], [true, 'accept', 5, 5]);
      assert.deepEqual(await fields(), { state: '{"v":1,"mark":"5"}', value: store.encodeValue('now'), version: '21' });
    } finally {
      const keys = await plain.keys(`${prefix}*`);
      if (keys.length) await plain.del(...keys);
      plain.disconnect();
      await close(client);
    }
  });
}

// One `close` listener per client however many stores share it: a store made per request
// neither piles listeners up on the client (MaxListenersExceededWarning after 10) nor stays
// reachable from it.
test('ioredis: 100 RedisStores on one client add one close listener', { skip }, async () => {
  const client = await redisClient();
  try {
    const before = client.listenerCount('close');
    for (let i = 0; i < 100; i++) new RedisStore(client, { prefix: `fg-listeners-${i}:` });
    assert.equal(client.listenerCount('close'), before + 1);
  } finally {
    client.disconnect();
  }
});
