// MemoryGate behaviour: decisions, establish, policies, keys, state, arguments.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryGate, FencegateError, decodeState, encodeState, errorCodes } from '../../../pkg/node.mjs';

test('advance, accept, stale: exact verdicts, marks and values', () => {
  const g = new MemoryGate();
  assert.equal(g.sameEpoch, 'allow');
  assert.deepEqual(g.read('r'), { mark: 0, value: undefined, hasValue: false });
  assert.deepEqual(g.write('r', 3, 'a'), { key: 'r', ok: true, outcome: 'advance', code: null, token: 3, markBefore: 0, markAfter: 3 });
  assert.deepEqual(g.write('r', 3, 'b'), { key: 'r', ok: true, outcome: 'accept', code: null, token: 3, markBefore: 3, markAfter: 3 });
  assert.deepEqual(g.write('r', 2, 'c'), { key: 'r', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 2, markBefore: 3, markAfter: 3 });
  assert.deepEqual(g.read('r'), { mark: 3, value: 'b', hasValue: true });
});

test('two keys are independent: advancing A leaves B at mark 0', () => {
  const g = new MemoryGate();
  g.write('A', 9, 'a');
  assert.equal(g.mark('A'), 9);
  assert.equal(g.mark('B'), 0);
  assert.equal(g.value('B'), undefined);
  assert.deepEqual(g.write('B', 1, 'b'), { key: 'B', ok: true, outcome: 'advance', code: null, token: 1, markBefore: 0, markAfter: 1 });
  assert.deepEqual(g.keys(), ['A', 'B']);
});

test('establish raises the mark with no data change, fencing older epochs', () => {
  const g = new MemoryGate();
  g.write('r', 1, 'old-owner');
  assert.deepEqual(g.establish('r', 2), { key: 'r', ok: true, outcome: 'advance', code: null, token: 2, markBefore: 1, markAfter: 2 });
  assert.deepEqual(g.read('r'), { mark: 2, value: 'old-owner', hasValue: true });
  assert.equal(g.write('r', 1, 'late').code, 'STALE_TOKEN');
  assert.equal(g.value('r'), 'old-owner');
  // Re-establishing the same epoch is an idempotent accept; a lower one is stale.
  assert.equal(g.establish('r', 2).outcome, 'accept');
  assert.equal(g.establish('r', 1).code, 'STALE_TOKEN');
  // establish alone on a fresh key records a mark but no value.
  g.establish('fresh', 4);
  assert.deepEqual(g.read('fresh'), { mark: 4, value: undefined, hasValue: false });
});

test("strict same-epoch policy: equal tokens are SAME_EPOCH_REJECTED (establish still accepts)", () => {
  const g = new MemoryGate({ sameEpoch: 'strict' });
  assert.equal(g.sameEpoch, 'strict');
  assert.equal(g.write('r', 1, 'a').outcome, 'advance');
  assert.deepEqual(g.write('r', 1, 'b'), { key: 'r', ok: false, outcome: 'reject', code: 'SAME_EPOCH_REJECTED', token: 1, markBefore: 1, markAfter: 1 });
  assert.equal(g.value('r'), 'a');
  assert.equal(g.write('r', 2, 'c').outcome, 'advance');
  assert.equal(g.establish('r', 2).outcome, 'accept');
  assert.equal(g.write('r', 2, 'd').code, 'SAME_EPOCH_REJECTED');
  assert.deepEqual(g.read('r'), { mark: 2, value: 'c', hasValue: true });
});

test('a rejected first write creates no state', () => {
  const g = new MemoryGate();
  assert.equal(g.write('k', 0, 'x').code, 'MALFORMED_TOKEN');
  assert.deepEqual(g.keys(), []);
  assert.equal(g.state('k'), undefined);
});

