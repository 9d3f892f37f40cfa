// The state cache on SQLite (issue 14): SqliteStore is a transaction store that also has
// `commitFrom` (one conditional UPDATE … RETURNING version, committed on its own). A cached
// write is that one statement; anything else (no entry, a lost precondition, a refusal or a
// duplicate decided on the cached state) runs the BEGIN IMMEDIATE transaction as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { Gate } from '../../../pkg/node.mjs';
import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';
import { sqlite, openSqlite } from './targets.mjs';
import { uniqueKey } from './keys.mjs';

const require = createRequire(import.meta.url);
const stateText = (mark) => `{"v":1,"mark":"${mark}"}`;
const verdict = (key, outcome, code, token, markBefore, markAfter) => ({ key, ok: outcome !== 'reject', outcome, code, token, markBefore, markAfter });

/** SqliteStore's callbacks, counted: `{ transaction, commitFrom, lost }` (`lost`: a commitFrom that answered false). */
function counting(store) {
  const n = { transaction: 0, commitFrom: 0, lost: 0 };
  return {
    n,
    store: {
      textTransaction(key, fn) {
        n.transaction += 1;
        return store.textTransaction(key, fn);
      },
      commitFrom(...args) {
        n.commitFrom += 1;
        const r = store.commitFrom(...args);
        if (r === false) n.lost += 1;
        return r;
      },
      load: (key) => store.load(key),
      encodeValue: (value) => store.encodeValue(value),
    },
  };
}

async function withSqlite(run) {
  const t = await sqlite.open();
  try {
    await run(t);
  } finally {
    await t.close();
  }
}

test('SqliteStore: a cached gate writes one commitFrom after its first transaction; stored bytes equal the uncached gate\'s', () =>
  withSqlite(async (t) => {
    assert.equal(new Gate(t.store).shape, 'transaction');
    const runs = {};
    for (const [mode, options] of [['cache on', {}], ['cache off', { stateCache: 0 }]]) {
      const c = counting(t.store);
      const gate = new Gate(c.store, options);
      const k = uniqueKey('sqlite-cache');
      assert.deepEqual(await gate.write(k, 5, 'a'), verdict(k, 'advance', null, 5, 0, 5));
      assert.deepEqual(await gate.write(k, 6, 'b'), verdict(k, 'advance', null, 6, 5, 6));
      assert.deepEqual(await gate.write(k, 6, { n: 1 }), verdict(k, 'accept', null, 6, 6, 6));
      assert.deepEqual(await gate.delete(k, 7), verdict(k, 'advance', null, 7, 6, 7));
      assert.deepEqual(await gate.establish(k, 8), verdict(k, 'advance', null, 8, 7, 8));
      assert.deepEqual(await gate.write(k, 8, 'c'), verdict(k, 'accept', null, 8, 8, 8));
      assert.deepEqual(await t.raw(k), { state: stateText(8), value: '"c"' });
      assert.deepEqual(t.store.load(k), { state: stateText(8), version: 6, value: 'c' });
      runs[mode] = c.n;
    }
    assert.deepEqual(runs, {
      'cache on': { transaction: 1, commitFrom: 5, lost: 0 },
      'cache off': { transaction: 6, commitFrom: 0, lost: 0 },
    });
  }));

test('SqliteStore: another writer advances the key between two writes of a cached gate: STALE_TOKEN, nothing stored', () =>
  withSqlite(async (t) => {
    const c = counting(t.store);
    const gate = new Gate(c.store);
    const other = new Gate(t.store, { stateCache: 0 }); // "another process": its own gate, its own view
    const k = uniqueKey('sqlite-stale');
    assert.deepEqual(await gate.write(k, 5, 'a'), verdict(k, 'advance', null, 5, 0, 5));
    assert.deepEqual(await gate.write(k, 6, 'b'), verdict(k, 'advance', null, 6, 5, 6));
    assert.deepEqual(await other.write(k, 8, 'c'), verdict(k, 'advance', null, 8, 6, 8));
    // the gate remembers mark 6 and would take 7; the precondition fails, the transaction says STALE_TOKEN
    assert.deepEqual(await gate.write(k, 7, 'late'), verdict(k, 'reject', 'STALE_TOKEN', 7, 8, 8));
    assert.deepEqual(await t.raw(k), { state: stateText(8), value: '"c"' });
    assert.deepEqual(c.n, { transaction: 2, commitFrom: 2, lost: 1 });
    // a refusal caches nothing: the next write runs the transaction, which remembers what it wrote
    assert.deepEqual(await gate.write(k, 9, 'd'), verdict(k, 'advance', null, 9, 8, 9));
    assert.deepEqual(await gate.write(k, 10, 'e'), verdict(k, 'advance', null, 10, 9, 10));
    assert.deepEqual(await t.raw(k), { state: stateText(10), value: '"e"' });
    assert.deepEqual(c.n, { transaction: 3, commitFrom: 3, lost: 1 });
  }));

