// Issue 19: the faults found by fuzzing the public API, each input a test with
// its exact expected result (the property tests in tests/js/properties/ keep
// looking for more of each kind).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import vm from 'node:vm';
import { MemoryGate, Gate, Issuer, MemoryHostStore, FencegateError, decodeState, reconcile } from '../../../pkg/node.mjs';

const code = (c, message) => (e) => {
  assert.ok(e instanceof FencegateError, `a FencegateError, got ${e?.constructor?.name}: ${e?.message}`);
  assert.equal(e.code, c);
  if (message !== undefined) assert.equal(e.message, message);
  return true;
};

/** A compare-and-set store over MemoryHostStore whose commit answers `answer` (and counts calls). */
function answering(answer) {
  const inner = new MemoryHostStore();
  const store = { inner, commits: 0, load: (k) => inner.load(k), commit: () => (store.commits++, answer) };
  return store;
}

const throwing = () => {
  throw new Error('conversion called');
};

// ## 1. Messages never call a user value's own conversion

test('sameEpoch: Object.create(null) is INVALID_ARGUMENT on MemoryGate and Gate (was a foreign TypeError)', () => {
  const message = "sameEpoch must be 'allow' or 'strict', got an object";
  assert.throws(() => new MemoryGate({ sameEpoch: Object.create(null) }), code('INVALID_ARGUMENT', message));
  assert.throws(() => new Gate(new MemoryHostStore(), { sameEpoch: Object.create(null) }), code('INVALID_ARGUMENT', message));
  assert.throws(() => new MemoryGate({ sameEpoch: new Proxy({}, {}) }), code('INVALID_ARGUMENT', message));
  assert.throws(() => new MemoryGate({ sameEpoch: { toString: throwing, valueOf: throwing } }), code('INVALID_ARGUMENT', message));
  assert.throws(() => new MemoryGate({ sameEpoch: { [Symbol.toPrimitive]: throwing } }), code('INVALID_ARGUMENT', message));
  assert.throws(() => new MemoryGate({ sameEpoch: Symbol('s') }), code('INVALID_ARGUMENT', "sameEpoch must be 'allow' or 'strict', got a symbol"));
  assert.throws(() => new MemoryGate({ sameEpoch: 'lax' }), code('INVALID_ARGUMENT', `sameEpoch must be 'allow' or 'strict', got "lax"`));
  assert.throws(() => new Issuer(new MemoryHostStore(), { epochs: Object.create(null) }), code('INVALID_ARGUMENT', "epochs must be 'number' or 'bigint', got an object"));
  assert.throws(
    () => new MemoryGate({ higherEpoch: { mode: Object.create(null) } }),
    code('INVALID_ARGUMENT', "higherEpoch.mode must be 'adopt', 'adopt-within' or 'reject-future', got an object"),
  );
  assert.throws(() => new MemoryGate({ higherEpoch: { mode: { toString: () => 'adopt' } } }), code('INVALID_ARGUMENT'));
});

test('a commit returning Object.create(null) is COMMIT_UNKNOWN in Gate.write, Gate.quarantine and Issuer.acquire, like one returning "yes"', async () => {
  const why = (what) =>
    `host store commit("k") may or may not have committed (commit returned ${what}, not true or false); ` +
    'retrying the same operation with the same token is safe';
  for (const [answer, what] of [
    [Object.create(null), 'an object'],
    ['yes', '"yes"'],
    [new Proxy({}, {}), 'an object'],
    [{ toString: throwing, valueOf: throwing }, 'an object'],
    [{ [Symbol.toPrimitive]: throwing }, 'an object'],
    [Symbol('s'), 'a symbol'],
    [[1], 'an array'],
    [1, '1'],
    [1n, '1n'],
    [undefined, 'undefined'],
    [null, 'null'],
  ]) {
    // The input: a store with load → null.
    await assert.rejects(new Gate({ load: () => null, commit: () => answer }).write('k', 1, 'v'), code('COMMIT_UNKNOWN', why(what)));
    for (const op of [
      (g) => g.write('k', 1, 'v'),
      (g) => g.establish('k', 1),
      (g) => g.delete('k', 1),
      (g) => g.quarantine('k', 1),
      (g) => g.write('k', 1, 'v', { opId: 'o', holder: 'h' }),
    ]) {
      const store = answering(answer);
      await assert.rejects(op(new Gate(store)), code('COMMIT_UNKNOWN', why(what)));
      assert.equal(store.commits, 1); // no retry: it may have committed
      assert.deepEqual(store.inner.keys(), []);
    }
    const store = answering(answer);
    await assert.rejects(new Gate(store).deleteMany(['k', 'j'], 1), code('COMMIT_UNKNOWN', why(what)));
    assert.equal(store.commits, 1);
    const issuerStore = answering(answer);
    await assert.rejects(
      new Issuer(issuerStore).acquire({ scope: 's', holder: 'h', ttlMs: 10, now: 0, requestId: 'r1' }),
      code(
        'COMMIT_UNKNOWN',
        `host store commit("issuer:s") may or may not have committed (commit returned ${what}, not true or false); no result was returned; ` +
          'retry acquire with the same requestId: it returns the lease if it was committed, or grants the same next epoch if not',
      ),
    );
    assert.equal(issuerStore.commits, 1);
  }
});

