// Issue 2's token cases through the built package (pkg/node.mjs), each with the
// exact verdict and the state after. Every rejection leaves mark and value unchanged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryGate, parseToken, toToken, FencegateError } from '../../../pkg/node.mjs';

const MAX_U64 = 2n ** 64n - 1n;

/** A gate with key "k" at mark 5 holding "v5". */
function seeded() {
  const g = new MemoryGate();
  assert.equal(g.write('k', 5, 'v5').outcome, 'advance');
  return g;
}

function assertRefused(g, token, code) {
  const v = g.write('k', token, 'must-not-land');
  assert.deepEqual(v, { key: 'k', ok: false, outcome: 'reject', code, token: null, markBefore: 5, markAfter: 5 });
  assert.deepEqual(g.read('k'), { mark: 5, value: 'v5', hasValue: true });
  const e = g.establish('k', token);
  assert.equal(e.code, code);
  assert.equal(g.mark('k'), 5);
}

test('MISSING_TOKEN: undefined, null, no argument', () => {
  const g = seeded();
  assertRefused(g, undefined, 'MISSING_TOKEN');
  assertRefused(g, null, 'MISSING_TOKEN');
  // write('k') has no value: INVALID_ARGUMENT as Gate.write; nothing stored, value stays "v5".
  assert.throws(() => g.write('k'), { code: 'INVALID_ARGUMENT' });
  assert.deepEqual(g.read('k'), { mark: 5, value: 'v5', hasValue: true });
  assert.equal(g.establish('k').code, 'MISSING_TOKEN');
});

const MALFORMED = [
  ['0', 0], ['-0', -0], ['-1', -1], ['2.5', 2.5], ['NaN', NaN], ['Infinity', Infinity],
  ['-Infinity', -Infinity], ['2**53', 2 ** 53], ['true', true], ['false', false], ['"2"', '2'],
  ['""', ''], ['[2]', [2]], ['{epoch: 2}', { epoch: 2 }], ['0n', 0n], ['-1n', -1n], ['2n**64n', 2n ** 64n],
  ['2**64 (number)', 2 ** 64], ['Number.MAX_VALUE', Number.MAX_VALUE], ['Symbol', Symbol('7')],
  ['function', () => 7], ['new Number(7)', new Number(7)], ['Object(7n)', Object(7n)], ['"6" at mark 5', '6'],
];
for (const [name, token] of MALFORMED) {
  test(`MALFORMED_TOKEN: ${name}`, () => assertRefused(seeded(), token, 'MALFORMED_TOKEN'));
}

test('toToken agrees with the gate on every malformed value', () => {
  for (const [name, token] of MALFORMED) {
    assert.throws(() => toToken(token), (e) => e instanceof FencegateError && e.code === 'MALFORMED_TOKEN', name);
  }
  for (const token of [undefined, null]) {
    assert.throws(() => toToken(token), { code: 'MISSING_TOKEN', name: 'FencegateError' });
  }
});

test('valid tokens: 1, 2**53-1, 1n, 2n**64n-1n, canonical form', () => {
  const g = new MemoryGate();
  assert.deepEqual(g.write('a', 1, 'x'), { key: 'a', ok: true, outcome: 'advance', code: null, token: 1, markBefore: 0, markAfter: 1 });
  assert.deepEqual(g.write('b', 2 ** 53 - 1, 'x'), { key: 'b', ok: true, outcome: 'advance', code: null, token: 2 ** 53 - 1, markBefore: 0, markAfter: 2 ** 53 - 1 });
  // 1n is returned canonically as the number 1.
  assert.deepEqual(g.write('c', 1n, 'x'), { key: 'c', ok: true, outcome: 'advance', code: null, token: 1, markBefore: 0, markAfter: 1 });
  assert.deepEqual(g.write('d', MAX_U64, 'x'), { key: 'd', ok: true, outcome: 'advance', code: null, token: MAX_U64, markBefore: 0, markAfter: MAX_U64 });
  assert.equal(g.write('d', MAX_U64, 'y').outcome, 'accept');
  assert.deepEqual(g.read('d'), { mark: MAX_U64, value: 'y', hasValue: true });
  assert.equal(toToken(1), 1);
  assert.equal(toToken(2 ** 53 - 1), 2 ** 53 - 1);
  assert.equal(toToken(2n ** 53n - 1n), 2 ** 53 - 1);
  assert.equal(toToken(2n ** 53n), 2n ** 53n);
  assert.equal(toToken(MAX_U64), MAX_U64);
});

