// RedisStore on a real 3-master Redis Cluster on loopback (scripts/services.sh:
// FENCEGATE_REDIS_CLUSTER_URLS) through an ioredis Cluster: the plain gate (write,
// establish) on keys that land on every master, the own-data transaction with
// hash-tagged keys, a command list spanning two slots refused before anything is sent,
// and a client that does not follow redirections answered clearly (MOVED), nothing written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Gate, FencegateError } from '../../../pkg/node.mjs';
import { RedisStore, hashSlot } from '../../../pkg/adapters/redis.mjs';

const URLS = process.env.FENCEGATE_REDIS_CLUSTER_URLS;
const skip = !URLS && process.env.FENCEGATE_REQUIRE_SERVICES !== '1' && 'FENCEGATE_REDIS_CLUSTER_URLS is not set (scripts/with-services.sh)';
const nodes = () => URLS.split(',').map((u) => { const x = new URL(u); return { host: x.hostname, port: Number(x.port) }; });

async function cluster() {
  const { default: Redis } = await import('ioredis');
  // one startup node: the client finds the other masters itself
  const c = new Redis.Cluster([nodes()[0]], { redisOptions: { maxRetriesPerRequest: 2 } });
  await new Promise((resolve, reject) => { c.once('ready', resolve); c.once('error', reject); });
  return c;
}

/** The master (host:port) that holds `key`'s slot, from CLUSTER SLOTS. */
async function ownerOf(c, key) {
  const slot = hashSlot(key);
  for (const [from, to, [host, port]] of await c.cluster('SLOTS')) if (slot >= from && slot <= to) return `${host}:${port}`;
  return null;
}

test('Redis Cluster: the plain gate (write, establish, stale refused) on keys of all three masters', { skip, timeout: 60000 }, async () => {
  const c = await cluster();
  const p = `fg-cl-${process.pid}:`;
  const store = new RedisStore(c, { prefix: p });
  const gate = new Gate(store);
  try {
    const policies = await store.checkEvictionPolicy();
    assert.equal(policies.length, 3);
    assert.deepEqual(policies.map((x) => x.policy), ['noeviction', 'noeviction', 'noeviction']);
    const owners = new Set();
    for (let i = 0; i < 12; i++) {
      const key = `k${i}`;
      owners.add(await ownerOf(c, store.redisKey(key)));
      assert.deepEqual(await gate.write(key, 5, { i }), { key, ok: true, outcome: 'advance', code: null, token: 5, markBefore: 0, markAfter: 5 });
      assert.equal((await gate.write(key, 4, 'stale')).code, 'STALE_TOKEN');
      assert.equal((await gate.establish(key, 6)).markAfter, 6);
      assert.deepEqual(await gate.read(key), { hasValue: true, mark: 6, value: { i } });
    }
    assert.equal(owners.size, 3); // every master held some of them
  } finally {
    for (let i = 0; i < 12; i++) await c.del(store.redisKey(`k${i}`));
    c.disconnect();
  }
});

test('Redis Cluster: the transaction form with one hash tag; two slots refused (CROSSSLOT) with nothing sent', { skip, timeout: 60000 }, async () => {
  const c = await cluster();
  const p = `fg-cl-tx-${process.pid}:`;
  const store = new RedisStore(c, { prefix: p });
  const gate = new Gate(store);
  const tag = `{job:${process.pid}}`;
  const owners = new Set();
  try {
    for (const t of [tag, `${tag}x`, '{a}', '{b}', '{c}']) owners.add(await ownerOf(c, t));
    assert.deepEqual(await gate.transaction(tag, 3, [['HSET', `${tag}:job`, 'state', 'done'], ['INCR', `${tag}:done`]]), {
      key: tag, ok: true, outcome: 'advance', code: null, token: 3, markBefore: 0, markAfter: 3, result: [1, 1],
    });
    assert.equal(hashSlot(store.redisKey(tag)), hashSlot(`${tag}:job`));
    assert.equal((await gate.transaction(tag, 2, [['HSET', `${tag}:job`, 'state', 'stale']])).code, 'STALE_TOKEN');
    assert.deepEqual(await c.hgetall(`${tag}:job`), { state: 'done' });
    // a key of another slot in the list: INVALID_ARGUMENT reason CROSSSLOT, nothing written anywhere
    const other = 'jobs:done'; // no tag: another slot
    assert.notEqual(hashSlot(other), hashSlot(store.redisKey(tag)));
    const e = await gate.transaction(tag, 4, [['HSET', `${tag}:job`, 'state', 'x'], ['INCR', other]]).catch((x) => x);
    assert.ok(e instanceof FencegateError);
    assert.equal(e.code, 'INVALID_ARGUMENT');
    assert.equal(e.reason, 'CROSSSLOT');
    assert.equal(e.index, 1);
    assert.equal(e.slot, hashSlot(other));
    assert.equal(e.fenceSlot, hashSlot(store.redisKey(tag)));
    assert.equal(await c.exists(other), 0);
    assert.deepEqual(await c.hgetall(`${tag}:job`), { state: 'done' });
    assert.equal(await gate.mark(tag), 3);
    // a resource key without the tag: the fence record is in another slot than the caller's keys
    assert.equal((await gate.transaction('job-7', 1, [['SET', `${tag}:x`, '1']]).catch((x) => x)).reason, 'CROSSSLOT');
    assert.equal(await c.exists(store.redisKey('job-7')), 0);
  } finally {
    await c.del(`${tag}:job`, `${tag}:done`, store.redisKey(tag));
    c.disconnect();
  }
});