test('a host callback that throws a value without a printable form is STORE_ERROR with a safe message', async () => {
  for (const [thrown, what] of [
    [Object.create(null), 'an object'],
    [new Proxy({}, {}), 'an object'],
    [{ toString: throwing, valueOf: throwing }, 'an object'],
    [Symbol('s'), 'a symbol'],
    ['plain text', 'plain text'],
    [{ message: 'error-like' }, 'error-like'],
    [{ message: Object.create(null) }, 'an object'],
    [{ get message() { throw new Error('getter'); } }, 'an error whose message cannot be read'],
  ]) {
    const fail = () => {
      throw thrown;
    };
    await assert.rejects(new Gate({ load: fail, commit: () => true }).write('k', 1, 'v'), code('STORE_ERROR', `host store load("k") failed: ${what}`));
    await assert.rejects(new Gate({ transaction: fail }).write('k', 1, 'v'), code('STORE_ERROR', `host store transaction("k") failed: ${what}`));
    await assert.rejects(new Gate({ load: () => null, commit: fail }).quarantine('k', 1), code('STORE_ERROR', `host store commit("k") failed: ${what}`));
    await assert.rejects(new Issuer({ load: fail, commit: () => true }).acquire({ scope: 's', holder: 'h', ttlMs: 1, now: 0 }), code('STORE_ERROR'));
  }
  // An error whose commitUnknown getter throws says nothing about the commit: STORE_ERROR.
  const odd = Object.defineProperty(new Error('lost'), 'commitUnknown', { get: throwing });
  await assert.rejects(
    new Gate({ load: () => null, commit: () => { throw odd; } }).write('k', 1, 'v'),
    code('STORE_ERROR', 'host store commit("k") failed: lost'),
  );
});

// ## 2. Lists: what is validated is what is used

test('deleteMany([, "x"], 5) is INVALID_ARGUMENT and writes nothing for any key (was a record under the key undefined)', async () => {
  const store = new MemoryHostStore();
  // eslint-disable-next-line no-sparse-arrays
  await assert.rejects(new Gate(store).deleteMany([, 'x'], 5), code('INVALID_ARGUMENT', 'keys[0] is missing (a sparse array); nothing was done'));
  assert.deepEqual(store.keys(), []);
  // A hole after valid keys: still nothing written, not even for the keys before it.
  // eslint-disable-next-line no-sparse-arrays
  await assert.rejects(new Gate(store).deleteMany(['a', 'b', , 'c'], 5), code('INVALID_ARGUMENT', 'keys[2] is missing (a sparse array); nothing was done'));
  await assert.rejects(new Gate(store).deleteMany(['a', undefined], 5), code('INVALID_ARGUMENT'));
  await assert.rejects(new Gate(store).deleteMany(['a', '\ud800'], 5), code('INVALID_ARGUMENT'));
  assert.deepEqual(store.keys(), []);
  // A getter that changes its answer between reads: the key checked is the key used.
  let reads = 0;
  const shifty = ['a'];
  Object.defineProperty(shifty, 1, { enumerable: true, get: () => (reads++ === 0 ? 'b' : undefined) });
  const verdicts = await new Gate(store).deleteMany(shifty, 5);
  assert.deepEqual(verdicts.map((v) => [v.key, v.outcome, v.markAfter]), [['a', 'advance', 5], ['b', 'advance', 5]]);
  assert.deepEqual(store.keys(), ['a', 'b']);
  assert.equal(reads, 1);
});

test('retired key ids: a sparse list is INVALID_ARGUMENT, no gate is made', () => {
  const keys = { k1: new Uint8Array(32) };
  // eslint-disable-next-line no-sparse-arrays
  assert.throws(() => new MemoryGate({ keys, retired: ['old', , 'older'] }), code('INVALID_ARGUMENT', 'retired[1] is missing (a sparse array); nothing was done'));
  assert.throws(() => new Gate(new MemoryHostStore(), { keys, retired: new Array(2) }), code('INVALID_ARGUMENT'));
  new MemoryGate({ keys, retired: ['old'] });
});

