// The caller's own data on SQLite (docs/stores.md "Your own data"): Gate.transaction runs
// the caller's statements in the fence's transaction; fenceIn / fenceInSync join the
// caller's transaction. Exact verdicts, marks and rows after each case.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { Gate, FencegateError } from '../../../pkg/node.mjs';
import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3');

function open() {
  const dir = mkdtempSync(join(tmpdir(), 'fg-own-'));
  const db = new Database(join(dir, 'orders.db'));
  db.pragma('journal_mode = WAL');
  db.exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT NOT NULL); INSERT INTO orders VALUES (42, 'new'), (43, 'new');");
  const store = new SqliteStore(db);
  const gate = new Gate(store, { stateCache: 0 });
  const status = (id) => db.prepare('SELECT status FROM orders WHERE id = ?').pluck().get(id);
  const dump = () => JSON.stringify(db.prepare('SELECT * FROM orders ORDER BY id').all());
  const fenceRow = (key) => db.prepare('SELECT state, value, version FROM fencegate WHERE key = ?').get(key) ?? null;
  return { db, store, gate, status, dump, fenceRow, close: () => { db.close(); rmSync(dir, { recursive: true, force: true }); } };
}

const setStatus = (s, id = 42) => (tx) => tx.prepare('UPDATE orders SET status = ? WHERE id = ?').run(s, id).changes;

for (const stateCache of [0, 1024]) {
  test(`SQLite transaction (stateCache ${stateCache}): advance, accept, stale refused without running the statements`, async () => {
    const t = open();
    try {
      const gate = new Gate(t.store, { stateCache });
      let calls = 0;
      const counted = (s) => (tx) => { calls++; return setStatus(s)(tx); };
      assert.deepEqual(await gate.transaction('orders/42', 33, counted('paid')), {
        key: 'orders/42', ok: true, outcome: 'advance', code: null, token: 33, markBefore: 0, markAfter: 33, result: 1,
      });
      assert.deepEqual(await gate.transaction('orders/42', 34, counted('shipped')), {
        key: 'orders/42', ok: true, outcome: 'advance', code: null, token: 34, markBefore: 33, markAfter: 34, result: 1,
      });
      assert.deepEqual(await gate.transaction('orders/42', 34, counted('shipped-2')), {
        key: 'orders/42', ok: true, outcome: 'accept', code: null, token: 34, markBefore: 34, markAfter: 34, result: 1,
      });
      const before = t.dump();
      assert.deepEqual(await gate.transaction('orders/42', 33, counted('refunded')), {
        key: 'orders/42', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 33, markBefore: 34, markAfter: 34,
      });
      assert.equal(calls, 3);
      assert.equal(t.dump(), before);
      assert.equal(t.status(42), 'shipped-2');
      assert.equal(await gate.mark('orders/42'), 34);
      assert.equal(t.fenceRow('orders/42').value, null);
      assert.equal(t.fenceRow('orders/42').version, 3);
    } finally {
      t.close();
    }
  });
}

test('SQLite transaction: a throwing callback rolls back (CALLBACK_FAILED, cause kept), mark and rows as before', async () => {
  const t = open();
  try {
    await t.gate.transaction('orders/42', 5, setStatus('paid'));
    const before = t.dump();
    const boom = new Error('no such column: stauts');
    const err = await t.gate.transaction('orders/42', 6, (tx) => {
      tx.prepare('UPDATE orders SET status = ? WHERE id = 42').run('half-done');
      throw boom;
    }).catch((e) => e);
    assert.ok(err instanceof FencegateError);
    assert.equal(err.code, 'CALLBACK_FAILED');
    assert.equal(err.cause, boom);
    assert.equal(err.key, 'orders/42');
    assert.equal(err.verdict.outcome, 'advance');
    assert.equal(err.verdict.markBefore, 5);
    assert.equal(t.dump(), before);
    assert.equal(await t.gate.mark('orders/42'), 5);
    assert.equal(t.fenceRow('orders/42').version, 1);
  } finally {
    t.close();
  }
});