test('exact order above 2^53: mark 2n**53n then 2n**53n + 1n advances', () => {
  const g = new MemoryGate();
  assert.equal(g.establish('k', 2n ** 53n).outcome, 'advance');
  assert.equal(g.mark('k'), 2n ** 53n);
  const v = g.write('k', 2n ** 53n + 1n, 'above');
  assert.deepEqual(v, { key: 'k', ok: true, outcome: 'advance', code: null, token: 2n ** 53n + 1n, markBefore: 2n ** 53n, markAfter: 2n ** 53n + 1n });
  // 2**53 as a number would round onto 2n**53n: it is refused, not compared.
  assert.equal(g.write('k', 2 ** 53, 'x').code, 'MALFORMED_TOKEN');
  // 2n**53n (one below) is stale even though as floats the two are equal.
  assert.equal(g.write('k', 2n ** 53n, 'x').code, 'STALE_TOKEN');
  assert.deepEqual(g.read('k'), { mark: 2n ** 53n + 1n, value: 'above', hasValue: true });
  assert.deepEqual(g.state('k'), { v: 1, mark: '9007199254740993' });
});

test('parseToken: canonical decimal grammar', () => {
  assert.equal(parseToken('7'), 7);
  assert.equal(parseToken('9007199254740991'), 2 ** 53 - 1);
  assert.equal(parseToken('9007199254740993'), 2n ** 53n + 1n);
  assert.equal(parseToken('18446744073709551615'), MAX_U64);
  for (const text of ['07', '+7', ' 7', '7 ', '1e3', '2.5', '0', '-1', '0x10', '18446744073709551616', '', '7\n', '٧', '1_000', 'Infinity', '00']) {
    assert.throws(() => parseToken(text), (e) => e instanceof FencegateError && e.code === 'MALFORMED_TOKEN' && e.token === text, JSON.stringify(text));
  }
  assert.throws(() => parseToken(undefined), { code: 'MISSING_TOKEN' });
  assert.throws(() => parseToken(null), { code: 'MISSING_TOKEN' });
  for (const v of [7, 7n, true, {}, ['7']]) assert.throws(() => parseToken(v), { code: 'MALFORMED_TOKEN' });
});

test('with mark 50, the text "6" is never compared as text', () => {
  const g = new MemoryGate();
  g.write('k', 50, 'fifty');
  // Raw text is refused outright (lexicographically "6" > "50").
  assert.equal(g.write('k', '6', 'x').code, 'MALFORMED_TOKEN');
  // Parsed, it is the number 6 and stale.
  const v = g.write('k', parseToken('6'), 'x');
  assert.deepEqual(v, { key: 'k', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 6, markBefore: 50, markAfter: 50 });
  // And "100" parsed is larger than 50, though it sorts before it as text.
  assert.equal(g.write('k', parseToken('100'), 'hundred').outcome, 'advance');
  assert.deepEqual(g.read('k'), { mark: 100, value: 'hundred', hasValue: true });
});

test('no narrow integer types: 2^31-1 → 2^31 and 2^32-1 → 2^32 advance, and back is stale', () => {
  const g = new MemoryGate();
  for (const [lo, hi] of [[2 ** 31 - 1, 2 ** 31], [2 ** 32 - 1, 2 ** 32], [2 ** 16 - 1, 2 ** 16]]) {
    const key = `k${hi}`;
    assert.equal(g.write(key, lo, 'lo').outcome, 'advance');
    assert.deepEqual(g.write(key, hi, 'hi'), { key, ok: true, outcome: 'advance', code: null, token: hi, markBefore: lo, markAfter: hi });
    assert.equal(g.write(key, lo, 'x').code, 'STALE_TOKEN');
    assert.deepEqual(g.read(key), { mark: hi, value: 'hi', hasValue: true });
  }
});
