// The SQLite guard against conflict resolution (REPLACE, upserts), fence writes rolled back
// (savepoints, rolled-back transactions before an unfenced one) and version jumps
// (docs/guard.md "SQLite"). Exact errors, rows and fence rows after each case.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { Gate, FencegateError } from '../../../pkg/node.mjs';
import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';
import { installGuard, guardSql } from '../../../pkg/adapters/guard.mjs';

const Database = createRequire(import.meta.url)('better-sqlite3');

const refusal = (key, op = 'UPDATE') => ({ code: 'GUARD_REFUSED', message: `fencegate guard: ${op} on orders refused: this transaction did not pass the fence for key ${key}` });

async function open(schema = "CREATE TABLE orders (id INTEGER PRIMARY KEY, sku TEXT UNIQUE COLLATE NOCASE, status TEXT); INSERT INTO orders VALUES (1, 'A', 'new'), (2, 'B', 'new');", key = "'orders/' || id") {
  const db = new Database(':memory:');
  db.exec(schema);
  const store = new SqliteStore(db);
  const gate = new Gate(store, { stateCache: 0 });
  await gate.transaction('orders/1', 5, () => null);
  await gate.transaction('orders/2', 5, () => null);
  await installGuard(db, { table: 'orders', key });
  const rows = () => db.prepare('SELECT * FROM orders ORDER BY 1').all();
  const fences = () => db.prepare('SELECT key, state, value, version FROM fencegate ORDER BY key').all();
  const raw = (sql, on = db) => {
    try {
      return { changes: on.prepare(sql).run().changes };
    } catch (e) {
      return { code: e.code, message: e.message };
    }
  };
  return { db, store, gate, rows, fences, raw };
}

const v1 = (m) => `{"v":1,"mark":"${m}"}`;

test('SQLite guard: INSERT OR REPLACE, REPLACE and upserts into the fence table write nothing (no mark lowered), a lost first-writer insert stays a lost compare-and-set', async () => {
  const t = await open();
  const fences = t.fences();
  assert.deepEqual(fences, [{ key: 'orders/1', state: v1(5), value: null, version: 1 }, { key: 'orders/2', state: v1(5), value: null, version: 1 }]);
  for (const sql of [
    `INSERT OR REPLACE INTO fencegate (key, state, version) VALUES ('orders/1', '${v1(1)}', 1)`,
    `REPLACE INTO fencegate (key, state, version) VALUES ('orders/1', '${v1(1)}', 2)`,
    `INSERT OR REPLACE INTO fencegate (key, state, version) VALUES ('orders/1', '${v1(9)}', 2)`,
    `INSERT INTO fencegate (key, state, version) VALUES ('orders/1', '${v1(1)}', 1) ON CONFLICT (key) DO UPDATE SET state = excluded.state, version = version + 1`,
    `INSERT INTO fencegate (key, state, version) VALUES ('orders/1', '${v1(1)}', 1) ON CONFLICT DO NOTHING`,
    `INSERT INTO fencegate (key, state, version) VALUES ('orders/1', 'garbage', 1)`,
  ]) assert.deepEqual(t.raw(sql), { changes: 0 }, sql);
  assert.deepEqual(t.fences(), fences);
  // fencegate's own first-writer insert (commitFrom with no row expected) over a row that is there: false, nothing written
  assert.equal(t.store.commitFrom('orders/1', null, v1(3), { kind: 'none' }), false);
  assert.deepEqual(t.fences(), fences);
  assert.deepEqual(await t.gate.mark('orders/1'), 5);
  // a zombie with an older token is still refused by the mark
  const z = await t.gate.transaction('orders/1', 2, (tx) => tx.prepare("UPDATE orders SET status = 'zombie' WHERE id = 1").run().changes);
  assert.deepEqual(z, { key: 'orders/1', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 2, markBefore: 5, markAfter: 5 });
  assert.deepEqual(t.rows(), [{ id: 1, sku: 'A', status: 'new' }, { id: 2, sku: 'B', status: 'new' }]);
});