test('SQLite transaction: the same op id applies once (duplicate: the statements do not run again)', async () => {
  const t = open();
  try {
    let calls = 0;
    const inc = (tx) => { calls++; return tx.prepare("UPDATE orders SET status = status || '+' WHERE id = 43").run().changes; };
    const first = await t.gate.transaction('orders/43', 7, inc, { opId: 'refund-1' });
    assert.deepEqual(first, { key: 'orders/43', ok: true, outcome: 'advance', code: null, token: 7, markBefore: 0, markAfter: 7, result: 1 });
    const again = await t.gate.transaction('orders/43', 7, inc, { opId: 'refund-1' });
    assert.deepEqual(again, { key: 'orders/43', ok: true, outcome: 'duplicate', code: null, original: 'advance', token: 7, markBefore: 7, markAfter: 7 });
    assert.equal(calls, 1);
    assert.equal(t.status(43), 'new+');
  } finally {
    t.close();
  }
});

test('SQLite transaction: bad arguments are INVALID_ARGUMENT and change nothing; a Promise-returning body is refused and rolled back', async () => {
  const t = open();
  try {
    const before = t.dump();
    for (const body of [undefined, null, 'UPDATE orders SET status = 1', [['x']], {}]) {
      const e = await t.gate.transaction('orders/42', 1, body).catch((x) => x);
      assert.equal(e.code, 'INVALID_ARGUMENT', String(body));
    }
    assert.equal((await t.gate.transaction('orders/42', 0, setStatus('x'))).code, 'MALFORMED_TOKEN');
    const e = await t.gate.transaction('orders/42', 1, async (tx) => setStatus('async')(tx)).catch((x) => x);
    assert.equal(e.code, 'INVALID_ARGUMENT');
    assert.equal(t.dump(), before);
    assert.equal(t.fenceRow('orders/42'), null);
  } finally {
    t.close();
  }
});

test('SQLite fenceInSync inside db.transaction: applies with the caller\'s UPDATE; a stale token throws and rolls back both', async () => {
  const t = open();
  try {
    const { db, gate } = t;
    const refund = db.transaction((token, s) => {
      const v = gate.fenceInSync(db, 'orders/42', token);
      db.prepare('UPDATE orders SET status = ? WHERE id = 42').run(s);
      return v;
    });
    assert.deepEqual(refund.immediate(9, 'refunded'), { key: 'orders/42', ok: true, outcome: 'advance', code: null, token: 9, markBefore: 0, markAfter: 9 });
    assert.equal(t.status(42), 'refunded');
    const before = t.dump();
    let thrown;
    try {
      refund.immediate(8, 'zombie');
    } catch (e) {
      thrown = e;
    }
    assert.ok(thrown instanceof FencegateError);
    assert.equal(thrown.code, 'STALE_TOKEN');
    assert.equal(thrown.mark, 9);
    assert.deepEqual(thrown.verdict, { key: 'orders/42', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 8, markBefore: 9, markAfter: 9 });
    assert.equal(t.dump(), before);
    // a duplicate op id throws DUPLICATE_OPERATION, so the statements are not applied twice
    const once = db.transaction(() => {
      gate.fenceInSync(db, 'orders/43', 9, { opId: 'o-1' });
      db.prepare("UPDATE orders SET status = status || '!' WHERE id = 43").run();
    });
    once();
    assert.throws(() => once(), (e) => e.code === 'DUPLICATE_OPERATION' && e.verdict.outcome === 'duplicate');
    assert.equal(t.status(43), 'new!');
    // outside a transaction: refused, nothing written
    assert.throws(() => gate.fenceInSync(db, 'orders/44', 1), (e) => e.code === 'INVALID_ARGUMENT');
    assert.equal(t.fenceRow('orders/44'), null);
    // another database's handle: refused
    const other = new Database(':memory:');
    assert.throws(() => other.transaction(() => gate.fenceInSync(other, 'orders/44', 1))(), (e) => e.code === 'INVALID_ARGUMENT');
    other.close();
  } finally {
    t.close();
  }
});

