// Value fidelity (issue 21): every store and codec either gives back exactly
// what was written, or refuses the write with INVALID_ARGUMENT and a path,
// before the store is touched, leaving mark and stored value as they were.
// Runs on the reference stores, SQLite, Redis and PostgreSQL with the default
// codec and the strict JSON codec, and on MemoryHostStore (values by reference).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Gate, MemoryHostStore, FencegateError, valueCodec, jsonCodec } from '../../../pkg/node.mjs';
import { TARGETS, sqlite, redis, postgres, etcd, uniqueKey } from './targets.mjs';

const STATE5 = '{"v":1,"mark":"5"}';
const BIG_TEXT = 'large ✓ '.repeat(40_000); // 320,000 characters, 400,000 UTF-8 bytes
const NON_ASCII = 'héllo wörld · 日本語 · 😀 · \u0000 · \u2028 · \uD800 (a lone surrogate)';

class Point {
  constructor(x) {
    this.x = x;
  }
}

function shared() {
  const o = { n: 1 };
  return { a: o, b: o };
}

function cyclic() {
  const o = { name: 'loop' };
  o.self = o;
  return o;
}

// [name, make, default codec outcome, JSON codec outcome]: 'same' = read back
// identical (assert.deepStrictEqual: types, prototypes, -0, holes, own keys),
// or the exact INVALID_ARGUMENT message of the refusal.
const ROWS = [
  ['Map', () => new Map([['a', 1], [{ k: 2 }, [3]]]), 'same', 'value: Map is not encodable by the JSON codec'],
  ['Set', () => new Set([1, 2, 'x']), 'same', 'value: Set is not encodable by the JSON codec'],
  ['Date', () => new Date(0), 'same', 'value: Date is not encodable by the JSON codec'],
  ['an invalid Date', () => new Date(NaN), 'same', 'value: Date is not encodable by the JSON codec'],
  ['nested objects', () => ({ a: { b: [1, { c: 'x', d: null }], e: true }, f: [[[]]], g: -1.5e300 }), 'same', 'same'],
  ['-0', () => -0, 'same', 'value: -0 is not encodable by the JSON codec'],
  ['-0 in an array', () => [0, -0], 'same', 'value[1]: -0 is not encodable by the JSON codec'],
  ['a large string', () => BIG_TEXT, 'same', 'same'],
  ['non-ASCII text (NUL, U+2028, astral, lone surrogate)', () => ({ [NON_ASCII]: NON_ASCII }), 'same', 'same'],
  ['BigInt', () => 10n, 'same', 'value: BigInt is not encodable by the JSON codec'],
  ['BigInt above 2^64', () => ({ n: 2n ** 70n + 1n }), 'same', 'value.n: BigInt is not encodable by the JSON codec'],
  ['NaN', () => NaN, 'same', 'value: NaN is not encodable by the JSON codec'],
  ['±Infinity', () => [Infinity, -Infinity], 'same', 'value[0]: Infinity is not encodable by the JSON codec'],
  ['undefined members', () => ({ a: 1, b: undefined }), 'same', 'value.b: undefined is not encodable by the JSON codec'],
  ['sparse arrays', () => [1, , 3], 'same', 'value: a sparse array is not encodable by the JSON codec'], // eslint-disable-line no-sparse-arrays
  ['functions', () => () => 1, 'value: a function is not encodable by the default codec', 'value: a function is not encodable by the JSON codec'],
  [
    'a function deep inside',
    () => ({ items: [1, 2, 3, { run() {} }] }),
    'value.items[3].run: a function is not encodable by the default codec',
    'value.items[3].run: a function is not encodable by the JSON codec',
  ],
  ['symbols', () => Symbol('s'), 'value: a symbol is not encodable by the default codec', 'value: a symbol is not encodable by the JSON codec'],
  [
    'a symbol-keyed member',
    () => ({ a: { [Symbol('s')]: 1 } }),
    'value.a: a symbol-keyed property is not encodable by the default codec',
    'value.a: a symbol-keyed property is not encodable by the JSON codec',
  ],
  ['a Map inside an array', () => ({ items: [1, 2, 3, new Map()] }), 'same', 'value.items[3]: Map is not encodable by the JSON codec'],
  [
    'a class instance',
    () => ({ p: new Point(1) }),
    'value.p: an instance of Point is not encodable by the default codec',
    'value.p: an instance of Point is not encodable by the JSON codec',
  ],
  ['an Error', () => [new Error('x')], 'value[0]: an Error (Error) is not encodable by the default codec', 'value[0]: an Error (Error) is not encodable by the JSON codec'],
  [
    'toJSON (JSON would store what it returns)',
    () => ({ when: { toJSON: () => 'x' } }),
    'value.when.toJSON: a function is not encodable by the default codec',
    'value.when.toJSON: a function is not encodable by the JSON codec',
  ],
  [
    'a named property on an array',
    () => Object.assign([1], { extra: 2 }),
    'value.extra: a named property on an array (neither JSON nor devalue keeps it) is not encodable by the default codec',
    'value.extra: a named property on an array (neither JSON nor devalue keeps it) is not encodable by the JSON codec',
  ],
  [
    'a Map subclass',
    () => new (class Registry extends Map {})(),
    'value: an instance of Registry is not encodable by the default codec',
    'value: an instance of Registry is not encodable by the JSON codec',
  ],
  ['a null-prototype object', () => Object.assign(Object.create(null), { a: 1 }), 'same', 'value: an object with a null prototype is not encodable by the JSON codec'],
  ['RegExp', () => /a+b/giu, 'same', 'value: RegExp is not encodable by the JSON codec'],
  ['a typed array', () => new Uint8Array([1, 2, 255]), 'same', 'value: Uint8Array is not encodable by the JSON codec'],
  ['a cycle', cyclic, 'same', 'value.self: a cycle (a reference to an object that contains it) is not encodable by the JSON codec'],
  ['a shared reference (JSON: two equal copies)', shared, 'same', 'same'],
  ['an own __proto__ member (plain JSON)', () => JSON.parse('{"__proto__":{"x":1},"y":2}'), 'same', 'same'],
];

