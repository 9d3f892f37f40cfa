// MySQL fenceIn: a refused fenceIn clears the connection's earlier pass (a pooled connection
// whose previous user fenced and committed without clearing @fencegate_xact cannot lend the
// next user a pass), and retry-class failures of the fence step (two first writers of new
// keys deadlock on InnoDB's gap locks) are COMMIT_CONFLICT with conflict: true, never STORE_ERROR.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Gate } from '../../../pkg/node.mjs';
import { MysqlStore } from '../../../pkg/adapters/mysql.mjs';
import { installGuard, removeGuard } from '../../../pkg/adapters/guard.mjs';
import { MYSQL_URL } from '../stores/targets.mjs';

const skip = !MYSQL_URL && 'FENCEGATE_MYSQL_URL is not set (scripts/with-services.sh)';
let mysql;
before(async () => {
  if (!skip) mysql = await import('mysql2/promise');
});

test('MySQL guard: a refused fenceIn leaves no pass on the connection (the zombie\'s UPDATE is refused, FG001)', { skip }, async () => {
  const pool = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 1 }); // one connection: the zombie gets the owner's
  try {
    for (const s of ['DROP TABLE IF EXISTS fp_orders', 'DROP TABLE IF EXISTS fp_fence', 'CREATE TABLE fp_orders (id INT PRIMARY KEY, status VARCHAR(40)) ENGINE=InnoDB', "INSERT INTO fp_orders VALUES (42, 'paid')"]) await pool.query(s);
    const gate = new Gate(await new MysqlStore(pool, { table: 'fp_fence', guard: true }).init());
    await installGuard(pool, { table: 'fp_orders', key: "CONCAT('orders/', id)", fenceTable: 'fp_fence' });
    let c = await pool.getConnection();
    await c.beginTransaction();
    await gate.fenceIn(c, 'orders/42', 7);
    await c.query("UPDATE fp_orders SET status = 'owner7' WHERE id = 42");
    await c.commit(); // the owner does not clear @fencegate_xact
    c.release();
    c = await pool.getConnection();
    let refusal;
    let update;
    try {
      await c.beginTransaction();
      refusal = await gate.fenceIn(c, 'orders/42', 3).catch((e) => e.code);
      update = await c.query("UPDATE fp_orders SET status = 'zombie3' WHERE id = 42").then(() => 'applied', (e) => e.sqlState);
      await c.rollback();
    } finally {
      c.release();
    }
    assert.deepEqual([refusal, update], ['STALE_TOKEN', 'FG001']);
    assert.equal((await pool.query('SELECT status FROM fp_orders'))[0][0].status, 'owner7');
    assert.equal(await gate.mark('orders/42'), 7);
    await removeGuard(pool, { table: 'fp_orders' });
  } finally {
    await pool.query('DROP TABLE IF EXISTS fp_orders').catch(() => {});
    await pool.query('DROP TABLE IF EXISTS fp_fence').catch(() => {});
    await pool.end();
  }
});

test('MySQL fenceIn: concurrent first writers of new keys — every failure is COMMIT_CONFLICT with conflict: true; every success is in the fence table', { skip }, async () => {
  const pool = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 12 });
  try {
    await pool.query('DROP TABLE IF EXISTS fp_dl');
    const gate = new Gate(await new MysqlStore(pool, { table: 'fp_dl' }).init());
    const outcomes = {};
    const applied = new Map();
    await Promise.all(
      Array.from({ length: 60 }, async (_, i) => {
        const key = `k${i % 20}`;
        const token = 1 + (i % 3);
        const c = await pool.getConnection();
        try {
          await c.beginTransaction();
          await gate.fenceIn(c, key, token);
          await c.commit();
          applied.set(key, Math.max(applied.get(key) ?? 0, token));
          outcomes.ok = (outcomes.ok ?? 0) + 1;
        } catch (e) {
          await c.rollback().catch(() => {});
          const k = `${e.code}${e.conflict === true ? ' conflict' : ''}`;
          outcomes[k] = (outcomes[k] ?? 0) + 1;
        } finally {
          c.release();
        }
      }),
    );
    for (const k of Object.keys(outcomes)) assert.ok(['ok', 'COMMIT_CONFLICT conflict', 'STALE_TOKEN'].includes(k), JSON.stringify(outcomes));
    const [rows] = await pool.query('SELECT k, state FROM fp_dl');
    // the mark of each key is the highest token that committed on it
    for (const r of rows) assert.equal(JSON.parse(r.state).mark, String(applied.get(String(r.k))), String(r.k));
    assert.equal(rows.length, applied.size);
  } finally {
    await pool.query('DROP TABLE IF EXISTS fp_dl').catch(() => {});
    await pool.end();
  }
});
