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

test('SQLite guard: the fast path for the canonical v1 text lets no garbage and no lower mark through (exact errors)', async () => {
  const t = await open();
  try {
    const fences = t.fences();
    const notWellFormed = { code: 'SQLITE_CONSTRAINT_TRIGGER', message: 'FG002 fencegate guard: fence row orders/1: the new state refused: not a well-formed fence state' };
    const q = (text) => `'${text.replace(/'/g, "''")}'`;
    const write = (expr, key = 'orders/1') => t.raw(`UPDATE fencegate SET state = ${expr}, version = version + 1 WHERE key = '${key}'`);
    for (const expr of [
      // looks like the canonical text up to a NUL, a BLOB, more text after it
      `'{"v":1,"mark":"9"}' || char(0) || 'junk'`,
      `CAST('{"v":1,"mark":"9"}' AS BLOB)`,
      q('{"v":1,"mark":"9"}x'),
      q('{"v":1,"mark":"9"}}'),
      // the right length, digits where the mark is, the wrong end
      q('{"v":1,"mark":"9"]'), q('{"v":1,"mark":"99xy'),
      // marks that a number parser would read as 9 (or that exceed 2^64-1)
      q('{"v":1,"mark":"1e0"}'), q('{"v":1,"mark":"9e0"}'), q('{"v":1,"mark":"+9"}'), q('{"v":1,"mark":" 9"}'), q('{"v":1,"mark":"9 "}'),
      q('{"v":1,"mark":"-9"}'), q('{"v":1,"mark":"-0"}'), q('{"v":1,"mark":"09"}'), q('{"v":1,"mark":"00"}'), q('{"v":1,"mark":"9.0"}'), q('{"v":1,"mark":"0x9"}'),
      q('{"v":1,"mark":"９"}'), q('{"v":1,"mark":9}'), q('{"v":1,"mark":""}'),
      q('{"v":1,"mark":"18446744073709551616"}'), q('{"v":1,"mark":"99999999999999999999"}'), q('{"v":1,"mark":"9223372036854775807000"}'),
      // the right shape in the wrong case, a repeated member, a number where v belongs
      q('{"V":1,"MARK":"9"}'), q('{"v":1,"mark":"9","mark":"9"}'), q('{"v":"1","mark":"9"}'), q('{"v":1.0,"mark":"9"}'), q('{"v":1e0,"mark":"9"}'), q('{"v":10e-1,"mark":"9"}'),
    ]) {
      assert.deepEqual(write(expr), notWellFormed, expr);
    }
    assert.deepEqual(t.fences(), fences);
    const lowered = (from, to) => ({ code: 'SQLITE_CONSTRAINT_TRIGGER', message: `FG002 fencegate guard: fence row orders/1: lowering the mark from ${from} to ${to} refused: the mark never goes down` });
    const v1 = (m) => q(`{"v":1,"mark":"${m}"}`);
    // same length and shorter text, both in the fast form
    assert.equal(write(v1('20')), 'applied');
    assert.deepEqual(write(v1('19')), lowered('20', '19'));
    assert.equal(write(v1('100')), 'applied');
    assert.deepEqual(write(v1('99')), lowered('100', '99'));
    // across the fast form's edge (marks from 2^63 take the full check)
    assert.equal(write(v1('18446744073709551615')), 'applied');
    assert.deepEqual(write(v1('9223372036854775807')), lowered('18446744073709551615', '9223372036854775807'));
    assert.deepEqual(write(v1('18446744073709551614')), lowered('18446744073709551615', '18446744073709551614'));
    assert.equal(write(v1('18446744073709551615')), 'applied');
    // the same state text: the version must still go up and the key stay
    const version = t.fences()[0].version;
    assert.deepEqual(t.raw(`UPDATE fencegate SET state = state WHERE key = 'orders/1'`), { code: 'SQLITE_CONSTRAINT_TRIGGER', message: `FG002 fencegate guard: fence row orders/1: version ${version} after ${version} refused: the version only goes up` });
    assert.deepEqual(t.raw(`UPDATE fencegate SET key = 'orders/9', version = version + 1 WHERE key = 'orders/1'`), { code: 'SQLITE_CONSTRAINT_TRIGGER', message: 'FG002 fencegate guard: fence row orders/1: changing its key refused' });
    assert.deepEqual(t.fences()[0], { key: 'orders/1', state: '{"v":1,"mark":"18446744073709551615"}', value: null, version });
    // the fast form's edges that are well formed
    assert.equal(t.raw(`INSERT INTO fencegate (key, state, value, version) VALUES ('z/0', '{"v":1,"mark":"0"}', NULL, 1), ('z/max', '{"v":1,"mark":"9223372036854775807"}', NULL, 1), ('z/2^63', '{"v":1,"mark":"9223372036854775808"}', NULL, 1)`), 'applied');
    assert.deepEqual(t.raw(`INSERT INTO fencegate (key, state, value, version) VALUES ('z/bad', '{"v":1,"mark":"01"}', NULL, 1)`), { code: 'SQLITE_CONSTRAINT_TRIGGER', message: 'FG002 fencegate guard: fence row z/bad: the new state refused: not a well-formed fence state' });
    assert.equal(await t.gate.mark('z/2^63'), 9223372036854775808n);
  } finally {
    t.close();
  }
});

