// The MySQL/MariaDB guard (docs/guard.md) on a real MariaDB: the fence row records the
// connection and the fenced transaction's nonce (@fencegate_xact); raw writes refused with
// SQLSTATE FG001, fence table writes with FG002. The fenced transaction here follows the
// store's protocol by hand (SET @fencegate_xact, fence write, statements, COMMIT, clear).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import mysql from 'mysql2/promise';
import { MysqlStore } from '../../../pkg/adapters/mysql.mjs';
import { installGuard, removeGuard } from '../../../pkg/adapters/guard.mjs';

const MY_URL = process.env.FENCEGATE_MYSQL_URL;
const skip = !MY_URL && (process.env.FENCEGATE_REQUIRE_SERVICES ? false : 'FENCEGATE_MYSQL_URL is not set');
let pool;
before(async () => {
  if (!skip) pool = mysql.createPool({ uri: MY_URL, connectionLimit: 3 });
});
after(async () => {
  if (pool) await pool.end();
});

const raw = async (sql, on = pool) => {
  try {
    await on.query(sql);
    return 'applied';
  } catch (e) {
    return { sqlState: e.sqlState, message: e.message };
  }
};

/** A fenced transaction by the guard's MySQL protocol: nonce, fence row write (mark `mark`), the statements, COMMIT, nonce cleared. */
async function fenced(key, mark, statements) {
  const c = await pool.getConnection();
  try {
    await c.query('SET @fencegate_xact = ?', [randomUUID()]);
    await c.query('START TRANSACTION');
    await c.query('UPDATE fencegate SET state = ?, version = version + 1 WHERE k = ?', [`{"v":1,"mark":"${mark}"}`, key]);
    for (const s of statements) await c.query(s);
    await c.query('COMMIT');
    return 'applied';
  } catch (e) {
    await c.query('ROLLBACK');
    return { sqlState: e.sqlState, message: e.message };
  } finally {
    await c.query('SET @fencegate_xact = NULL');
    c.release();
  }
}

