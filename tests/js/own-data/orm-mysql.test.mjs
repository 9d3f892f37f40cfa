// The ORMs on a real MySQL/MariaDB (docs/stores.md "ORMs"), each with its real npm package and its
// own transaction API: Drizzle's mysql2 driver `db.transaction(async (tx) => …)`, Kysely's
// MysqlDialect `db.transaction().execute(async (trx) => …)`, Knex's mysql2 client
// `knex.transaction(async (trx) => …)`. `await gate.fenceIn(tx, key, token)` reads the fence row on
// the ORM's transaction with a row lock and writes it there; a refusal throws the FencegateError
// with the verdict's code, so the ORM rolls the caller's UPDATE back. Exact rows after each case.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import { createPool } from 'mysql2';
import { drizzle } from 'drizzle-orm/mysql2';
import { mysqlTable, int, varchar } from 'drizzle-orm/mysql-core';
import { eq, sql as dsql } from 'drizzle-orm';
import { Kysely, MysqlDialect, sql as ksql } from 'kysely';
import knexFactory from 'knex';
import { Gate, FencegateError } from '../../../pkg/node.mjs';
import { MysqlStore } from '../../../pkg/adapters/mysql.mjs';

const url = process.env.FENCEGATE_MYSQL_URL;
const skip = !url && process.env.FENCEGATE_REQUIRE_SERVICES !== '1' && 'FENCEGATE_MYSQL_URL is not set';

let pool;
before(async () => {
  if (skip) return;
  assert.ok(url, 'FENCEGATE_MYSQL_URL is required (FENCEGATE_REQUIRE_SERVICES=1)');
  pool = mysql.createPool({ uri: url, connectionLimit: 6 });
});
after(async () => {
  if (pool) await pool.end();
});

async function setUp() {
  await pool.query('DROP TABLE IF EXISTS orders, fencegate');
  await pool.query('CREATE TABLE orders (id INT PRIMARY KEY, status VARCHAR(64) NOT NULL) ENGINE=InnoDB');
  await pool.query("INSERT INTO orders VALUES (42, 'new'), (43, 'new')");
  const store = await new MysqlStore(pool).init();
  return { gate: new Gate(store, { stateCache: 0 }) };
}

const rows = async () => (await pool.query('SELECT id, status FROM orders ORDER BY id'))[0].map((r) => ({ ...r }));
const fenceRow = async (key) => {
  const [r] = await pool.query('SELECT value, CAST(version AS SIGNED) AS version FROM fencegate WHERE k = ?', [key]);
  return r.length === 0 ? null : { value: r[0].value, version: Number(r[0].version) };
};