test('SqliteStore: a changed key fails the optimistic precondition; the transaction decides from the fresh state', () =>
  withSqlite(async (t) => {
    const c = counting(t.store);
    const gate = new Gate(c.store);
    const other = new Gate(t.store, { stateCache: 0 });
    const k = uniqueKey('sqlite-retry');
    assert.deepEqual(await gate.write(k, 5, { n: 1 }), verdict(k, 'advance', null, 5, 0, 5));
    assert.deepEqual(await other.write(k, 7, { n: 2 }), verdict(k, 'advance', null, 7, 5, 7));
    // from the cached mark 5, token 7 would advance (5 → 7); the store holds 7, so it is an accept at 7
    assert.deepEqual(await gate.write(k, 7, { n: 3 }), verdict(k, 'accept', null, 7, 7, 7));
    assert.deepEqual(await t.raw(k), { state: stateText(7), value: '{"n":3}' });
    assert.deepEqual(c.n, { transaction: 2, commitFrom: 1, lost: 1 });
  }));

test('SqliteStore: a refusal on the cached state is decided again in the transaction; after a restore lowered the mark, the store decides', () =>
  withSqlite(async (t) => {
    const c = counting(t.store);
    const gate = new Gate(c.store);
    const k = uniqueKey('sqlite-restore');
    assert.deepEqual(await gate.write(k, 5, 'a'), verdict(k, 'advance', null, 5, 0, 5));
    assert.deepEqual(await gate.write(k, 6, 'b'), verdict(k, 'advance', null, 6, 5, 6));
    await t.putRaw(k, stateText(2), '"restored"'); // an older record put back (version 100)
    // the cached mark 6 says STALE for 3: written nothing, so the transaction decides on the stored mark 2
    assert.deepEqual(await gate.write(k, 3, 'c'), verdict(k, 'advance', null, 3, 2, 3));
    assert.deepEqual(await t.raw(k), { state: stateText(3), value: '"c"' });
    assert.deepEqual(c.n, { transaction: 2, commitFrom: 1, lost: 0 });
    // and a refusal the store also gives stays a refusal, with the stored marks
    assert.deepEqual(await gate.write(k, 1, 'old'), verdict(k, 'reject', 'STALE_TOKEN', 1, 3, 3));
    assert.deepEqual(await t.raw(k), { state: stateText(3), value: '"c"' });
  }));

test('SqliteStore: a record with the cached version but another state fails the precondition (version and state)', () =>
  withSqlite(async (t) => {
    const c = counting(t.store);
    const gate = new Gate(c.store);
    const k = uniqueKey('sqlite-aba');
    assert.deepEqual(await gate.write(k, 3, 'x'), verdict(k, 'advance', null, 3, 0, 3)); // cached: mark 3, version 1
    const db = openSqlite(t.file); // another connection changes the state and keeps the version
    db.prepare('UPDATE fencegate SET state = ?, value = ? WHERE key = ?').run(stateText(9), '"newer"', k);
    db.close();
    assert.deepEqual(await gate.write(k, 4, 'y'), verdict(k, 'reject', 'STALE_TOKEN', 4, 9, 9));
    assert.deepEqual(await t.raw(k), { state: stateText(9), value: '"newer"' });
    assert.deepEqual(c.n, { transaction: 2, commitFrom: 1, lost: 1 });
  }));

test('SqliteStore.commitFrom: the precondition is the WHERE clause; a busy database answers false and writes nothing', () =>
  withSqlite(async (t) => {
    const k = uniqueKey('sqlite-from');
    const set = (value) => ({ kind: 'set', value, encoded: JSON.stringify(value) });
    assert.deepEqual(t.store.commitFrom(k, null, stateText(1), set('a')), { version: 1 });
    assert.equal(t.store.commitFrom(k, null, stateText(2), set('b')), false); // a row exists
    assert.equal(t.store.commitFrom(k, { version: 2, state: stateText(1) }, stateText(2), set('b')), false);
    assert.equal(t.store.commitFrom(k, { version: 1, state: stateText(9) }, stateText(2), set('b')), false);
    assert.deepEqual(t.store.commitFrom(k, { version: 1, state: stateText(1) }, stateText(2), set('b')), { version: 2 });
    assert.deepEqual(t.store.commitFrom(k, { version: 2, state: stateText(2) }, stateText(3), { kind: 'delete' }), { version: 3 });
    assert.deepEqual(t.store.commitFrom(k, { version: 3, state: stateText(3) }, stateText(4), { kind: 'none' }), { version: 4 });
    assert.deepEqual(await t.raw(k), { state: stateText(4), value: null });
    // another connection holds the write lock: SQLITE_BUSY after the (short) timeout is a lost precondition
    const Database = require('better-sqlite3');
    const quick = new Database(t.file, { timeout: 20 });
    const locker = openSqlite(t.file);
    locker.exec('BEGIN IMMEDIATE');
    try {
      assert.equal(new SqliteStore(quick).commitFrom(k, { version: 4, state: stateText(4) }, stateText(5), set('z')), false);
    } finally {
      locker.exec('ROLLBACK');
      locker.close();
      quick.close();
    }
    assert.deepEqual(await t.raw(k), { state: stateText(4), value: null });
  }));