test('MySQL guard: raw writes refused (FG001), fenced writes applied for their key only, fence table guarded (FG002), install twice, remove', { skip }, async () => {
  await removeGuard(pool, { table: 'orders', fence: true }).catch(() => {});
  await pool.query('DROP TABLE IF EXISTS orders');
  await pool.query('DROP TABLE IF EXISTS fencegate');
  await new MysqlStore(pool).init();
  await pool.query("CREATE TABLE orders (id INT PRIMARY KEY, status VARCHAR(20) NOT NULL) ENGINE=InnoDB");
  await pool.query("INSERT INTO orders VALUES (1, 'new'), (2, 'new')");
  await pool.query(`INSERT INTO fencegate (k, state, value, version) VALUES ('orders/1', '{"v":1,"mark":"5"}', NULL, 1), ('orders/2', '{"v":1,"mark":"5"}', NULL, 1)`);
  await installGuard(pool, { table: 'orders', key: "CONCAT('orders/', id)" });
  const rows = async () => (await pool.query('SELECT id, status FROM orders ORDER BY id'))[0].map((r) => ({ ...r }));
  const fences = async () => (await pool.query('SELECT CAST(k AS CHAR) AS k, state, version FROM fencegate ORDER BY k'))[0].map((r) => ({ ...r, version: Number(r.version) }));
  assert.deepEqual(await raw("UPDATE orders SET status = 'rogue' WHERE id = 1"), {
    sqlState: 'FG001', message: "fencegate guard: UPDATE on orders refused: this transaction did not pass the fence for key orders/1 (its fence row was not written by this connection's current fenced transaction)",
  });
  assert.deepEqual(await raw("INSERT INTO orders VALUES (3, 'rogue')"), { sqlState: 'FG001', message: 'fencegate guard: INSERT on orders refused: key orders/3 has no fence row: this transaction did not pass the fence for it' });
  assert.equal((await raw('DELETE FROM orders WHERE id = 2')).sqlState, 'FG001');
  // a session that sets the variable but did not write the fence row in this transaction
  assert.equal((await fenced('orders/2', 5, ["UPDATE orders SET status = 'x' WHERE id = 1"])).sqlState, 'FG001');
  assert.deepEqual(await rows(), [{ id: 1, status: 'new' }, { id: 2, status: 'new' }]);
  assert.equal(await fenced('orders/1', 6, ["UPDATE orders SET status = 'paid' WHERE id = 1"]), 'applied');
  assert.equal((await fenced('orders/1', 7, ["UPDATE orders SET status = 'one' WHERE id = 1", "UPDATE orders SET status = 'two' WHERE id = 2"])).message,
    "fencegate guard: UPDATE on orders refused: this transaction did not pass the fence for key orders/2 (its fence row was not written by this connection's current fenced transaction)");
  // after the fenced transaction (nonce cleared) the same connections are refused again
  assert.equal((await raw("UPDATE orders SET status = 'after' WHERE id = 1")).sqlState, 'FG001');
  assert.deepEqual(await rows(), [{ id: 1, status: 'paid' }, { id: 2, status: 'new' }]);
  const f = await fences();
  assert.deepEqual(f, [{ k: 'orders/1', state: '{"v":1,"mark":"6"}', version: 2 }, { k: 'orders/2', state: '{"v":1,"mark":"5"}', version: 1 }]);
  assert.deepEqual(await raw(`UPDATE fencegate SET state = '{"v":1,"mark":"4"}', version = version + 1 WHERE k = 'orders/1'`), { sqlState: 'FG002', message: 'fencegate guard: fence row orders/1: lowering the mark from 6 to 4 refused: the mark never goes down' });
  assert.deepEqual(await raw(`UPDATE fencegate SET state = 'garbage', version = version + 1 WHERE k = 'orders/1'`), { sqlState: 'FG002', message: 'fencegate guard: fence row orders/1: the new state refused: not JSON' });
  assert.deepEqual(await raw(`UPDATE fencegate SET state = '{"v":1,"mark":"05"}', version = version + 1 WHERE k = 'orders/1'`), { sqlState: 'FG002', message: 'fencegate guard: fence row orders/1: the new state refused: "mark" is not canonical decimal text in 0..2^64-1' });
  assert.deepEqual(await raw("DELETE FROM fencegate WHERE k = 'orders/2'"), { sqlState: 'FG002', message: 'fencegate guard: fence row orders/2: DELETE refused: fence rows are never removed (that would lower the mark to 0)' });
  assert.deepEqual(await fences(), f);
  const triggers = async () => (await pool.query("SELECT TRIGGER_NAME, ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() ORDER BY TRIGGER_NAME"))[0].map((r) => ({ ...r }));
  const t1 = await triggers();
  assert.equal(t1.length, 6);
  await installGuard(pool, { table: 'orders', key: "CONCAT('orders/', id)" });
  assert.deepEqual(await triggers(), t1);
  await removeGuard(pool, { table: 'orders', fence: true });
  assert.deepEqual(await triggers(), []);
  assert.deepEqual(await fences(), f);
  assert.deepEqual(await rows(), [{ id: 1, status: 'paid' }, { id: 2, status: 'new' }]);
});