const advance = (token, markBefore) => ({ key: 'orders/42', ok: true, outcome: 'advance', code: null, token, markBefore, markAfter: token });
const stale = (token, mark) => ({ key: 'orders/42', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token, markBefore: mark, markAfter: mark });
const invalid = (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT';

function refused(code, verdict) {
  return (e) => {
    assert.ok(e instanceof FencegateError, `not a FencegateError: ${e}`);
    assert.equal(e.code, code);
    assert.deepEqual(e.verdict, verdict);
    return true;
  };
}

/** The same script as on PostgreSQL (orm-postgres.test.mjs), for one ORM. */
async function script(gate, { setStatus, updateThenFence, appendPlus }) {
  assert.deepEqual(await setStatus(5, 'paid'), advance(5, 0));
  assert.deepEqual(await setStatus(6, 'shipped'), advance(6, 5));
  assert.deepEqual(await rows(), [{ id: 42, status: 'shipped' }, { id: 43, status: 'new' }]);
  await assert.rejects(setStatus(5, 'refunded'), refused('STALE_TOKEN', stale(5, 6)));
  await assert.rejects(updateThenFence(5, 'refunded'), refused('STALE_TOKEN', stale(5, 6)));
  assert.deepEqual(await rows(), [{ id: 42, status: 'shipped' }, { id: 43, status: 'new' }]);
  await appendPlus(6, 'ship-1');
  await assert.rejects(appendPlus(6, 'ship-1'), (e) => {
    assert.ok(e instanceof FencegateError);
    assert.equal(e.code, 'DUPLICATE_OPERATION');
    assert.deepEqual(e.verdict, { key: 'orders/42', ok: true, outcome: 'duplicate', code: null, original: 'accept', token: 6, markBefore: 6, markAfter: 6 });
    return true;
  });
  assert.deepEqual(await rows(), [{ id: 42, status: 'shipped+' }, { id: 43, status: 'new' }]);
  // the fence applies (7) but the caller's UPDATE fails (status NOT NULL): the fence row rolls back with it
  await assert.rejects(setStatus(7, null), (e) => !(e instanceof FencegateError));
  assert.equal(await gate.mark('orders/42'), 6);
  assert.deepEqual(await fenceRow('orders/42'), { value: null, version: 3 });
}

test('Drizzle (mysql2 driver, pool): await gate.fenceIn(tx) in db.transaction', { skip }, async () => {
  const { gate } = await setUp();
  const orders = mysqlTable('orders', { id: int('id').primaryKey(), status: varchar('status', { length: 64 }).notNull() });
  const db = drizzle({ client: pool });
  await script(gate, {
    setStatus: (token, status) => db.transaction(async (tx) => {
      const v = await gate.fenceIn(tx, 'orders/42', token);
      await tx.update(orders).set({ status }).where(eq(orders.id, 42));
      return v;
    }),
    updateThenFence: (token, status) => db.transaction(async (tx) => {
      await tx.update(orders).set({ status }).where(eq(orders.id, 42));
      await gate.fenceIn(tx, 'orders/42', token);
    }),
    appendPlus: (token, opId) => db.transaction(async (tx) => {
      await gate.fenceIn(tx, 'orders/42', token, { opId });
      await tx.update(orders).set({ status: dsql`CONCAT(${orders.status}, '+')` }).where(eq(orders.id, 42));
    }),
  });
  await assert.rejects(gate.fenceIn(db, 'orders/43', 1), invalid);
  assert.equal(await fenceRow('orders/43'), null);
});

test('Kysely (MysqlDialect, mysql2 pool): await gate.fenceIn(trx) in db.transaction().execute', { skip }, async () => {
  const { gate } = await setUp();
  const db = new Kysely({ dialect: new MysqlDialect({ pool: createPool({ uri: url, connectionLimit: 2 }) }) });
  try {
    await script(gate, {
      setStatus: (token, status) => db.transaction().execute(async (trx) => {
        const v = await gate.fenceIn(trx, 'orders/42', token);
        await trx.updateTable('orders').set({ status }).where('id', '=', 42).execute();
        return v;
      }),
      updateThenFence: (token, status) => db.transaction().execute(async (trx) => {
        await trx.updateTable('orders').set({ status }).where('id', '=', 42).execute();
        await gate.fenceIn(trx, 'orders/42', token);
      }),
      appendPlus: (token, opId) => db.transaction().execute(async (trx) => {
        await gate.fenceIn(trx, 'orders/42', token, { opId });
        await trx.updateTable('orders').set({ status: ksql`CONCAT(status, '+')` }).where('id', '=', 42).execute();
      }),
    });
    await assert.rejects(gate.fenceIn(db, 'orders/43', 1), invalid);
    assert.equal(await fenceRow('orders/43'), null);
  } finally {
    await db.destroy();
  }
});

test('Knex (mysql2 client): await gate.fenceIn(trx) in knex.transaction', { skip }, async () => {
  const { gate } = await setUp();
  const knex = knexFactory({ client: 'mysql2', connection: url, pool: { min: 0, max: 2 } });
  try {
    await script(gate, {
      setStatus: (token, status) => knex.transaction(async (trx) => {
        const v = await gate.fenceIn(trx, 'orders/42', token);
        await trx('orders').where({ id: 42 }).update({ status });
        return v;
      }),
      updateThenFence: (token, status) => knex.transaction(async (trx) => {
        await trx('orders').where({ id: 42 }).update({ status });
        await gate.fenceIn(trx, 'orders/42', token);
      }),
      appendPlus: (token, opId) => knex.transaction(async (trx) => {
        await gate.fenceIn(trx, 'orders/42', token, { opId });
        await trx('orders').where({ id: 42 }).update({ status: knex.raw("CONCAT(status, '+')") });
      }),
    });
    await assert.rejects(gate.fenceIn(knex, 'orders/43', 1), invalid);
    assert.equal(await fenceRow('orders/43'), null);
  } finally {
    await knex.destroy();
  }
});