test('SQLite fenceIn (async) between a manual BEGIN IMMEDIATE and COMMIT', async () => {
  const t = open();
  try {
    const { db, gate } = t;
    db.exec('BEGIN IMMEDIATE');
    const v = await gate.fenceIn(db, 'orders/42', 3);
    db.prepare("UPDATE orders SET status = 'a' WHERE id = 42").run();
    db.exec('COMMIT');
    assert.equal(v.outcome, 'advance');
    db.exec('BEGIN IMMEDIATE');
    // on a synchronous store a refusal is thrown at once (see the trial test below): try/await, not .catch()
    let e = null;
    try {
      await gate.fenceIn(db, 'orders/42', 2);
    } catch (x) {
      e = x;
    }
    db.exec('ROLLBACK');
    assert.equal(e.code, 'STALE_TOKEN');
    assert.equal(t.status(42), 'a');
    assert.equal(await gate.mark('orders/42'), 3);
  } finally {
    t.close();
  }
});

test('SQLite transaction with the state cache: another process\'s newer epoch is seen (the cached precondition fails, the row is read)', async () => {
  const t = open();
  try {
    const a = new Gate(t.store, { stateCache: 64 });
    const b = new Gate(new SqliteStore(t.db), { stateCache: 0 });
    assert.equal((await a.transaction('orders/42', 10, setStatus('a10'))).outcome, 'advance');
    assert.equal((await b.transaction('orders/42', 11, setStatus('b11'))).outcome, 'advance');
    // a's cache says mark 10: a write at 10 would accept from the cache; the store's row says 11
    assert.deepEqual(await a.transaction('orders/42', 10, setStatus('zombie')), {
      key: 'orders/42', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 10, markBefore: 11, markAfter: 11,
    });
    assert.equal(t.status(42), 'b11');
    assert.equal((await a.transaction('orders/42', 11, setStatus('a11'))).outcome, 'accept');
    assert.equal(t.status(42), 'a11');
  } finally {
    t.close();
  }
});