test('MySQL guard with MysqlStore({ guard: true }): gate.transaction and fenceIn pass the guard; without the option the guard refuses them (GUARD_REFUSED, nothing written)', { skip }, async () => {
  const { Gate } = await import('../../../pkg/node.mjs');
  await removeGuard(pool, { table: 'orders', fence: true }).catch(() => {});
  await pool.query('DROP TABLE IF EXISTS orders');
  await pool.query('DROP TABLE IF EXISTS fencegate');
  await new MysqlStore(pool).init();
  await pool.query("CREATE TABLE orders (id INT PRIMARY KEY, status VARCHAR(20) NOT NULL) ENGINE=InnoDB");
  await pool.query("INSERT INTO orders VALUES (1, 'new')");
  await installGuard(pool, { table: 'orders', key: "CONCAT('orders/', id)" });
  const status = async () => (await pool.query('SELECT status FROM orders WHERE id = 1'))[0][0].status;
  const set = (s) => (conn) => conn.query('UPDATE orders SET status = ? WHERE id = 1', [s]);
  const guarded = new Gate(new MysqlStore(pool, { guard: true }), { stateCache: 0 });
  assert.equal((await guarded.transaction('orders/1', 5, set('paid'))).outcome, 'advance');
  assert.equal(await status(), 'paid');
  assert.equal((await guarded.transaction('orders/1', 4, set('zombie'))).code, 'STALE_TOKEN');
  // the same connections afterwards: refused again (the nonce was cleared)
  assert.equal((await raw("UPDATE orders SET status = 'rogue' WHERE id = 1")).sqlState, 'FG001');
  // fenceIn inside the caller's transaction
  const c = await pool.getConnection();
  try {
    await c.beginTransaction();
    assert.equal((await guarded.fenceIn(c, 'orders/1', 6)).outcome, 'advance');
    await c.query("UPDATE orders SET status = 'shipped' WHERE id = 1");
    await c.commit();
    // the pass of a fenceIn lives in the session until cleared (docs/guard.md): clear it after COMMIT
    await c.query('SET @fencegate_xact = NULL');
  } finally {
    c.release();
  }
  assert.equal(await status(), 'shipped');
  // a store without guard: true: the guard refuses its statements, nothing written
  const plain = new Gate(new MysqlStore(pool), { stateCache: 0 });
  const e = await plain.transaction('orders/1', 7, set('unguarded')).catch((x) => x);
  assert.equal(e.code, 'GUARD_REFUSED');
  assert.equal(await status(), 'shipped');
  assert.equal(await plain.mark('orders/1'), 6);
  await removeGuard(pool, { table: 'orders', fence: true });
});

/** A fresh `orders` (id, status) behind `fencegate` with rows orders/1 and orders/2 at mark 5, the guard installed (or the SQL `installSql` run instead). */
async function freshGuard(installSql) {
  await removeGuard(pool, { table: 'orders', fence: true }).catch(() => {});
  await pool.query('DROP TABLE IF EXISTS orders');
  await pool.query('DROP TABLE IF EXISTS fencegate');
  await new MysqlStore(pool).init();
  await pool.query("CREATE TABLE orders (id INT PRIMARY KEY, status VARCHAR(20) NOT NULL) ENGINE=InnoDB");
  await pool.query("INSERT INTO orders VALUES (1, 'new'), (2, 'new')");
  await pool.query(`INSERT INTO fencegate (k, state, value, version) VALUES ('orders/1', '{"v":1,"mark":"5"}', NULL, 1), ('orders/2', '{"v":1,"mark":"5"}', NULL, 1)`);
  if (installSql === undefined) await installGuard(pool, { table: 'orders', key: "CONCAT('orders/', id)" });
  else for (const s of installSql) await pool.query(s);
}
const fenceRows = async () => (await pool.query('SELECT CAST(k AS CHAR) AS k, state, version FROM fencegate ORDER BY k'))[0].map((r) => ({ ...r, version: Number(r.version) }));

