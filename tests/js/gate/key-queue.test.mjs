// Fixes after the new-user trial, item 1: one Gate (one Issuer) never races
// itself. Operations on one key from one instance run in arrival order through
// a per-key queue in the store driver; other keys stay concurrent; a failing
// operation does not block the key; the queues are gone when the keys are idle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Gate, Issuer, MemoryHostStore, FencegateError } from '../../../pkg/node.mjs';
import { StoreDriver } from '../../../pkg/lib/driver.mjs';

const isCode = (code, message) => (e) => e instanceof FencegateError && e.code === code && (message === undefined || message.test(e.message));
const outcomes = (settled) => settled.map((r) => (r.status === 'fulfilled' ? r.value.outcome : r.reason.code));

/** A compare-and-set store over a MemoryHostStore whose callbacks answer a turn later, counting steps in flight per key. */
function slowStore() {
  const inner = new MemoryHostStore();
  const inFlight = new Map();
  const stats = { maxPerKey: 0, maxTotal: 0, total: 0 };
  const tick = () => new Promise((resolve) => setImmediate(resolve));
  return {
    inner,
    stats,
    async load(key) {
      const n = (inFlight.get(key) ?? 0) + 1;
      inFlight.set(key, n);
      stats.total++;
      stats.maxPerKey = Math.max(stats.maxPerKey, n);
      stats.maxTotal = Math.max(stats.maxTotal, stats.total);
      await tick();
      return inner.load(key);
    },
    async commit(key, expected, next, change) {
      await tick();
      inFlight.set(key, inFlight.get(key) - 1);
      stats.total--;
      return inner.commit(key, expected, next, change);
    },
  };
}

test('the trial case: one Gate, key at epoch 7, 20 concurrent writes with epoch 7 → 20 accepts, the last write by arrival order is stored, mark 7', async () => {
  const gate = new Gate(new MemoryHostStore());
  assert.equal((await gate.establish('k', 7)).outcome, 'advance');
  const settled = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => gate.write('k', 7, i)));
  assert.deepEqual(outcomes(settled), Array(20).fill('accept'));
  assert.deepEqual(
    settled.map((r) => [r.value.markBefore, r.value.markAfter]),
    Array(20).fill([7, 7]),
  );
  assert.deepEqual(await gate.read('k'), { mark: 7, value: 19, hasValue: true });
  assert.deepEqual(gate.counters().accept, 20);
});

test('200 concurrent writes on one key over a store that answers a turn later: 200 accepts, one step in flight at a time, value 199', async () => {
  const store = slowStore();
  const gate = new Gate(store);
  await gate.establish('k', 7);
  const settled = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => gate.write('k', 7, i)));
  assert.deepEqual(outcomes(settled), Array(200).fill('accept'));
  assert.equal(store.stats.maxPerKey, 1);
  assert.deepEqual(await gate.read('k'), { mark: 7, value: 199, hasValue: true });
});

test('3 keys interleaved: every write accepted in its key\'s arrival order, the keys run concurrently (3 in flight), one at a time per key', async () => {
  const store = slowStore();
  const gate = new Gate(store);
  await Promise.all([gate.establish('a', 1), gate.establish('b', 2), gate.establish('c', 3)]);
  const keys = ['a', 'b', 'c'];
  const epochs = { a: 1, b: 2, c: 3 };
  const settled = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => gate.write(keys[i % 3], epochs[keys[i % 3]], i)));
  assert.deepEqual(outcomes(settled), Array(30).fill('accept'));
  assert.equal(store.stats.maxPerKey, 1);
  assert.equal(store.stats.maxTotal, 3);
  assert.deepEqual(await gate.read('a'), { mark: 1, value: 27, hasValue: true });
  assert.deepEqual(await gate.read('b'), { mark: 2, value: 28, hasValue: true });
  assert.deepEqual(await gate.read('c'), { mark: 3, value: 29, hasValue: true });
});

test('a throwing operation does not block the key: the next one in the queue runs and is accepted', async () => {
  const inner = new MemoryHostStore();
  let failCommit = false;
  let failLoad = false;
  const store = {
    load: async (key) => {
      if (failLoad) {
        failLoad = false;
        throw new Error('load down');
      }
      return inner.load(key);
    },
    commit: (key, expected, next, change) => {
      if (failCommit) {
        failCommit = false;
        throw new Error('commit down');
      }
      return inner.commit(key, expected, next, change);
    },
  };
  const gate = new Gate(store);
  await gate.establish('k', 7);
  failCommit = true;
  const [a, b] = await Promise.allSettled([gate.write('k', 7, 'lost'), gate.write('k', 7, 'kept')]);
  assert.equal(a.status, 'rejected');
  assert.ok(isCode('STORE_ERROR', /commit\("k"\) failed: commit down/)(a.reason));
  assert.equal(b.value.outcome, 'accept');
  failLoad = true;
  const [c, d, e] = await Promise.allSettled([gate.write('k', 7, 'x'), gate.write('k', 6, 'stale'), gate.write('k', 8, 'new')]);
  assert.ok(isCode('STORE_ERROR', /load\("k"\) failed: load down/)(c.reason));
  assert.equal(d.value.outcome, 'reject');
  assert.equal(d.value.code, 'STALE_TOKEN');
  assert.equal(e.value.outcome, 'advance');
  assert.deepEqual(await gate.read('k'), { mark: 8, value: 'new', hasValue: true });
});