test('SQLite guard: a state written before the guard is checked even when rewritten unchanged; a case-folding state column cannot pass the fast path; every fixture state passes', async () => {
  const t = await open();
  try {
    await removeGuard(t.db, { table: 'orders', fence: true });
    t.db.exec("UPDATE fencegate SET state = 'garbage' WHERE key = 'orders/2'");
    await installGuard(t.db, { table: 'orders', key: "'orders/' || id" });
    assert.deepEqual(t.raw("UPDATE fencegate SET version = version + 1 WHERE key = 'orders/2'"), { code: 'SQLITE_CONSTRAINT_TRIGGER', message: 'FG002 fencegate guard: fence row orders/2: the new state refused: not a well-formed fence state' });
    // a fence table whose state column folds case: only the exact bytes pass
    t.db.exec('CREATE TABLE fence_nocase (key TEXT PRIMARY KEY, state TEXT NOT NULL COLLATE NOCASE, value TEXT, version INTEGER NOT NULL); CREATE TABLE items (id INTEGER PRIMARY KEY)');
    await installGuard(t.db, { table: 'items', key: "'items/' || id", fenceTable: 'fence_nocase' });
    assert.deepEqual(t.raw(`INSERT INTO fence_nocase VALUES ('items/1', '{"V":1,"MARK":"9"}', NULL, 1)`), { code: 'SQLITE_CONSTRAINT_TRIGGER', message: 'FG002 fencegate guard: fence row items/1: the new state refused: not a well-formed fence state' });
    assert.equal(t.raw(`INSERT INTO fence_nocase VALUES ('items/1', '{"v":1,"mark":"9"}', NULL, 1)`), 'applied');
    assert.deepEqual(t.raw(`UPDATE fence_nocase SET state = '{"V":1,"MARK":"9"}', version = version + 1`), { code: 'SQLITE_CONSTRAINT_TRIGGER', message: 'FG002 fencegate guard: fence row items/1: the new state refused: not a well-formed fence state' });
    const { readFileSync } = await import('node:fs');
    const today = JSON.parse(readFileSync(new URL('../../fixtures/formats-today.json', import.meta.url), 'utf8')).cases.filter((c) => c.kind === 'state');
    const old = JSON.parse(readFileSync(new URL('../../fixtures/state-v1-v3.json', import.meta.url), 'utf8')).cases;
    const texts = [...today.map((c) => c.text), ...old.map((c) => c.text)];
    assert.ok(texts.length >= 10, `${texts.length} fixture states`);
    const insert = t.db.prepare('INSERT INTO fencegate (key, state, value, version) VALUES (?, ?, NULL, 1)');
    for (const [i, text] of texts.entries()) assert.equal(insert.run(`fixture/${i}`, text).changes, 1, text);
  } finally {
    t.close();
  }
});

test('SQLite guard: installing over the previous version replaces its triggers (the same schema as a fresh install), and the guard still holds', async () => {
  const { readFileSync } = await import('node:fs');
  const previous = JSON.parse(readFileSync(new URL('./fixtures/previous-guard.json', import.meta.url), 'utf8'));
  const t = await open();
  try {
    const schema = () => t.db.prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY name").all();
    const fresh = schema();
    await removeGuard(t.db, { table: 'orders', fence: true });
    t.db.exec(previous.sqlite);
    const old = schema();
    assert.deepEqual(old.map((r) => r.name), fresh.map((r) => r.name));
    assert.notDeepEqual(old, fresh);
    await installGuard(t.db, { table: 'orders', key: "'orders/' || id" });
    assert.deepEqual(schema(), fresh);
    await installGuard(t.db, { table: 'orders', key: "'orders/' || id" });
    assert.deepEqual(schema(), fresh);
    const set = (s) => (tx) => tx.prepare('UPDATE orders SET status = ? WHERE id = 1').run(s).changes;
    assert.deepEqual(await t.gate.transaction('orders/1', 6, set('paid')), { key: 'orders/1', ok: true, outcome: 'advance', code: null, token: 6, markBefore: 5, markAfter: 6, result: 1 });
    assert.deepEqual(await t.gate.transaction('orders/1', 6, set('shipped')), { key: 'orders/1', ok: true, outcome: 'accept', code: null, token: 6, markBefore: 6, markAfter: 6, result: 1 });
    assert.equal(t.raw("UPDATE orders SET status = 'rogue' WHERE id = 1").code, 'GUARD_REFUSED');
    assert.equal(t.raw(`UPDATE fencegate SET state = '{"v":1,"mark":"5"}', version = version + 1 WHERE key = 'orders/1'`).message, 'FG002 fencegate guard: fence row orders/1: lowering the mark from 6 to 5 refused: the mark never goes down');
    assert.deepEqual(t.rows(), [{ id: 1, status: 'shipped' }, { id: 2, status: 'new' }]);
  } finally {
    t.close();
  }
});