test('Redis Cluster: a plain client on a node that does not own the slot gets MOVED: STORE_ERROR reason MOVED, nothing written', { skip, timeout: 60000 }, async () => {
  const c = await cluster();
  const { default: Redis } = await import('ioredis');
  const p = `fg-cl-mv-${process.pid}:`;
  const key = '{moved}';
  const owner = await ownerOf(c, p + key);
  const wrong = nodes().find((n) => `${n.host}:${n.port}` !== owner);
  const plain = new Redis({ ...wrong, maxRetriesPerRequest: 2 });
  const gate = new Gate(new RedisStore(plain, { prefix: p }));
  try {
    const e = await gate.transaction(key, 1, [['SET', '{moved}:x', '1']]).catch((x) => x);
    assert.ok(e instanceof FencegateError);
    assert.equal(e.code, 'STORE_ERROR');
    assert.equal(e.reason, 'MOVED');
    assert.equal(e.key, key);
    assert.match(e.cause.message, /^MOVED \d+ /);
    // the plain gate's path: STORE_ERROR with the server's MOVED reply as its cause
    const w = await gate.write(key, 1, 'v').catch((x) => x);
    assert.equal(w.code, 'STORE_ERROR');
    assert.match(w.cause.message, /^MOVED \d+ /);
    assert.equal(await c.exists(p + key, '{moved}:x'), 0);
  } finally {
    plain.disconnect();
    c.disconnect();
  }
});

/** Moves the empty slot `slot` from the master `from` to the master `to` (both `{ host, port }`): IMPORTING, MIGRATING, then NODE on every master. */
/** The master owning `slot` (a `nodes()` entry) once every master's CLUSTER SLOTS names the same node id; polls up to 10 s. */
async function agreedOwner(Redis, slot) {
  const list = nodes();
  const all = list.map((n) => new Redis({ ...n, maxRetriesPerRequest: 2 }));
  try {
    const ids = await Promise.all(all.map((r) => r.cluster('MYID')));
    let views = [];
    for (let i = 0; i < 100; i++) {
      views = [];
      for (const r of all) {
        let owner = null;
        for (const [lo, hi, master] of await r.cluster('SLOTS')) if (slot >= lo && slot <= hi) owner = master[2];
        views.push(owner);
      }
      if (views.every((v) => v !== null && v === views[0]) && ids.includes(views[0])) return list[ids.indexOf(views[0])];
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`the masters do not agree on the owner of slot ${slot}: ${JSON.stringify(views)}`);
  } finally {
    for (const r of all) r.disconnect();
  }
}

async function moveSlot(Redis, slot, from, to) {
  const list = nodes();
  const all = list.map((n) => new Redis({ ...n, maxRetriesPerRequest: 2 }));
  const at = (n) => all[list.findIndex((x) => x.port === n.port)];
  try {
    const [fromId, toId] = [await at(from).cluster('MYID'), await at(to).cluster('MYID')];
    await at(to).cluster('SETSLOT', slot, 'IMPORTING', fromId);
    await at(from).cluster('SETSLOT', slot, 'MIGRATING', toId);
    assert.equal(await at(from).cluster('COUNTKEYSINSLOT', slot), 0);
    await at(to).cluster('SETSLOT', slot, 'NODE', toId);
    for (const c of all) if (c !== at(to)) await c.cluster('SETSLOT', slot, 'NODE', toId);
  } finally {
    for (const c of all) c.disconnect();
  }
}

test('Redis Cluster: a slot moved to another master after the client read the slot map: MOVED followed, the transaction lands on the new owner', { skip, timeout: 60000 }, async () => {
  const { default: Redis } = await import('ioredis');
  const c = await cluster(); // slot map read now
  try {
    await movedSlotCase(Redis, c);
  } finally {
    c.disconnect(); // on every path: a client left open keeps this file's process (and the run) waiting
  }
});

async function movedSlotCase(Redis, c) {
  const p = `fg-cl-move-${process.pid}:`;
  const store = new RedisStore(c, { prefix: p });
  const gate = new Gate(store);
  const tag = `{move-${process.pid}}`;
  const slot = hashSlot(tag);
  // the owner as every master sees it, once they agree (after an earlier move, gossip may still be
  // bringing one node's view up to date: a stale view could name the target as the source)
  const from = await agreedOwner(Redis, slot);
  const to = nodes().find((n) => n.port !== from.port || n.host !== from.host);
  await moveSlot(Redis, slot, from, to);
  const direct = new Redis({ ...to, maxRetriesPerRequest: 2 });
  try {
    // c still maps the slot to `from`: it gets MOVED and follows
    assert.deepEqual(await gate.transaction(tag, 2, [['SET', `${tag}:v`, 'moved']]), {
      key: tag, ok: true, outcome: 'advance', code: null, token: 2, markBefore: 0, markAfter: 2, result: ['OK'],
    });
    assert.equal(await direct.get(`${tag}:v`), 'moved');
    assert.equal(await direct.hget(store.redisKey(tag), 'version'), '1');
    assert.equal((await gate.transaction(tag, 1, [['SET', `${tag}:v`, 'stale']])).code, 'STALE_TOKEN');
    assert.equal(await direct.get(`${tag}:v`), 'moved');
  } finally {
    await direct.del(`${tag}:v`, store.redisKey(tag));
    direct.disconnect();
    await moveSlot(Redis, slot, to, from); // back, empty again
  }
}
