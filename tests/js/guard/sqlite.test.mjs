// The SQLite guard (docs/guard.md): triggers and fencegate_pass, which SqliteStore
// registers on its connection. Exact errors, rows and fence rows after each case.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { Gate, FencegateError } from '../../../pkg/node.mjs';
import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';
import { installGuard, removeGuard, isGuardRefusal } from '../../../pkg/adapters/guard.mjs';

const Database = createRequire(import.meta.url)('better-sqlite3');

async function open() {
  const dir = mkdtempSync(join(tmpdir(), 'fg-guard-'));
  const file = join(dir, 'orders.db');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT NOT NULL); INSERT INTO orders VALUES (1, 'new'), (2, 'new');");
  const gate = new Gate(new SqliteStore(db), { stateCache: 0 });
  await gate.transaction('orders/1', 5, () => null);
  await gate.transaction('orders/2', 5, () => null);
  await installGuard(db, { table: 'orders', key: "'orders/' || id" });
  const rows = () => db.prepare('SELECT * FROM orders ORDER BY id').all();
  const fences = () => db.prepare('SELECT key, state, value, version FROM fencegate ORDER BY key').all();
  const raw = (sql, on = db) => {
    try {
      on.prepare(sql).run();
      return 'applied';
    } catch (e) {
      return { code: e.code, message: e.message };
    }
  };
  return { db, file, gate, rows, fences, raw, close: () => { db.close(); rmSync(dir, { recursive: true, force: true }); } };
}

test('SQLite guard: raw writes on the store\'s connection refused (GUARD_REFUSED), on another connection "no such function"; rows unchanged', async () => {
  const t = await open();
  try {
    const before = t.rows();
    assert.deepEqual(t.raw("UPDATE orders SET status = 'rogue' WHERE id = 1"), { code: 'GUARD_REFUSED', message: 'fencegate guard: UPDATE on orders refused: this transaction did not pass the fence for key orders/1' });
    assert.deepEqual(t.raw("INSERT INTO orders VALUES (3, 'rogue')"), { code: 'GUARD_REFUSED', message: 'fencegate guard: INSERT on orders refused: this transaction did not pass the fence for key orders/3' });
    assert.deepEqual(t.raw('DELETE FROM orders'), { code: 'GUARD_REFUSED', message: 'fencegate guard: DELETE on orders refused: this transaction did not pass the fence for key orders/1' });
    const other = new Database(t.file);
    try {
      assert.deepEqual(t.raw("UPDATE orders SET status = 'rogue' WHERE id = 1", other), { code: 'SQLITE_ERROR', message: 'no such function: fencegate_pass' });
    } finally {
      other.close();
    }
    assert.deepEqual(t.rows(), before);
  } finally {
    t.close();
  }
});

test('SQLite guard: gate.transaction with the current token applied, stale refused, another key GUARD_REFUSED; fenceInSync passes for its transaction only', async () => {
  const t = await open();
  try {
    const set = (s, id = 1) => (tx) => tx.prepare('UPDATE orders SET status = ? WHERE id = ?').run(s, id).changes;
    assert.deepEqual(await t.gate.transaction('orders/1', 6, set('paid')), { key: 'orders/1', ok: true, outcome: 'advance', code: null, token: 6, markBefore: 5, markAfter: 6, result: 1 });
    assert.deepEqual(await t.gate.transaction('orders/1', 5, set('refunded')), { key: 'orders/1', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 5, markBefore: 6, markAfter: 6 });
    const fences = t.fences();
    const e = await t.gate.transaction('orders/1', 6, (tx) => { set('one')(tx); return set('two', 2)(tx); }).catch((x) => x);
    assert.ok(e instanceof FencegateError);
    assert.equal(e.code, 'GUARD_REFUSED');
    assert.equal(e.cause.message, 'fencegate guard: UPDATE on orders refused: this transaction did not pass the fence for key orders/2');
    assert.ok(isGuardRefusal(e.cause));
    assert.deepEqual(t.fences(), fences);
    // after the fenced transaction the pass is gone
    assert.equal(t.raw("UPDATE orders SET status = 'after' WHERE id = 1").code, 'GUARD_REFUSED');
    t.db.transaction(() => {
      t.gate.fenceInSync(t.db, 'orders/2', 7);
      set('in', 2)(t.db);
    })();
    // outside a transaction the guard never passes, even before the pass ends
    assert.equal(t.raw("UPDATE orders SET status = 'after' WHERE id = 2").code, 'GUARD_REFUSED');
    await Promise.resolve();
    assert.equal(t.db.transaction(() => t.raw("UPDATE orders SET status = 'later' WHERE id = 2"))().code, 'GUARD_REFUSED');
    assert.deepEqual(t.rows(), [{ id: 1, status: 'paid' }, { id: 2, status: 'in' }]);
  } finally {
    t.close();
  }
});

test('SQLite guard: the fence table keeps well-formed states and marks that never go down; install twice, remove keeps rows', async () => {
  const t = await open();
  try {
    const fences = t.fences();
    const refusedFence = (sql) => t.raw(sql).message;
    assert.equal(refusedFence(`UPDATE fencegate SET state = '{"v":1,"mark":"4"}', version = version + 1 WHERE key = 'orders/1'`), 'FG002 fencegate guard: fence row orders/1: lowering the mark from 5 to 4 refused: the mark never goes down');
    for (const bad of ['garbage', '{"v":1,"mark":"05"}', '{"v":1,"mark":5}', '{"v":4.0,"mark":"9"}', '{"v":1,"mark":"9","x":1}', '{"v":1,"mark":"18446744073709551616"}', "{v:1,mark:'9'}"]) {
      assert.equal(refusedFence(`UPDATE fencegate SET state = '${bad.replace(/'/g, "''")}', version = version + 1 WHERE key = 'orders/1'`), 'FG002 fencegate guard: fence row orders/1: the new state refused: not a well-formed fence state', bad);
    }
    assert.equal(refusedFence(`UPDATE fencegate SET version = version - 1 WHERE key = 'orders/1'`), 'FG002 fencegate guard: fence row orders/1: version 0 after 1 refused: the version only goes up');
    assert.equal(refusedFence("DELETE FROM fencegate WHERE key = 'orders/2'"), 'FG002 fencegate guard: fence row orders/2: DELETE refused: fence rows are never removed (that would lower the mark to 0)');
    assert.equal(t.raw(`UPDATE fencegate SET state = '{"v":1,"mark":"18446744073709551615"}', version = version + 1 WHERE key = 'orders/2'`), 'applied');
    assert.equal(await t.gate.mark('orders/2'), 18446744073709551615n);
    const schema = () => t.db.prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY name").all();
    const before = schema();
    assert.equal(before.length, 6);
    await installGuard(t.db, { table: 'orders', key: "'orders/' || id" });
    assert.deepEqual(schema(), before);
    const rows = t.rows();
    const f = t.fences();
    await removeGuard(t.db, { table: 'orders', fence: true });
    assert.deepEqual(schema(), []);
    assert.deepEqual(t.rows(), rows);
    assert.deepEqual(t.fences(), f);
    assert.equal(fences.length, 2);
  } finally {
    t.close();
  }
});