async function refusedWith(promise, message) {
  const e = await promise.then(
    (v) => assert.fail(`expected a refusal, got ${JSON.stringify(v)}`),
    (x) => x,
  );
  assert.ok(e instanceof FencegateError, String(e));
  assert.equal(e.code, 'INVALID_ARGUMENT');
  assert.equal(e.message, message);
  return e;
}

/** A store that counts its callbacks, to show a refused value never reaches it. */
function counting(store) {
  const calls = { load: 0, commit: 0, transaction: 0 };
  const w = {};
  for (const name of ['load', 'commit', 'transaction']) {
    if (typeof store[name] === 'function') {
      w[name] = (...args) => {
        calls[name]++;
        return store[name](...args);
      };
    }
  }
  w.encodeValue = (v) => store.encodeValue(v);
  return { store: w, calls };
}

const CODECS = [
  ['default codec', undefined, 2],
  ['JSON codec', jsonCodec, 3],
];

const FIDELITY_TARGETS = TARGETS.filter((t) => t.name !== 'lying compare-and-set (ignores the expected version)');

for (const target of FIDELITY_TARGETS) {
  for (const [codecName, codec, column] of CODECS) {
    describe(`value fidelity: ${target.name}, ${codecName}`, { skip: target.skip }, () => {
      test('every row: identical on read, or refused before the store is touched with mark and value unchanged', async () => {
        const t = await target.open(codec);
        try {
          const gate = new Gate(t.store);
          for (const row of ROWS) {
            const [name, make] = row;
            const expected = row[column];
            const k = uniqueKey('fidelity');
            assert.equal((await gate.write(k, 5, 'before')).outcome, 'advance');
            const before = await t.raw(k);
            assert.deepEqual(before, { state: STATE5, value: '"before"' });
            const value = make();
            if (expected === 'same') {
              assert.deepEqual(await gate.write(k, 6, value), {
                key: k, ok: true, outcome: 'advance', code: null, token: 6, markBefore: 5, markAfter: 6,
              }, name);
              const r = await gate.read(k);
              assert.equal(r.mark, 6, name);
              assert.equal(r.hasValue, true, name);
              if (name === 'an invalid Date') {
                // deepStrictEqual compares getTime(), and NaN !== NaN
                assert.ok(Object.getPrototypeOf(r.value) === Date.prototype && Number.isNaN(r.value.getTime()), name);
              } else {
                assert.deepStrictEqual(r.value, value, name);
              }
              if (name.startsWith('a shared')) assert.equal(r.value.a === r.value.b, codecName === 'default codec', name);
              if (name === 'a cycle') assert.equal(r.value.self, r.value, name);
              if (name.startsWith('a null-prototype')) assert.equal(Object.getPrototypeOf(r.value), null, name);
            } else {
              const { store, calls } = counting(t.store);
              await refusedWith(new Gate(store).write(k, 6, value), expected);
              assert.deepEqual(calls, { load: 0, commit: 0, transaction: 0 }, `${name}: the store was touched`);
              await refusedWith(gate.write(k, 6, value), expected);
              assert.deepEqual(await t.raw(k), before, `${name}: something was written`);
              assert.deepEqual(await gate.read(k), { mark: 5, value: 'before', hasValue: true }, name);
            }
          }
        } finally {
          await t.close();
        }
      });

      test("a direct commit/transaction with a refused value writes nothing (the store's own check)", async () => {
        const t = await target.open(codec);
        try {
          const k = uniqueKey('direct');
          const change = { kind: 'set', value: () => 1 };
          const next = { v: 1, mark: '1' };
          const msg = `value: a function is not encodable by the ${codecName}`;
          if (target.shape === 'cas') await refusedWith(Promise.resolve().then(() => t.store.commit(k, null, next, change)), msg);
          else await refusedWith(Promise.resolve().then(() => t.store.transaction(k, () => ({ nextState: next, change }))), msg);
          assert.equal(await t.raw(k), null);
        } finally {
          await t.close();
        }
      });
    });
  }
}