test('a lying store that runs the statements after a refusal, or commits without running them, is caught (STORE_ERROR)', async () => {
  const t = open();
  try {
    await t.gate.transaction('orders/42', 5, setStatus('paid'));
    // runs the body whatever the decision says
    const eager = {
      load: (k) => t.store.load(k),
      transaction: (k, fn) => t.store.transaction(k, fn),
      fencedTransaction(key, step) {
        step.decide(t.store.load(key)?.state ?? null);
        return t.db.transaction(() => { step.run(t.db); return { version: 1 }; })();
      },
    };
    const e = await new Gate(eager).transaction('orders/42', 4, setStatus('zombie')).catch((x) => x);
    assert.equal(e.code, 'STORE_ERROR');
    assert.match(e.cause.message, /without a decision that applies/);
    assert.equal(t.status(42), 'paid');
    // decides, applies, and never runs the body
    const lazy = {
      load: (k) => t.store.load(k),
      transaction: (k, fn) => t.store.transaction(k, fn),
      fencedTransaction(key, step) {
        step.decide(t.store.load(key)?.state ?? null);
        return { version: 1 };
      },
    };
    const l = await new Gate(lazy).transaction('orders/42', 6, setStatus('never')).catch((x) => x);
    assert.equal(l.code, 'STORE_ERROR');
    assert.match(l.cause.message, /without running the caller's statements/);
    // a store without the verbs
    const plain = new Gate({ load: () => null, commit: () => true });
    assert.equal((await plain.transaction('orders/42', 6, setStatus('x')).catch((x) => x)).code, 'INVALID_ARGUMENT');
    assert.equal((await plain.fenceIn({}, 'orders/42', 6).catch((x) => x)).code, 'INVALID_ARGUMENT');
    assert.throws(() => plain.fenceInSync({}, 'orders/42', 6), (x) => x.code === 'INVALID_ARGUMENT');
  } finally {
    t.close();
  }
});

test('audit records name the own-data operations; a refusal is counted', async () => {
  const t = open();
  try {
    const seen = [];
    const gate = new Gate(t.store, { onVerdict: (r) => seen.push([r.operation, r.outcome, r.code, r.opId]) });
    await gate.transaction('orders/42', 2, setStatus('a'), { opId: 'x' });
    await gate.transaction('orders/42', 1, setStatus('b'));
    t.db.transaction(() => gate.fenceInSync(t.db, 'orders/42', 2))();
    assert.deepEqual(seen, [['transaction', 'advance', null, 'x'], ['transaction', 'reject', 'STALE_TOKEN', null], ['fenceIn', 'accept', null, null]]);
    assert.deepEqual([gate.counters().total, gate.counters().reject], [3, 1]);
  } finally {
    t.close();
  }
});

test('trial: gate.fenceIn (the async form) inside a synchronous db.transaction throws a refusal at once, so the stale UPDATE rolls back', async () => {
  const t = open();
  try {
    const { db, gate } = t;
    await gate.transaction('orders/42', 10, setStatus('current'));
    let thrown = null;
    try {
      db.transaction(() => {
        gate.fenceIn(db, 'orders/42', 3); // forgot fenceInSync and await
        db.prepare("UPDATE orders SET status = 'STALE' WHERE id = 42").run();
      })();
    } catch (e) {
      thrown = e;
    }
    assert.equal(thrown?.code, 'STALE_TOKEN');
    assert.equal(t.status(42), 'current');
    // applied: still a Promise of the verdict
    const p = db.transaction(() => gate.fenceIn(db, 'orders/42', 11)).immediate;
    assert.equal(typeof p, 'function');
    db.exec('BEGIN IMMEDIATE');
    const v = gate.fenceIn(db, 'orders/42', 11);
    db.exec('COMMIT');
    assert.ok(v instanceof Promise);
    assert.equal((await v).outcome, 'advance');
    // fenceInSync on a handle that answers through Promises is INVALID_ARGUMENT
    const asyncStore = { fenceIn: async () => {}, load: () => null, commit: () => true };
    assert.throws(() => new Gate(asyncStore).fenceInSync({}, 'k', 1), (e) => e.code === 'INVALID_ARGUMENT' && /use fenceIn/.test(e.message));
  } finally {
    t.close();
  }
});

for (const stateCache of [0, 1024]) {
  test(`SQLite transaction (stateCache ${stateCache}): a body that ends the transaction itself (COMMIT, END, ROLLBACK; also then throwing) is INVALID_ARGUMENT, never applied`, async () => {
    const t = open();
    try {
      const gate = new Gate(t.store, { stateCache });
      assert.equal((await gate.transaction('orders/42', 5, setStatus('five'))).outcome, 'advance');
      const cases = [
        // [statement, throws after it, status after, mark after]: what the body's own COMMIT committed stays
        ['COMMIT', false, 'six', 6],
        ['END', true, 'seven', 7],
        ['ROLLBACK', false, 'seven', 7],
        ['ROLLBACK', true, 'seven', 7],
      ];
      let token = 5;
      for (const [end, throws, after, mark] of cases) {
        token++;
        const e = await gate
          .transaction('orders/42', token, (db) => {
            setStatus(['six', 'seven', 'eight', 'nine'][token - 6])(db);
            db.exec(end);
            if (throws) throw new Error('after the end');
          })
          .catch((x) => x);
        assert.ok(e instanceof FencegateError, String(e));
        assert.equal(e.code, 'INVALID_ARGUMENT', `${end} ${throws}`);
        assert.match(e.message, /ended the transaction itself/);
        assert.equal(e.cause?.message, throws ? 'after the end' : undefined);
        assert.equal(t.status(42), after, `${end} ${throws}`);
        assert.equal(await new Gate(t.store, { stateCache: 0 }).mark('orders/42'), mark, `${end} ${throws}`);
        assert.equal(t.db.inTransaction, false);
      }
      // the store still works after: a current token applies
      assert.equal((await gate.transaction('orders/42', 9, setStatus('nine'))).outcome, 'advance');
      assert.equal(t.status(42), 'nine');
    } finally {
      t.close();
    }
  });
}