test('SQLite guard: fence row versions go up by exactly 1; a new fence row starts at version 1', async () => {
  const t = await open();
  const fences = t.fences();
  const fg = (sql) => t.raw(sql).message;
  assert.equal(fg("UPDATE fencegate SET version = version + 2 WHERE key = 'orders/1'"), 'FG002 fencegate guard: fence row orders/1: version 3 after 1 refused: the version goes up by exactly 1');
  assert.equal(fg("UPDATE fencegate SET version = 9223372036854775807 WHERE key = 'orders/1'"), 'FG002 fencegate guard: fence row orders/1: version 9223372036854775807 after 1 refused: the version goes up by exactly 1');
  assert.equal(fg(`UPDATE fencegate SET state = '${v1(6)}', version = 5 WHERE key = 'orders/1'`), 'FG002 fencegate guard: fence row orders/1: version 5 after 1 refused: the version goes up by exactly 1');
  assert.equal(fg("UPDATE fencegate SET version = 1.5 WHERE key = 'orders/1'"), 'FG002 fencegate guard: fence row orders/1: version 1.5 after 1 refused: the version goes up by exactly 1');
  assert.equal(fg(`INSERT INTO fencegate (key, state, value, version) VALUES ('orders/3', '${v1(1)}', NULL, 9223372036854775807)`), 'FG002 fencegate guard: fence row orders/3: version 9223372036854775807 refused: a new fence row starts at version 1');
  assert.deepEqual(t.fences(), fences);
  assert.deepEqual(t.raw("UPDATE fencegate SET version = version + 1 WHERE key = 'orders/1'"), { changes: 1 });
  const ok = await t.gate.transaction('orders/1', 6, (tx) => tx.prepare("UPDATE orders SET status = 'six' WHERE id = 1").run().changes);
  assert.equal(ok.outcome, 'advance');
  assert.deepEqual(t.fences()[0], { key: 'orders/1', state: v1(6), value: null, version: 3 });
});

test('SQLite guard: REPLACE, UPDATE OR REPLACE and upserts over another key\'s row (PRIMARY KEY, UNIQUE with its collation) refused without that key\'s pass; applied with it', async () => {
  const t = await open();
  const before = t.rows();
  const fences = t.fences();
  const body = (sql) => (tx) => tx.prepare(sql).run().changes;
  const refusedIn = async (sql) => {
    const e = await t.gate.transaction('orders/1', 5, body(sql)).catch((x) => x);
    assert.ok(e instanceof FencegateError, sql);
    return { code: e.code, message: e.cause.message };
  };
  for (const [sql, op] of [
    ["UPDATE OR REPLACE orders SET sku = 'B' WHERE id = 1", 'UPDATE'],
    ["UPDATE OR REPLACE orders SET sku = 'b' WHERE id = 1", 'UPDATE'],
    ["INSERT OR REPLACE INTO orders VALUES (1, 'b', 'x')", 'INSERT'],
    ["REPLACE INTO orders VALUES (1, 'B', 'x')", 'INSERT'],
    ["INSERT INTO orders VALUES (1, 'B', 'x') ON CONFLICT (sku) DO UPDATE SET status = 'ups'", 'INSERT'],
    ["INSERT OR REPLACE INTO orders VALUES (2, 'Z', 'x')", 'INSERT'],
    ['UPDATE OR REPLACE orders SET id = 2 WHERE id = 1', 'UPDATE'],
  ]) assert.deepEqual(await refusedIn(sql), refusal('orders/2', op), sql);
  assert.deepEqual(t.rows(), before);
  assert.deepEqual(t.fences(), fences);
  // the same with the pass of both keys: applied, the other row replaced
  const r = await t.gate.transaction('orders/1', 5, (tx) => {
    t.gate.fenceInSync(tx, 'orders/2', 5);
    return tx.prepare("UPDATE OR REPLACE orders SET sku = 'b' WHERE id = 1").run().changes;
  });
  assert.equal(r.ok, true);
  assert.deepEqual(t.rows(), [{ id: 1, sku: 'b', status: 'new' }]);
  // an unrelated unique value and a change of the row's own unique value pass as before
  assert.equal((await t.gate.transaction('orders/1', 5, body("UPDATE OR REPLACE orders SET sku = 'C' WHERE id = 1"))).ok, true);
  assert.equal((await t.gate.transaction('orders/1', 5, body("INSERT OR REPLACE INTO orders VALUES (1, 'D', 'r')"))).ok, true);
  assert.deepEqual(t.rows(), [{ id: 1, sku: 'D', status: 'r' }]);
});