test('reconcile checks every scope and key (holes included) before it reads or writes anything', async () => {
  const store = new MemoryHostStore();
  const issuer = new Issuer(store);
  const gate = new Gate(store);
  await gate.establish('a', 9);
  const before = store.keys();
  for (const scopes of [
    // eslint-disable-next-line no-sparse-arrays
    { s1: ['a'], s2: ['b', , 'c'] },
    { s1: ['a'], s2: ['b', undefined] },
    { s1: ['a'], s2: ['\ud800'] },
    // eslint-disable-next-line no-sparse-arrays
    [{ scope: 's1', keys: ['a'] }, , { scope: 's2', keys: ['b'] }],
    [{ scope: 's1', keys: ['a'] }, { scope: 'x'.repeat(1025), keys: ['b'] }],
    [{ scope: 's1', keys: ['a'] }, { scope: '', keys: ['b'] }],
    [{ scope: 's1', keys: ['a'] }, { scope: Object.create(null), keys: ['b'] }],
  ]) {
    await assert.rejects(reconcile({ issuer, gate, scopes, now: 0 }), code('INVALID_ARGUMENT'));
    assert.deepEqual(store.keys(), before); // s1 (listed first, valid) was not raised
    assert.equal((await issuer.current('s1')).epoch, 0);
  }
});

// ## 3. The object form of stored state is read field by field

/** A compare-and-set store that hands back `state` as given (an object) for key k. */
function objectStore(state) {
  const store = { commits: 0, load: () => ({ state, version: 1, value: 'before' }), commit: () => (store.commits++, true) };
  return store;
}

test('quarantine: NaN in a stored state object is CORRUPT_STATE and nothing is written (write(k, 7) was accepted)', async () => {
  const state = { v: 3, mark: '7', holder: null, ops: {}, evicted: null, quarantine: NaN };
  const store = objectStore(state);
  await assert.rejects(
    new Gate(store).write('k', 7, 'x'),
    code('CORRUPT_STATE', 'the stored state of "k" is not JSON data: state.quarantine is NaN, not a finite number'),
  );
  assert.equal(store.commits, 0);
  await assert.rejects(new Gate(store).inspect('k'), code('CORRUPT_STATE'));
  assert.throws(() => decodeState(state), code('CORRUPT_STATE', 'the state is not JSON data: state.quarantine is NaN, not a finite number'));
  // The same state with its real floor decodes, and refuses epoch 7.
  const good = { ...state, quarantine: '7' };
  assert.deepEqual(decodeState(good), { mark: 7, quarantine: 7 });
  const v = await new Gate(objectStore(good)).write('k', 7, 'x');
  assert.deepEqual([v.outcome, v.code, v.markAfter], ['reject', 'QUARANTINED', 7]);
});

test('a state object whose toJSON says mark 99 while its fields say 5: CORRUPT_STATE, never mark 99', async () => {
  const state = { v: 1, mark: '5', toJSON: () => ({ v: 1, mark: '99' }) };
  const store = objectStore(state);
  await assert.rejects(new Gate(store).read('k'), code('CORRUPT_STATE', 'the stored state of "k" is not JSON data: state.toJSON is a function, not a JSON value'));
  await assert.rejects(new Gate(store).write('k', 6, 'x'), code('CORRUPT_STATE'));
  assert.equal(store.commits, 0);
  assert.throws(() => decodeState(state), code('CORRUPT_STATE'));
  // A toJSON on the prototype is never called either: the fields are read (a class instance is refused).
  class Stored {
    constructor() {
      this.v = 1;
      this.mark = '5';
    }
    toJSON() {
      return { v: 1, mark: '99' };
    }
  }
  assert.throws(() => decodeState(new Stored()), code('CORRUPT_STATE', 'the state is not JSON data: state is not a plain object or array (a class instance, Date, Map…)'));
  // Plain objects without a prototype, or from another realm, are read by their fields.
  assert.deepEqual(decodeState(Object.assign(Object.create(null), { v: 1, mark: '5' })), { mark: 5 });
  assert.deepEqual(decodeState(vm.runInNewContext('({ v: 1, mark: "5" })')), { mark: 5 });
  assert.deepEqual(await new Gate(objectStore(vm.runInNewContext('({ v: 1, mark: "5" })'))).read('k'), { mark: 5, value: 'before', hasValue: true });
});

