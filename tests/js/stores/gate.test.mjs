// Gate's own contract, independent of any engine: callback shapes (sync and
// Promise-returning), state as an object or text, arguments, and how host
// failures map to codes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Gate, MemoryGate, FencegateError } from '../../../pkg/node.mjs';

const code = (c) => (e) => e instanceof FencegateError && e.code === c;

function objectStore(initial) {
  // a host that keeps the state as an object (like Durable Object storage), synchronously
  const m = new Map(initial);
  return {
    m,
    load: (k) => (m.has(k) ? { ...m.get(k) } : null),
    commit: (k, expected, next, change) => {
      const cur = m.get(k);
      if ((cur ? cur.version : null) !== expected) return false;
      m.set(k, { state: next, version: (cur ? cur.version : 0) + 1, value: change.kind === 'set' ? change.value : change.kind === 'delete' ? undefined : cur?.value });
      return true;
    },
  };
}

test('synchronous callbacks and object-shaped state; verdicts match MemoryGate exactly', async () => {
  const store = objectStore();
  const gate = new Gate(store);
  const mem = new MemoryGate();
  const steps = [[3, 'a'], [3, 'b'], [2, 'c'], [undefined, 'd'], [2n ** 64n - 1n, 'e'], [2n ** 64n - 2n, 'f'], ['7', 'g']];
  for (const [token, value] of steps) {
    assert.deepEqual(await gate.write('k', token, value), mem.write('k', token, value), String(token));
  }
  assert.deepEqual(store.m.get('k').state, { v: 1, mark: '18446744073709551615' });
  assert.deepEqual(await gate.read('k'), mem.read('k'));
  assert.deepEqual(await gate.establish('j', 4), mem.establish('j', 4));
  assert.equal(gate.shape, 'compare-and-set');
  assert.equal(gate.sameEpoch, 'allow');
});

test('object-shaped corrupt state, and a record without state, are CORRUPT_STATE', async () => {
  for (const state of [{ v: 1, mark: 5 }, { v: 1, mark: '5', extra: 1 }, { v: 2, mark: '5' }, [1], 5, true]) {
    const store = objectStore([['k', { state, version: 1, value: 'old' }]]);
    await assert.rejects(new Gate(store).write('k', 9, 'new'), code('CORRUPT_STATE'));
    assert.deepEqual(store.m.get('k'), { state, version: 1, value: 'old' });
  }
  for (const state of [null, undefined]) {
    const store = objectStore([['k', { state, version: 1, value: 'old' }]]);
    const e = await new Gate(store).write('k', 9, 'new').catch((x) => x);
    assert.equal(e.code, 'CORRUPT_STATE');
    assert.equal(e.key, 'k');
  }
  // a text state with spaces is valid format v1 (slow path), not corrupt
  const store = objectStore([['k', { state: '{ "v": 1, "mark": "5" }', version: 1 }]]);
  assert.equal((await new Gate(store).write('k', 4, 'x')).code, 'STALE_TOKEN');
  assert.equal((await new Gate(store).read('k')).mark, 5);
});

test('a load that answers nonsense is STORE_ERROR', async () => {
  const gate = new Gate({ load: () => 42, commit: () => true });
  await assert.rejects(gate.write('k', 1, 'x'), code('STORE_ERROR'));
  const rejecting = new Gate({ load: () => Promise.reject('not an Error'), commit: () => true });
  const e = await rejecting.write('k', 1, 'x').catch((x) => x);
  assert.equal(e.code, 'STORE_ERROR');
  assert.equal(e.cause, 'not an Error');
});

test('transaction shape: CORRUPT_STATE from inside fn survives the host wrapping it; a host retry uses the last decision', async () => {
  const wrapping = new Gate({
    transaction: (k, fn) => {
      try {
        fn('{"v":1,"mark":"x"}');
      } catch (e) {
        throw new Error('rolled back', { cause: e });
      }
    },
  });
  await assert.rejects(wrapping.write('k', 1, 'x'), code('CORRUPT_STATE'));
  const states = [null, '{"v":1,"mark":"8"}'];
  let out;
  const retrying = new Gate({
    transaction: async (k, fn) => {
      for (const s of states) out = fn(s); // e.g. DO storage retrying after a conflict
    },
  });
  assert.deepEqual(await retrying.write('k', 5, 'x'), { key: 'k', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 5, markBefore: 8, markAfter: 8 });
  assert.equal(out, null);
  await assert.rejects(retrying.read('k'), code('INVALID_ARGUMENT')); // no load: reads need one
});

test('bad arguments are INVALID_ARGUMENT', async () => {
  const store = objectStore();
  assert.throws(() => new Gate(null), code('INVALID_ARGUMENT'));
  assert.throws(() => new Gate({ load() {} }), code('INVALID_ARGUMENT'));
  assert.throws(() => new Gate(store, { sameEpoch: 'sometimes' }), code('INVALID_ARGUMENT'));
  assert.throws(() => new Gate(store, { maxRetries: -1 }), code('INVALID_ARGUMENT'));
  assert.throws(() => new Gate(store, { maxRetries: 1.5 }), code('INVALID_ARGUMENT'));
  assert.throws(() => new Gate(store, { commitTimeoutMs: 0 }), code('INVALID_ARGUMENT'));
  assert.throws(() => new Gate(store, 'strict'), code('INVALID_ARGUMENT'));
  const gate = new Gate(store);
  await assert.rejects(gate.write(1, 1, 'x'), code('INVALID_ARGUMENT'));
  await assert.rejects(gate.write('k', 1, undefined), code('INVALID_ARGUMENT'));
  await assert.rejects(gate.deleteMany('k', 1), code('INVALID_ARGUMENT'));
  await assert.rejects(gate.deleteMany(['a', 2], 1), code('INVALID_ARGUMENT'));
  assert.equal(store.m.size, 0);
});

test('maxRetries: 0 means one attempt; commit returning a truthy non-true value is COMMIT_UNKNOWN', async () => {
  let commits = 0;
  const gate = new Gate({ load: () => null, commit: () => (commits++, false) }, { maxRetries: 0 });
  const e = await gate.write('k', 1, 'x').catch((x) => x);
  assert.deepEqual([e.code, e.attempts, commits], ['COMMIT_CONFLICT', 1, 1]);
  const truthy = new Gate({ load: () => null, commit: () => 1 });
  await assert.rejects(truthy.write('k', 1, 'x'), code('COMMIT_UNKNOWN'));
});