test('SQLite guard: a composite UNIQUE, a WITHOUT ROWID primary key and a partial unique index are checked; a unique index on an expression is refused at install', async () => {
  const t = await open("CREATE TABLE orders (shop TEXT, n INTEGER, ref TEXT, status TEXT, PRIMARY KEY (shop, n), UNIQUE (ref, status)) WITHOUT ROWID; CREATE UNIQUE INDEX orders_open ON orders (status) WHERE status = 'open'; INSERT INTO orders VALUES ('s', 1, 'r1', 'open'), ('s', 2, 'r2', 'done');", "'orders/' || n");
  const before = t.rows();
  const body = (sql) => (tx) => tx.prepare(sql).run().changes;
  const refusedIn = async (sql) => {
    const e = await t.gate.transaction('orders/2', 5, body(sql)).catch((x) => x);
    return e instanceof FencegateError ? { code: e.code, message: e.cause.message } : e;
  };
  assert.deepEqual(await refusedIn("INSERT OR REPLACE INTO orders VALUES ('x', 2, 'r1', 'open')"), refusal('orders/1', 'INSERT'));
  assert.deepEqual(await refusedIn("UPDATE OR REPLACE orders SET ref = 'r1', status = 'open' WHERE n = 2"), refusal('orders/1'));
  assert.deepEqual(await refusedIn("UPDATE OR REPLACE orders SET n = 1 WHERE n = 2"), refusal('orders/1'));
  assert.deepEqual(await refusedIn("UPDATE OR REPLACE orders SET status = 'open' WHERE n = 2"), refusal('orders/1'));
  assert.deepEqual(t.rows(), before);
  assert.equal((await t.gate.transaction('orders/2', 5, body("UPDATE OR REPLACE orders SET ref = 'r9' WHERE n = 2"))).ok, true);
  assert.deepEqual(t.rows(), [{ shop: 's', n: 1, ref: 'r1', status: 'open' }, { shop: 's', n: 2, ref: 'r9', status: 'done' }]);
  t.db.exec('CREATE UNIQUE INDEX orders_lower ON orders (lower(ref))');
  const e = await installGuard(t.db, { table: 'orders', key: "'orders/' || n" }).catch((x) => x);
  assert.equal(e.code, 'INVALID_ARGUMENT');
  assert.equal(e.message, 'installGuard: the unique index "orders_lower" of "orders" is on an expression: the SQLite guard cannot find the rows a REPLACE over it would delete (make it a unique index on columns, or drop it)');
  // guardSql for sqlite needs the unique keys
  assert.throws(() => guardSql({ engine: 'sqlite', table: 'orders', key: "'orders/' || n", columns: ['shop', 'n'] }), { code: 'INVALID_ARGUMENT' });
  assert.match(guardSql({ engine: 'sqlite', table: 'orders', key: "'orders/' || n", columns: ['shop', 'n'], unique: [['rowid'], ['shop', 'n COLLATE NOCASE']] }), /fencegate_r\.rowid = NEW\.rowid .*\n[^]*fencegate_r\."shop" = NEW\."shop" AND fencegate_r\."n" = NEW\."n" COLLATE "NOCASE"/);
});