// Issue 21's table, under the chosen default, on each engine: each write answered
// `advance, ok: true` before and changed the value silently; now it is exact or refused.
for (const target of [sqlite, redis, postgres, etcd]) {
  describe(`issue 21 table: ${target.name}`, { skip: target.skip }, () => {
    test('Map, Set, Date and NaN come back identical; a function, and top-level undefined, are refused with nothing written', async () => {
      const t = await target.open();
      try {
        const gate = new Gate(t.store);
        const rows = [
          [new Map([['a', 1]]), 'devalue:[["Map",1,2],"a",1]'],
          [new Set([1, 2]), 'devalue:[["Set",1,2],1,2]'],
          [new Date(0), 'devalue:[["Date","1970-01-01T00:00:00.000Z"]]'],
          [NaN, 'devalue:-3'],
          [10n, 'devalue:[["BigInt","10"]]'],
        ];
        let epoch = 1;
        for (const [value, text] of rows) {
          const k = uniqueKey('table');
          assert.deepEqual(await gate.write(k, epoch, value), {
            key: k, ok: true, outcome: 'advance', code: null, token: epoch, markBefore: 0, markAfter: epoch,
          });
          assert.deepStrictEqual(await gate.read(k), { mark: epoch, value, hasValue: true });
          assert.deepEqual(await t.raw(k), { state: `{"v":1,"mark":"${epoch}"}`, value: text });
          epoch++;
        }
        for (const [value, message] of [
          [() => 1, 'value: a function is not encodable by the default codec'],
          [undefined, 'value must not be undefined; use delete() to clear a value'],
        ]) {
          const k = uniqueKey('table-refused');
          await refusedWith(gate.write(k, 3, value), message);
          assert.equal(await t.raw(k), null);
          assert.deepEqual(await gate.read(k), { mark: 0, value: undefined, hasValue: false });
        }
      } finally {
        await t.close();
      }
    });

    test('rows stored as JSON text by the adapters before issue 21 read back the same', async () => {
      const t = await target.open();
      try {
        const gate = new Gate(t.store);
        // [text today's adapters wrote (JSON.stringify), the value read back then and now]
        const FIXTURE = [
          ['{}', {}], // was new Map([['a', 1]]) or new Set([1, 2])
          ['"1970-01-01T00:00:00.000Z"', '1970-01-01T00:00:00.000Z'], // was new Date(0)
          ['null', null], // was NaN
          ['[1,null,3]', [1, null, 3]], // was [1, , 3]
          ['{"a":1}', { a: 1 }], // was { a: 1, b: undefined }
          ['0', 0], // was -0
          ['1e+21', 1e21],
          ['{"n":"b","list":[true,false,{"x":[]}]}', { n: 'b', list: [true, false, { x: [] }] }],
          ['"héllo 😀 \\ud800"', 'héllo 😀 \uD800'],
          ['[]', []],
          ['""', ''],
          ['"devalue:[1]"', 'devalue:[1]'], // a string that looks like the new prefix
        ];
        for (const [text, expected] of FIXTURE) {
          const k = uniqueKey('fixture');
          await t.putRaw(k, STATE5, text);
          assert.deepStrictEqual(await gate.read(k), { mark: 5, value: expected, hasValue: true }, text);
          // and a write of the same value stores the same text as before
          assert.equal((await gate.write(k, 5, expected)).outcome, 'accept');
          assert.deepEqual(await t.raw(k), { state: STATE5, value: text === '"devalue:[1]"' ? text : JSON.stringify(expected) });
        }
      } finally {
        await t.close();
      }
    });
  });
}