test('the per-key queues are removed when the keys are idle (after successes and a decision that throws)', async () => {
  const inner = new MemoryHostStore();
  const driver = new StoreDriver(inner, { maxRetries: 8 }, {
    store: (ctx, cb, cause) => cause,
    unknown: (ctx, cb, cause) => cause,
    conflict: () => new Error('conflict'),
    record: (ctx, r) => (r === null ? null : r.state),
  });
  const step = (n) => (state) => ({ result: n, next: { n }, change: { kind: 'none' } });
  const ps = [];
  for (let i = 0; i < 50; i++) ps.push(driver.run(null, `key${i % 5}`, step(i)));
  ps.push(driver.run(null, 'key0', () => { throw new Error('decision failed'); }));
  ps.push(driver.run(null, 'key0', step(99)));
  assert.equal(driver.busyKeys, 5);
  const settled = await Promise.allSettled(ps);
  assert.deepEqual(settled.map((r) => r.value ?? r.reason.message), [...Array.from({ length: 50 }, (_, i) => i), 'decision failed', 99]);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(driver.busyKeys, 0);
  assert.equal(inner.load('key0').state, '{"n":99}');
  assert.equal(inner.load('key4').state, '{"n":49}');
});

test('Gate.free() with writes waiting in the queue: each refused with INVALID_ARGUMENT, nothing written; a later call throws too', async () => {
  const store = new MemoryHostStore();
  const gate = new Gate(store);
  await gate.establish('k', 7);
  await gate.write('k', 7, 'before');
  const ps = [gate.write('k', 7, 1), gate.write('k', 8, 2), gate.quarantine('k', 9)];
  gate.free();
  const settled = await Promise.allSettled(ps);
  for (const r of settled) assert.ok(isCode('INVALID_ARGUMENT', /this gate was freed/)(r.reason));
  await assert.rejects(gate.read('k'), isCode('INVALID_ARGUMENT', /this gate was freed/));
  assert.deepEqual(await new Gate(store).inspect('k'), { key: 'k', exists: true, mark: 7, holder: null, quarantine: null });
  assert.equal(store.load('k').value, 'before');
});

test('two Gates over one store (as two processes) still lose compare-and-sets to each other: with maxRetries 0 the second write conflicts', async () => {
  const store = new MemoryHostStore();
  const a = new Gate(store, { maxRetries: 0 });
  const b = new Gate(store, { maxRetries: 0 });
  await a.establish('k', 7);
  const [x, y] = await Promise.allSettled([a.write('k', 7, 'a'), b.write('k', 7, 'b')]);
  assert.equal(x.value.outcome, 'accept');
  assert.ok(isCode('COMMIT_CONFLICT', /conflicted 1 times/)(y.reason));
  assert.deepEqual(await a.read('k'), { mark: 7, value: 'a', hasValue: true });
});

test('one Issuer, one scope: 30 concurrent acquires → 1 granted (epoch 1), 29 LEASE_HELD, no COMMIT_CONFLICT; 20 concurrent raises all ok', async () => {
  const issuer = new Issuer(new MemoryHostStore());
  const res = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => issuer.acquire({ scope: 'x', holder: `h${i}`, ttlMs: 1000, now: 0 })));
  assert.deepEqual(
    res.map((r) => (r.status === 'fulfilled' ? r.value.code ?? `granted ${r.value.epoch} ${r.value.holder}` : r.reason.code)),
    ['granted 1 h0', ...Array(29).fill('LEASE_HELD')],
  );
  const raised = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => issuer.raise({ scope: 'y', atLeast: i + 1, now: 0 })));
  assert.deepEqual(
    raised.map((r) => (r.status === 'fulfilled' ? `${r.value.epochBefore}→${r.value.epoch}` : r.reason.code)),
    Array.from({ length: 20 }, (_, i) => `${i}→${i + 1}`),
  );
  assert.equal((await issuer.current('y')).epoch, 20);
});