test('values are stored by reference and may be any JS value', () => {
  const g = new MemoryGate();
  const obj = { n: 1 };
  g.write('o', 1, obj);
  assert.equal(g.value('o'), obj);
  // undefined is refused as by Gate.write (INVALID_ARGUMENT, nothing changed)
  assert.throws(() => g.write('o', 1, undefined), (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT');
  assert.deepEqual(g.read('o'), { mark: 1, value: obj, hasValue: true });
  g.write('o', 2, null);
  assert.equal(g.value('o'), null);
});

test('bad arguments throw INVALID_ARGUMENT and change nothing', () => {
  const g = new MemoryGate();
  g.write('k', 1, 'v');
  for (const key of [undefined, null, 1, {}, ['k'], Symbol('k')]) {
    assert.throws(() => g.write(key, 2, 'x'), (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT');
    assert.throws(() => g.establish(key, 2), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => g.mark(key), { code: 'INVALID_ARGUMENT' });
  }
  assert.deepEqual(g.read('k'), { mark: 1, value: 'v', hasValue: true });
  for (const opts of [{ sameEpoch: 'lenient' }, { sameEpoch: true }, 'strict', 5]) {
    assert.throws(() => new MemoryGate(opts), { code: 'INVALID_ARGUMENT' });
  }
});

test('persisted state: versioned, JSON-safe, exact; damage is CORRUPT_STATE', () => {
  const g = new MemoryGate();
  g.write('k', 2n ** 64n - 1n, 'max');
  const state = g.state('k');
  assert.deepEqual(state, { v: 1, mark: '18446744073709551615' });
  const text = JSON.stringify(state);
  assert.equal(text, '{"v":1,"mark":"18446744073709551615"}');
  assert.deepEqual(decodeState(text), { mark: 2n ** 64n - 1n });
  assert.deepEqual(decodeState(state), { mark: 2n ** 64n - 1n });
  assert.deepEqual(decodeState({ v: 1, mark: '0' }), { mark: 0 });
  assert.deepEqual(encodeState(41), { v: 1, mark: '41' });
  assert.deepEqual(encodeState(0), { v: 1, mark: '0' });
  assert.deepEqual(encodeState(2n ** 53n + 1n), { v: 1, mark: '9007199254740993' });
  for (const bad of [
    '{"v":2,"mark":"41"}', '{"v":1,"mark":41}', '{"v":1,"mark":"041"}', '{"v":1}', '{"mark":"1"}',
    '{"v":1,"mark":"1","x":1}', '{"v":"1","mark":"1"}', 'not json', '', '[]', 'null', '7',
    { v: 1, mark: 41n }, { v: 1.5, mark: '1' }, [], null, undefined, 7, true,
  ]) {
    assert.throws(() => decodeState(bad), (e) => e instanceof FencegateError && e.code === 'CORRUPT_STATE', JSON.stringify(String(bad)));
  }
  for (const bad of [-1, 2.5, 'x', 2n ** 64n, null]) assert.throws(() => encodeState(bad), { code: 'INVALID_ARGUMENT' });
});

test('error codes are the documented stable list', () => {
  assert.deepEqual(errorCodes().slice(0, 15), [
    'MISSING_TOKEN', 'MALFORMED_TOKEN', 'STALE_TOKEN', 'SAME_EPOCH_REJECTED', 'CORRUPT_STATE',
    'STORE_ERROR', 'COMMIT_CONFLICT', 'COMMIT_UNKNOWN', 'LEASE_HELD', 'LEASE_EXPIRED',
    'EPOCH_OVERFLOW', 'BAD_SIGNATURE', 'WRONG_SCOPE', 'INVALID_ARGUMENT', 'NOT_INITIALIZED',
  ]);
});

test('randomised: the mark is always the maximum applied token, never decreases', () => {
  const g = new MemoryGate();
  let seed = 12345;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  let mark = 0;
  let value;
  for (let i = 0; i < 2000; i++) {
    const t = (rnd() % 50) + 1;
    const v = g.write('k', t, i);
    assert.equal(v.ok, t >= mark);
    assert.equal(v.markBefore, mark);
    if (v.ok) { mark = t; value = i; }
    assert.equal(v.markAfter, mark);
    assert.equal(g.value('k'), value);
  }
});

test('free() releases the gate', () => {
  const g = new MemoryGate();
  g.write('k', 1, 1);
  g.free();
  assert.throws(() => g.mark('k'));
});