describe('MemoryHostStore and MemoryGate keep values by reference (no copy, no codec)', () => {
  test('every row reads back as the very same value, functions and symbols included', async () => {
    const gate = new Gate(new MemoryHostStore());
    for (const [name, make] of ROWS) {
      const k = uniqueKey('ref');
      const value = make();
      assert.equal((await gate.write(k, 1, value)).outcome, 'advance', name);
      const r = await gate.read(k);
      assert.ok(Object.is(r.value, value), name);
    }
    const obj = { n: 1 };
    const k = uniqueKey('mutate');
    await gate.write(k, 1, obj);
    obj.n = 2; // a later mutation is seen: the store holds the caller's object
    assert.deepEqual((await gate.read(k)).value, { n: 2 });
  });
});

describe('codecs on their own', () => {
  test('valueCodec stores plain JSON text when JSON keeps the value, devalue text otherwise', () => {
    assert.equal(valueCodec.encode({ a: [1, 'x', null, true] }), '{"a":[1,"x",null,true]}');
    assert.equal(valueCodec.encode('s'), '"s"');
    assert.equal(valueCodec.encode(new Map([['a', 1]])), 'devalue:[["Map",1,2],"a",1]');
    assert.deepStrictEqual(valueCodec.decode('devalue:[["Set",1],7]'), new Set([7]));
    assert.deepStrictEqual(jsonCodec.decode('devalue:-6'), -0, 'both codecs read both forms');
    assert.throws(() => valueCodec.decode(42), TypeError);
  });

  test('a refusal names the codec, the path and the part', () => {
    const e = (() => {
      try {
        jsonCodec.encode({ items: [0, 1, 2, new Map()], 'a b': 1 });
      } catch (x) {
        return x;
      }
    })();
    assert.ok(e instanceof FencegateError);
    assert.deepEqual({ code: e.code, message: e.message, path: e.path, codec: e.codec }, {
      code: 'INVALID_ARGUMENT',
      message: 'value.items[3]: Map is not encodable by the JSON codec',
      path: 'value.items[3]',
      codec: 'JSON codec',
    });
    const paths = [
      [{ 'a b': { c: () => 1 } }, 'value["a b"].c'],
      [new Map([['k', Symbol('x')]]), 'value.get("k")'],
      [new Map([[() => 1, 1]]), 'value.keys()[0]'],
      [new Set([1, () => 1]), 'value.values()[1]'],
      [{ get bad() { throw new Error('boom'); } }, 'value.bad'],
    ];
    for (const [v, path] of paths) {
      assert.throws(() => valueCodec.encode(v), (x) => x.code === 'INVALID_ARGUMENT' && x.path === path, path);
    }
  });

  test('an adapter takes encode and decode as a pair', async () => {
    const { SqliteStore } = await import('../../../pkg/adapters/sqlite.mjs');
    const { openSqlite } = await import('./targets.mjs');
    const db = openSqlite(':memory:');
    assert.throws(() => new SqliteStore(db, { encode: JSON.stringify }), (e) => e.code === 'INVALID_ARGUMENT' && e.option === 'decode');
    const store = new SqliteStore(db, { encode: () => 42, decode: JSON.parse });
    await refusedWith(new Gate(store).write('k', 1, 'x'), "value: the store's encode must return a string, got number");
    const throwing = new SqliteStore(db, { encode: () => { throw new RangeError('too big'); }, decode: JSON.parse });
    await refusedWith(new Gate(throwing).write('k', 1, 'x'), "value: the store's encode refused it: too big");
    assert.equal(store.load('k'), null);
    db.close();
  });
});
