// RedisStore.commitFrom, the state cache's one-script commit (docs/design.md "Issue 14:
// Redis commitFrom in three arguments"): the expected version and state travel as one
// argument `<length>:<version><state>` and the change as one (`s<value>`, `d`, `k`). These
// cases pin what that packing must keep, on ioredis and node-redis alike: a stored state
// that holds newlines (JSON from another writer may) still matches itself and nothing else,
// nor does another split of the same characters between version and state;
// each change kind writes exactly its fields; a record whose version is not an integer
// fails the script before anything is written.
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
  test(`${name}: commitFrom with the packed precondition (newlines in the state, change kinds, a broken version)`, { skip }, async () => {
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

      // The same version with another state, and the same state with another version: not written.
      assert.equal(await store.commitFrom('k', { version: '7', state: '{"v":1,"mark":"5"}' }, '{"v":1,"mark":"6"}', { kind: 'set', value: 'x' }), false);
      assert.equal(await store.commitFrom('k', { version: '6', state: spaced }, '{"v":1,"mark":"6"}', { kind: 'set', value: 'x' }), false);
      // Another split of the same characters between version and state: not written either.
      assert.equal(await store.commitFrom('k', { version: '7{', state: spaced.slice(1) }, '{"v":1,"mark":"6"}', { kind: 'set', value: 'x' }), false);
      assert.equal(await store.commitFrom('k', { version: '', state: `7${spaced}` }, '{"v":1,"mark":"6"}', { kind: 'set', value: 'x' }), false);
      assert.equal(await store.commitFrom('k', { version: '1:7', state: spaced }, '{"v":1,"mark":"6"}', { kind: 'set', value: 'x' }), false);
      assert.deepEqual(await fields(), { state: spaced, value: store.encodeValue('old'), version: '7' });

      // The exact version and state: written, answering the next version.
      assert.deepEqual(await store.commitFrom('k', { version: '7', state: spaced }, '{"v":1,"mark":"6"}', { kind: 'set', value: 'x' }), { version: '8' });
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

      // A version that is no integer (a foreign writer's): the script fails before writing anything.
      await plain.hset(h, 'version', 'abc');
      const before = await fields();
      await assert.rejects(store.commitFrom('k', { version: 'abc', state: before.state }, '{"v":1,"mark":"8"}', { kind: 'set', value: 'z' }), /not an integer/);
      assert.deepEqual(await fields(), before);

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