test('SQLite guard: the pass does not outlive a fence write rolled back (nested transaction, ROLLBACK TO, a rolled-back transaction before an unfenced one)', async () => {
  const t = await open();
  const set = (s) => t.db.prepare('UPDATE orders SET status = ? WHERE id = 1').bind(s);
  const before = t.rows();
  const fences = t.fences();
  // a nested db.transaction (a savepoint) that fenced, then threw
  const inner = t.db.transaction((token) => {
    t.gate.fenceInSync(t.db, 'orders/1', token);
    throw new Error('after fencing');
  });
  const e1 = t.db.transaction(() => {
    assert.throws(() => inner(7), { message: 'after fencing' });
    try {
      set('owner-7').run();
      return 'applied';
    } catch (e) {
      return { code: e.code, message: e.message };
    }
  }).immediate();
  assert.deepEqual(e1, refusal('orders/1'));
  // SAVEPOINT, fence, ROLLBACK TO, then the write
  t.db.exec('BEGIN IMMEDIATE; SAVEPOINT s');
  t.gate.fenceInSync(t.db, 'orders/1', 7);
  t.db.exec('ROLLBACK TO s');
  assert.deepEqual(t.raw("UPDATE orders SET status = 'sp' WHERE id = 1"), refusal('orders/1'));
  t.db.exec('COMMIT');
  // a fenced transaction rolled back, then an unfenced one in the same synchronous run
  assert.throws(() => t.db.transaction(() => { t.gate.fenceInSync(t.db, 'orders/1', 7); throw new Error('abort'); }).immediate(), { message: 'abort' });
  assert.deepEqual(t.db.transaction(() => t.raw("UPDATE orders SET status = 'unfenced' WHERE id = 1")).immediate(), refusal('orders/1'));
  t.db.exec('BEGIN IMMEDIATE');
  t.gate.fenceInSync(t.db, 'orders/1', 7);
  t.db.exec('ROLLBACK');
  t.db.exec('BEGIN IMMEDIATE');
  assert.deepEqual(t.raw("UPDATE orders SET status = 'unfenced2' WHERE id = 1"), refusal('orders/1'));
  t.db.exec('COMMIT');
  assert.deepEqual(t.rows(), before);
  assert.deepEqual(t.fences(), fences);
  assert.equal(await t.gate.mark('orders/1'), 5);
  // two fence steps, the second rolled back to a savepoint: the first still passes
  t.db.transaction(() => {
    t.gate.fenceInSync(t.db, 'orders/1', 6);
    t.db.exec('SAVEPOINT s');
    t.gate.fenceInSync(t.db, 'orders/1', 7);
    t.db.exec('ROLLBACK TO s');
    set('six').run();
  }).immediate();
  assert.deepEqual(t.rows()[0], { id: 1, sku: 'A', status: 'six' });
  assert.deepEqual(t.fences()[0], { key: 'orders/1', state: v1(6), value: null, version: 2 });
  // what remains (docs/guard.md "SQLite"): a committed fenced transaction followed in the same
  // synchronous run by an unfenced one on the same connection still passes
  t.db.transaction(() => t.gate.fenceInSync(t.db, 'orders/1', 6)).immediate();
  assert.deepEqual(t.db.transaction(() => t.raw("UPDATE orders SET status = 'same run' WHERE id = 1")).immediate(), { changes: 1 });
  await Promise.resolve();
  assert.deepEqual(t.db.transaction(() => t.raw("UPDATE orders SET status = 'later' WHERE id = 1")).immediate(), refusal('orders/1'));
  assert.deepEqual(t.rows()[0], { id: 1, sku: 'A', status: 'same run' });
});

test('SQLite guard: the triggers of an earlier guard (fencegate_pass with four arguments) refuse every change until the guard is installed again', async () => {
  const t = await open();
  t.db.exec(`DROP TRIGGER fencegate_guard_orders_bu; CREATE TRIGGER fencegate_guard_orders_bu BEFORE UPDATE ON orders FOR EACH ROW BEGIN SELECT fencegate_pass('fencegate', CAST(('orders/' || OLD.id) AS TEXT), 'UPDATE', 'orders'); END`);
  const e = await t.gate.transaction('orders/1', 5, (tx) => tx.prepare("UPDATE orders SET status = 'x' WHERE id = 1").run().changes).catch((x) => x);
  assert.equal(e.code, 'GUARD_REFUSED');
  assert.equal(e.cause.message, "fencegate guard: UPDATE on orders refused: the guard's triggers are from an earlier fencegate: install the guard again (installGuard)");
  await installGuard(t.db, { table: 'orders', key: "'orders/' || id" });
  assert.equal((await t.gate.transaction('orders/1', 5, (tx) => tx.prepare("UPDATE orders SET status = 'x' WHERE id = 1").run().changes)).ok, true);
});