test('holder: NaN in a stored state object is CORRUPT_STATE (it silently dropped the holder binding)', async () => {
  const state = { v: 2, mark: '7', holder: NaN, ops: {}, evicted: null };
  const store = objectStore(state);
  await assert.rejects(new Gate(store).inspect('k'), code('CORRUPT_STATE', 'the stored state of "k" is not JSON data: state.holder is NaN, not a finite number'));
  await assert.rejects(new Gate(store).write('k', 7, 'x', { holder: 'intruder' }), code('CORRUPT_STATE'));
  assert.equal(store.commits, 0);
  const bound = await new Gate(objectStore({ ...state, holder: 'node-a' })).write('k', 7, 'x', { holder: 'intruder' });
  assert.deepEqual([bound.outcome, bound.code], ['reject', 'EPOCH_CONFLICT']);
});

test('everything JSON.stringify would change or drop in a state object is CORRUPT_STATE', async () => {
  const getter = Object.defineProperty({ v: 1 }, 'mark', { enumerable: true, get: () => '5' });
  const hidden = Object.defineProperty({ v: 1, mark: '5' }, 'quarantine', { enumerable: false, value: '9' });
  const cases = [
    [{ v: 1, mark: '5', extra: undefined }, 'state.extra is undefined, not a JSON value'],
    [{ v: Infinity, mark: '5' }, 'state.v is Infinity, not a finite number'],
    [{ v: 1, mark: 5n }, 'state.mark is 5n, not a JSON value'],
    [{ v: 1, mark: '5', [Symbol('s')]: 1 }, 'state has a symbol-named member'],
    [getter, 'state.mark is an accessor (getter/setter), not a data member'],
    [hidden, 'state.quarantine is not enumerable'],
    [{ v: 2, mark: '5', holder: 'a\ud800', ops: {}, evicted: null }, 'state.holder is a string with a lone surrogate'],
    [{ v: 2, mark: '5', holder: null, ops: new Map(), evicted: null }, 'state.ops is not a plain object or array (a class instance, Date, Map…)'],
    // eslint-disable-next-line no-sparse-arrays
    [{ v: 1, mark: '5', list: [1, , 2] }, 'state.list is an array with holes or extra members'],
    [{ v: 1, mark: new String('5') }, 'state.mark is not a plain object or array (a class instance, Date, Map…)'],
  ];
  for (const [state, why] of cases) {
    assert.throws(() => decodeState(state), code('CORRUPT_STATE', `the state is not JSON data: ${why}`));
    const store = objectStore(state);
    await assert.rejects(new Gate(store).write('k', 9, 'x'), code('CORRUPT_STATE', `the stored state of "k" is not JSON data: ${why}`));
    assert.equal(store.commits, 0);
  }
  // Deep or cyclic objects end in CORRUPT_STATE, not a stack overflow.
  const cyclic = { v: 1, mark: '5' };
  cyclic.self = cyclic;
  assert.throws(() => decodeState(cyclic), code('CORRUPT_STATE', 'the state is not JSON data: state.self.self.self.self.self.self.self.self.self.self.self.self.self.self.self.self nests deeper than 16 levels'));
  // A Proxy whose trap throws: CORRUPT_STATE with the trap's error as cause.
  const trap = new Error('trap');
  const proxy = new Proxy({}, { ownKeys: () => { throw trap; } });
  assert.throws(() => decodeState(proxy), (e) => code('CORRUPT_STATE', 'the state is not JSON data: it could not be read (trap)')(e) && e.cause === trap);
  // Text with a lone surrogate would reach Wasm altered (U+FFFD): CORRUPT_STATE.
  assert.throws(() => decodeState('{"v":2,"mark":"5","holder":"a\ud800","ops":{},"evicted":null}'), code('CORRUPT_STATE', 'the state is text with a lone surrogate'));
});

test('the issuer reads its state object field by field too', async () => {
  const store = new MemoryHostStore();
  const issuer = new Issuer(store);
  await issuer.acquire({ scope: 's', holder: 'h', ttlMs: 10, now: 0 });
  const text = store.load('issuer:s').state;
  const object = JSON.parse(text);
  const over = (state) => new Issuer({ load: () => ({ state, version: 1 }), commit: () => true });
  assert.equal((await over(object).current('s')).epoch, 1);
  const numeric = Object.keys(object).find((k) => typeof object[k] === 'number');
  const broken = { ...object, [numeric ?? 'extra']: NaN };
  await assert.rejects(over(broken).current('s'), code('CORRUPT_STATE'));
  await assert.rejects(over(broken).acquire({ scope: 's', holder: 'h', ttlMs: 10, now: 100 }), code('CORRUPT_STATE'));
  await assert.rejects(over({ ...object, toJSON: () => object }).current('s'), code('CORRUPT_STATE'));
});