test('MySQL guard: the fast paths (the canonical v1 text, an unchanged state) let no garbage and no lower mark through; REGEXP\'s $ before a final newline passes nothing (exact errors)', { skip }, async () => {
  await freshGuard();
  const fences = await fenceRows();
  const write = (state, key = 'orders/1') => raw(mysql.format('UPDATE fencegate SET state = ?, version = version + 1 WHERE k = ?', [state, key]));
  const fg = (message) => ({ sqlState: 'FG002', message: `fencegate guard: fence row orders/1: ${message}` });
  const notJson = fg('the new state refused: not JSON');
  const badMark = fg('the new state refused: "mark" is not canonical decimal text in 0..2^64-1');
  for (const [state, expected] of [
    ['{"v":1,"mark":"9"}x', notJson],
    ['{"v":1,"mark":"9"]', notJson],
    ['{"v":1,"mark":"99xy', notJson],
    // a raw newline after the digits (not JSON), an escaped one (JSON, not a canonical decimal)
    ['{"v":1,"mark":"9\n"}', notJson],
    ['{"v":1,"mark":"9\\n"}', badMark],
    ['{"v":1,"mark":"1e0"}', badMark], ['{"v":1,"mark":"+9"}', badMark], ['{"v":1,"mark":" 9"}', badMark], ['{"v":1,"mark":"9 "}', badMark],
    ['{"v":1,"mark":"-9"}', badMark], ['{"v":1,"mark":"09"}', badMark], ['{"v":1,"mark":"00"}', badMark], ['{"v":1,"mark":"9.0"}', badMark],
    ['{"v":1,"mark":"９"}', badMark], ['{"v":1,"mark":""}', badMark], ['{"v":1,"mark":9}', badMark],
    ['{"v":1,"mark":"18446744073709551616"}', badMark], ['{"v":1,"mark":"99999999999999999999"}', badMark], ['{"v":1,"mark":"9223372036854775807000"}', badMark],
    ['{"V":1,"MARK":"9"}', fg('the new state refused: "v" is not 1, 2, 3 or 4')],
    ['{"v":1e0,"mark":"9"}', fg('the new state refused: "v" is not 1, 2, 3 or 4')],
    ['{"v":10e-1,"mark":"9"}', fg('the new state refused: "v" is not 1, 2, 3 or 4')],
    ['{"v":1,"mark":"9","mark":"9"}', fg('the new state refused: its members are not those of its format version')],
    ['{"v":2,"mark":"9","holder":null,"ops":{},"evicted":"ab\\n"}', fg('the new state refused: "evicted" is not null or hex text')],
    ['{"v":2,"mark":"9","holder":null,"ops":{},"evicted":"AB"}', fg('the new state refused: "evicted" is not null or hex text')],
    ['{"v":3,"mark":"9","holder":null,"ops":{},"evicted":null,"quarantine":"9\\n"}', fg('the new state refused: "quarantine" is not null or a decimal at most the mark')],
  ]) {
    assert.deepEqual(await write(state), expected, state);
  }
  assert.deepEqual(await fenceRows(), fences);
  const lowered = (from, to) => fg(`lowering the mark from ${from} to ${to} refused: the mark never goes down`);
  const v1 = (m) => `{"v":1,"mark":"${m}"}`;
  assert.equal(await write(v1('20')), 'applied');
  assert.deepEqual(await write(v1('19')), lowered(20, 19));
  assert.equal(await write(v1('100')), 'applied');
  assert.deepEqual(await write(v1('99')), lowered(100, 99));
  assert.equal(await write(v1('18446744073709551615')), 'applied');
  assert.deepEqual(await write(v1('9223372036854775807')), lowered('18446744073709551615', '9223372036854775807'));
  const v4 = '{"v":4,"mark":"18446744073709551615","holder":null,"ops":[],"evicted":"fnv1a:00ff","quarantine":null}';
  assert.equal(await write(v4), 'applied');
  assert.deepEqual(await write(v1('7')), lowered('18446744073709551615', '7'));
  assert.equal(await write(v1('18446744073709551615')), 'applied');
  const [{ version }] = (await fenceRows()).filter((r) => r.k === 'orders/1');
  assert.deepEqual(await raw("UPDATE fencegate SET state = state WHERE k = 'orders/1'"), fg(`version ${version} after ${version} refused: the version only goes up`));
  assert.deepEqual(await raw("UPDATE fencegate SET k = 'orders/9', version = version + 1 WHERE k = 'orders/1'"), fg('changing its key refused'));
  assert.deepEqual((await fenceRows()).find((r) => r.k === 'orders/1'), { k: 'orders/1', state: v1('18446744073709551615'), version });
  // a state written before the guard (no xact) is checked even when rewritten unchanged
  await removeGuard(pool, { fence: true });
  await pool.query("UPDATE fencegate SET state = 'garbage' WHERE k = 'orders/2'");
  await installGuard(pool, { table: 'orders', key: "CONCAT('orders/', id)" });
  assert.deepEqual(await raw("UPDATE fencegate SET version = version + 1 WHERE k = 'orders/2'"), { sqlState: 'FG002', message: 'fencegate guard: fence row orders/2: the new state refused: not JSON' });
  await removeGuard(pool, { table: 'orders', fence: true });
});

