// The PostgreSQL guard: fence row versions start at 1 and go up by exactly 1 (a raw jump to
// the bigint maximum would end every fenced write of the key), and installGuard on a
// postgres.js sql with its default pool (max 10). Own tables (gv_orders, gv_fence).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import postgres from 'postgres';
import { Gate } from '../../../pkg/node.mjs';
import { installGuard, removeGuard } from '../../../pkg/adapters/guard.mjs';
import { PostgresStore } from '../../../pkg/adapters/postgres.mjs';

const PG_URL = process.env.FENCEGATE_PG_URL;
const skip = !PG_URL && (process.env.FENCEGATE_REQUIRE_SERVICES ? false : 'FENCEGATE_PG_URL is not set');
let pool;
before(async () => {
  if (!skip) pool = new pg.Pool({ connectionString: PG_URL, max: 3 });
});
after(async () => {
  if (pool) {
    await removeGuard(pool, { table: 'gv_orders', fenceTable: 'gv_fence', fence: true }).catch(() => {});
    await pool.query('DROP TABLE IF EXISTS gv_orders; DROP TABLE IF EXISTS gv_fence');
    await pool.end();
  }
});

const guard = { table: 'gv_orders', key: "'orders/' || id", fenceTable: 'gv_fence' };
const fences = async () => (await pool.query('SELECT key, state, version::text AS version FROM gv_fence ORDER BY key')).rows;
const rows = async () => (await pool.query('SELECT id, status FROM gv_orders ORDER BY id')).rows;
const refused = async (sql) => {
  try {
    await pool.query(sql);
    return 'applied';
  } catch (e) {
    return { code: e.code, message: e.message };
  }
};

async function reset(client = pool) {
  await removeGuard(pool, { table: 'gv_orders', fenceTable: 'gv_fence', fence: true }).catch(() => {});
  await pool.query("DROP TABLE IF EXISTS gv_orders; DROP TABLE IF EXISTS gv_fence; CREATE TABLE gv_orders (id int PRIMARY KEY, status text NOT NULL); INSERT INTO gv_orders VALUES (1, 'new')");
  const gate = new Gate(await new PostgresStore(pool, { table: 'gv_fence' }).init(), { stateCache: 0 });
  await gate.transaction('orders/1', 5, () => null);
  await installGuard(client, guard);
  return gate;
}

test('PostgreSQL guard: a fence row version goes up by exactly 1 and a new one starts at 1 (FG002, nothing changed); fenced writes still applied', { skip }, async () => {
  const gate = await reset();
  const before = await fences();
  assert.deepEqual(before, [{ key: 'orders/1', state: '{"v":1,"mark":"5"}', version: '1' }]);
  assert.deepEqual(await refused("UPDATE gv_fence SET version = 9223372036854775807 WHERE key = 'orders/1'"), { code: 'FG002', message: 'fencegate guard: fence row orders/1: version 9223372036854775807 after 1 refused: the version goes up by exactly 1' });
  assert.deepEqual(await refused("UPDATE gv_fence SET version = version + 2 WHERE key = 'orders/1'"), { code: 'FG002', message: 'fencegate guard: fence row orders/1: version 3 after 1 refused: the version goes up by exactly 1' });
  assert.deepEqual(await refused(`UPDATE gv_fence SET state = '{"v":1,"mark":"6"}', version = version + 5 WHERE key = 'orders/1'`), { code: 'FG002', message: 'fencegate guard: fence row orders/1: version 6 after 1 refused: the version goes up by exactly 1' });
  assert.deepEqual(await refused(`INSERT INTO gv_fence (key, state, value, version) VALUES ('orders/2', '{"v":1,"mark":"1"}', NULL, 9223372036854775807)`), { code: 'FG002', message: 'fencegate guard: fence row orders/2: version 9223372036854775807 refused: a new fence row starts at version 1' });
  assert.deepEqual(await fences(), before);
  assert.equal(await refused("UPDATE gv_fence SET version = version + 1 WHERE key = 'orders/1'"), 'applied');
  const v = await gate.transaction('orders/1', 6, (tx) => tx.query("UPDATE gv_orders SET status = 'six' WHERE id = 1").then((r) => r.rowCount));
  assert.deepEqual(v, { key: 'orders/1', ok: true, outcome: 'advance', code: null, token: 6, markBefore: 5, markAfter: 6, result: 1 });
  // a new key: fencegate inserts version 1
  assert.equal((await gate.transaction('orders/2', 1, (tx) => tx.query("INSERT INTO gv_orders VALUES (2, 'two')").then((r) => r.rowCount))).ok, true);
  assert.deepEqual(await fences(), [{ key: 'orders/1', state: '{"v":1,"mark":"6"}', version: '3' }, { key: 'orders/2', state: '{"v":1,"mark":"1"}', version: '1' }]);
  assert.deepEqual(await rows(), [{ id: 1, status: 'six' }, { id: 2, status: 'two' }]);
});

test('PostgreSQL guard: installGuard and removeGuard on a postgres.js sql with its default pool (max 10)', { skip }, async () => {
  const sql = postgres(PG_URL, { onnotice: () => {} });
  try {
    const gate = await reset(sql);
    const triggers = async () => (await pool.query("SELECT tgrelid::regclass::text AS t, tgname FROM pg_trigger WHERE tgrelid IN ('gv_orders'::regclass, 'gv_fence'::regclass) AND NOT tgisinternal ORDER BY 1, 2")).rows;
    const installed = [
      { t: 'gv_fence', tgname: 'fencegate_fence' }, { t: 'gv_fence', tgname: 'fencegate_fence_truncate' },
      { t: 'gv_orders', tgname: 'fencegate_guard' }, { t: 'gv_orders', tgname: 'fencegate_guard_truncate' },
    ];
    assert.deepEqual(await triggers(), installed);
    const again = await installGuard(sql, guard);
    assert.deepEqual([again.engine, again.table, again.fenceTable], ['postgres', 'gv_orders', 'gv_fence']);
    assert.deepEqual(await triggers(), installed);
    assert.deepEqual(await refused("UPDATE gv_orders SET status = 'rogue' WHERE id = 1"), { code: 'FG001', message: 'fencegate guard: UPDATE on gv_orders refused: this transaction did not pass the fence for key orders/1 (its fence row was not written by this transaction)' });
    assert.equal((await gate.transaction('orders/1', 5, (tx) => tx.query("UPDATE gv_orders SET status = 'ok' WHERE id = 1").then((r) => r.rowCount))).ok, true);
    // the idle connections are not left in a transaction
    assert.deepEqual((await pool.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'")).rows, [{ n: 0 }]);
    await removeGuard(sql, { table: 'gv_orders', fenceTable: 'gv_fence', fence: true });
    assert.deepEqual(await triggers(), []);
    assert.deepEqual(await rows(), [{ id: 1, status: 'ok' }]);
  } finally {
    await sql.end();
  }
});
