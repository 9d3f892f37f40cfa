// The MySQL/MariaDB guard: the fence row's xact is a hash, so a reader of the fence table cannot
// set @fencegate_xact from it and pass on the same connection; fence row versions start at 1
// and go up by exactly 1. Own tables (gv_orders, gv_fence).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import { Gate } from '../../../pkg/node.mjs';
import { MysqlStore } from '../../../pkg/adapters/mysql.mjs';
import { installGuard, removeGuard } from '../../../pkg/adapters/guard.mjs';

const MY_URL = process.env.FENCEGATE_MYSQL_URL;
const skip = !MY_URL && (process.env.FENCEGATE_REQUIRE_SERVICES ? false : 'FENCEGATE_MYSQL_URL is not set');
let pool;
before(async () => {
  // one connection: the forger runs on the connection the fenced transaction ran on (same CONNECTION_ID())
  if (!skip) pool = mysql.createPool({ uri: MY_URL, connectionLimit: 1 });
});
after(async () => {
  if (pool) {
    // leave no triggers or tables behind (other guard tests count the database's triggers)
    await removeGuard(pool, { table: 'gv_orders', fenceTable: 'gv_fence', fence: true }).catch(() => {});
    await pool.query('DROP TABLE IF EXISTS gv_orders');
    await pool.query('DROP TABLE IF EXISTS gv_fence');
    await pool.end();
  }
});

const rows = async () => (await pool.query('SELECT id, status FROM gv_orders ORDER BY id'))[0].map((r) => ({ ...r }));
const fences = async () => (await pool.query('SELECT CAST(k AS CHAR) AS k, state, CAST(version AS CHAR) AS version FROM gv_fence ORDER BY k'))[0].map((r) => ({ ...r }));
const raw = async (sql, params) => {
  try {
    await pool.query(sql, params);
    return 'applied';
  } catch (e) {
    return { sqlState: e.sqlState, message: e.message };
  }
};

async function reset() {
  await removeGuard(pool, { table: 'gv_orders', fenceTable: 'gv_fence', fence: true }).catch(() => {});
  await pool.query('DROP TABLE IF EXISTS gv_orders');
  await pool.query('DROP TABLE IF EXISTS gv_fence');
  const store = new MysqlStore(pool, { table: 'gv_fence', guard: true });
  await store.init();
  await pool.query("CREATE TABLE gv_orders (id INT PRIMARY KEY, status VARCHAR(40) NOT NULL) ENGINE=InnoDB");
  await pool.query("INSERT INTO gv_orders VALUES (1, 'new')");
  const gate = new Gate(store, { stateCache: 0 });
  await gate.transaction('orders/1', 5, () => null);
  await installGuard(pool, { table: 'gv_orders', key: "CONCAT('orders/', id)", fenceTable: 'gv_fence' });
  return gate;
}

test('MySQL guard: the fence row keeps a SHA-256 of connection and nonce; setting @fencegate_xact to the column (or to its text after a colon) on the same connection does not pass', { skip }, async () => {
  const gate = await reset();
  const v = await gate.transaction('orders/1', 6, (tx) => tx.query("UPDATE gv_orders SET status = 'six' WHERE id = 1").then(([r]) => r.affectedRows));
  assert.deepEqual(v, { key: 'orders/1', ok: true, outcome: 'advance', code: null, token: 6, markBefore: 5, markAfter: 6, result: 1 });
  const [[{ xact, id }]] = await pool.query("SELECT xact, CONNECTION_ID() AS id FROM gv_fence WHERE k = 'orders/1'");
  assert.match(xact, /^[0-9a-f]{64}$/);
  const before = await rows();
  const fenceBefore = await fences();
  for (const forged of [xact, String(xact).split(':').slice(1).join(':'), `${id}:${xact}`]) {
    const c = await pool.getConnection();
    try {
      await c.query('SET @fencegate_xact = ?', [forged]);
      await c.query('START TRANSACTION');
      let out = 'applied';
      try {
        await c.query("UPDATE gv_orders SET status = 'forged' WHERE id = 1");
      } catch (e) {
        out = { sqlState: e.sqlState, message: e.message };
      }
      await c.query('ROLLBACK');
      assert.deepEqual(out, { sqlState: 'FG001', message: "fencegate guard: UPDATE on gv_orders refused: this transaction did not pass the fence for key orders/1 (its fence row was not written by this connection's current fenced transaction)" }, forged);
    } finally {
      await c.query('SET @fencegate_xact = NULL');
      c.release();
    }
  }
  assert.deepEqual(await rows(), before);
  assert.deepEqual(await fences(), fenceBefore);
  assert.deepEqual(before, [{ id: 1, status: 'six' }]);
});

test('MySQL guard: a fence row version goes up by exactly 1 and a new one starts at 1 (FG002, nothing changed)', { skip }, async () => {
  const gate = await reset();
  const before = await fences();
  assert.deepEqual(before, [{ k: 'orders/1', state: '{"v":1,"mark":"5"}', version: '1' }]);
  assert.deepEqual(await raw("UPDATE gv_fence SET version = 9223372036854775807 WHERE k = 'orders/1'"), { sqlState: 'FG002', message: 'fencegate guard: fence row orders/1: version 9223372036854775807 after 1 refused: the version goes up by exactly 1' });
  assert.deepEqual(await raw("UPDATE gv_fence SET version = version + 2 WHERE k = 'orders/1'"), { sqlState: 'FG002', message: 'fencegate guard: fence row orders/1: version 3 after 1 refused: the version goes up by exactly 1' });
  assert.deepEqual(await raw(`UPDATE gv_fence SET state = '{"v":1,"mark":"6"}', version = version + 5 WHERE k = 'orders/1'`), { sqlState: 'FG002', message: 'fencegate guard: fence row orders/1: version 6 after 1 refused: the version goes up by exactly 1' });
  assert.deepEqual(await raw(`INSERT INTO gv_fence (k, state, value, version) VALUES ('orders/2', '{"v":1,"mark":"1"}', NULL, 9223372036854775807)`), { sqlState: 'FG002', message: 'fencegate guard: fence row orders/2: version 9223372036854775807 refused: a new fence row starts at version 1' });
  assert.deepEqual(await fences(), before);
  assert.equal(await raw("UPDATE gv_fence SET version = version + 1 WHERE k = 'orders/1'"), 'applied');
  assert.equal((await gate.transaction('orders/1', 6, (tx) => tx.query("UPDATE gv_orders SET status = 'six' WHERE id = 1").then(([r]) => r.affectedRows))).ok, true);
  assert.equal((await gate.transaction('orders/2', 1, (tx) => tx.query("INSERT INTO gv_orders VALUES (2, 'two')").then(([r]) => r.affectedRows))).ok, true);
  assert.deepEqual(await fences(), [{ k: 'orders/1', state: '{"v":1,"mark":"6"}', version: '3' }, { k: 'orders/2', state: '{"v":1,"mark":"1"}', version: '1' }]);
  assert.deepEqual(await rows(), [{ id: 1, status: 'six' }, { id: 2, status: 'two' }]);
});