test('MySQL guard: every state fencegate writes in the fixtures passes the SQL check', { skip }, async () => {
  await freshGuard();
  const { readFileSync } = await import('node:fs');
  const today = JSON.parse(readFileSync(new URL('../../fixtures/formats-today.json', import.meta.url), 'utf8')).cases.filter((c) => c.kind === 'state');
  const old = JSON.parse(readFileSync(new URL('../../fixtures/state-v1-v3.json', import.meta.url), 'utf8')).cases;
  const texts = [...today.map((c) => c.text), ...old.map((c) => c.text)];
  assert.ok(texts.length >= 10, `${texts.length} fixture states`);
  for (const [i, text] of texts.entries()) {
    assert.equal(await raw(mysql.format('INSERT INTO fencegate (k, state, value, version) VALUES (?, ?, NULL, 1)', [`fixture/${i}`, text])), 'applied', text);
  }
  await removeGuard(pool, { table: 'orders', fence: true });
});

test('MySQL guard: installing over the previous version replaces its triggers (the same triggers as a fresh install), and the guard still holds', { skip }, async () => {
  const { readFileSync } = await import('node:fs');
  const previous = JSON.parse(readFileSync(new URL('./fixtures/previous-guard.json', import.meta.url), 'utf8'));
  // the statements between DELIMITER $$ and DELIMITER ;
  const statements = previous.mysql.split('DELIMITER $$\n')[1].split('\nDELIMITER ;')[0].split(/ \$\$\n?/).filter((s) => s.trim() !== '');
  const triggers = async () => (await pool.query("SELECT TRIGGER_NAME, ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() ORDER BY TRIGGER_NAME"))[0].map((r) => ({ ...r }));
  await freshGuard();
  const fresh = await triggers();
  await freshGuard(statements);
  const old = await triggers();
  assert.deepEqual(old.map((r) => r.TRIGGER_NAME), fresh.map((r) => r.TRIGGER_NAME));
  assert.notDeepEqual(old, fresh);
  await installGuard(pool, { table: 'orders', key: "CONCAT('orders/', id)" });
  assert.deepEqual(await triggers(), fresh);
  await installGuard(pool, { table: 'orders', key: "CONCAT('orders/', id)" });
  assert.deepEqual(await triggers(), fresh);
  assert.equal(await fenced('orders/1', 6, ["UPDATE orders SET status = 'paid' WHERE id = 1"]), 'applied');
  assert.equal(await fenced('orders/1', 6, ["UPDATE orders SET status = 'shipped' WHERE id = 1"]), 'applied');
  assert.equal((await raw("UPDATE orders SET status = 'rogue' WHERE id = 1")).sqlState, 'FG001');
  assert.deepEqual(await raw(`UPDATE fencegate SET state = '{"v":1,"mark":"5"}', version = version + 1 WHERE k = 'orders/1'`), {
    sqlState: 'FG002', message: 'fencegate guard: fence row orders/1: lowering the mark from 6 to 5 refused: the mark never goes down',
  });
  assert.deepEqual((await pool.query('SELECT id, status FROM orders ORDER BY id'))[0].map((r) => ({ ...r })), [{ id: 1, status: 'shipped' }, { id: 2, status: 'new' }]);
  await removeGuard(pool, { table: 'orders', fence: true });
});
