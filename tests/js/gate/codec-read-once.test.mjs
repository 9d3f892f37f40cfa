// Fixes after the new-user trial, item 2: the value codecs read every property
// (getter, Proxy trap) exactly once, and encode what they read. A value that
// answers differently on a second read is stored exactly as read once, or
// refused; never as something else (the trial stored a Map-returning getter as `{}`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { Gate, FencegateError, valueCodec, jsonCodec } from '../../../pkg/node.mjs';
import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';

const isInvalid = (path, message) => (e) =>
  e instanceof FencegateError && e.code === 'INVALID_ARGUMENT' && e.path === path && message.test(e.message);

/** `{ x }` whose getter answers `first` on the first read and `later` on every other; `reads()` counts them. */
function flipping(first, later) {
  let n = 0;
  return { value: { get x() { return ++n === 1 ? first : later; } }, reads: () => n };
}

test('the trial case: a getter answering 1, then a Map → stored { x: 1 } through SqliteStore, the getter read once', async () => {
  const gate = new Gate(new SqliteStore(new Database(':memory:')));
  let n = 0;
  const value = { get x() { return ++n === 1 ? 1 : new Map([[1, 2]]); } };
  const v = await gate.write('k', 1, value);
  assert.equal(v.outcome, 'advance');
  assert.deepEqual(await gate.read('k'), { mark: 1, value: { x: 1 }, hasValue: true });
  assert.equal(n, 1);
});

test('a getter answering a Map, then 1 → stored as the Map (devalue form), read once; the JSON codec refuses it, read once', async () => {
  const a = flipping(new Map([[1, 2]]), 1);
  const text = valueCodec.encode(a.value);
  assert.equal(text, 'devalue:[{"x":1},["Map",2,3],1,2]');
  assert.deepEqual(valueCodec.decode(text), { x: new Map([[1, 2]]) });
  assert.equal(a.reads(), 1);
  const b = flipping(new Map([[1, 2]]), 1);
  assert.throws(() => jsonCodec.encode(b.value), isInvalid('value.x', /value\.x: Map is not encodable by the JSON codec/));
  assert.equal(b.reads(), 1);
});

test('a getter answering 1, then a function → { "x": 1 } in both codecs, read once each', () => {
  for (const codec of [valueCodec, jsonCodec]) {
    const f = flipping(1, () => 2);
    assert.equal(codec.encode(f.value), '{"x":1}');
    assert.equal(f.reads(), 1);
  }
});

test('a getter answering a function, then 1 → refused in both codecs (path value.x), read once', () => {
  for (const codec of [valueCodec, jsonCodec]) {
    const f = flipping(() => 2, 1);
    assert.throws(() => codec.encode(f.value), isInvalid('value.x', /value\.x: a function is not encodable/));
    assert.equal(f.reads(), 1);
  }
});

test('a getter answering a Map, then undefined → the Map is stored; through SqliteStore it reads back as { x: Map { 1 → 2 } }', async () => {
  const f = flipping(new Map([[1, 2]]), undefined);
  const gate = new Gate(new SqliteStore(new Database(':memory:')));
  assert.equal((await gate.write('k', 1, f.value)).outcome, 'advance');
  assert.deepEqual(await gate.read('k'), { mark: 1, value: { x: new Map([[1, 2]]) }, hasValue: true });
  assert.equal(f.reads(), 1);
});

test('an unstable Proxy (each get answers differently, ownKeys grows): encoded exactly as read once; an array element getter too', () => {
  const gets = [];
  const keyCalls = [];
  let round = 0;
  const proxy = new Proxy(
    { a: 0, b: 0 },
    {
      get(target, k) {
        gets.push(k);
        return k === 'a' ? ++round : new Set([round]);
      },
      ownKeys(target) {
        keyCalls.push(1);
        return keyCalls.length === 1 ? ['a', 'b'] : ['a', 'b', 'c'];
      },
      getOwnPropertyDescriptor(target, k) {
        return { value: 0, enumerable: true, configurable: true, writable: true };
      },
    },
  );
  const text = valueCodec.encode(proxy);
  assert.equal(text, 'devalue:[{"a":1,"b":2},1,["Set",1]]');
  assert.deepEqual(valueCodec.decode(text), { a: 1, b: new Set([1]) });
  assert.deepEqual(gets, ['a', 'b']);
  assert.equal(keyCalls.length, 1); // the keys were listed once too

  let n = 0;
  const arr = [0, 0];
  Object.defineProperty(arr, 1, { get: () => (++n === 1 ? 'first' : () => 0), enumerable: true });
  assert.equal(jsonCodec.encode(arr), '[0,"first"]');
  assert.equal(n, 1);
  // a second encode reads the element again (once): now a function, refused
  assert.throws(() => valueCodec.encode(arr), isInvalid('value[1]', /value\[1\]: a function is not encodable by the default codec/));
  assert.equal(n, 2);
});

test('shared references, cycles, boxed values, dates and an own __proto__ member keep their shape in the read-once copy', () => {
  const o = { n: 1 };
  const cyc = { name: 'loop' };
  cyc.self = cyc;
  const value = { a: o, b: o, cyc, d: new Date(5), s: Object('t'), re: /x+/gi };
  const text = valueCodec.encode(value);
  const back = valueCodec.decode(text);
  assert.equal(back.a, back.b);
  assert.equal(back.cyc.self, back.cyc);
  assert.deepEqual(back, value);
  const proto = JSON.parse('{"__proto__":{"x":1},"y":2}');
  assert.equal(jsonCodec.encode(proto), '{"__proto__":{"x":1},"y":2}');
  assert.equal(valueCodec.encode(proto), '{"__proto__":{"x":1},"y":2}');
});
