// The caller's own data on PostgreSQL through pg (a Pool): Gate.transaction and
// fenceIn inside the caller's BEGIN … COMMIT (cases in sql-cases.mjs), plus what
// only pg has: a single Client as the store's client, a PoolClient's protocol status.
import { ownDataCases } from './sql-cases.mjs';
import { pgEngine } from './sql-engines.mjs';

ownDataCases(pgEngine);

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Gate } from '../../../pkg/node.mjs';
import { PostgresStore } from '../../../pkg/adapters/postgres.mjs';
import { uniqueKey } from '../stores/keys.mjs';

test('trial: a body that ends the transaction itself (ROLLBACK or COMMIT on the handle) is never reported as applied', { skip: pgEngine.skip }, async () => {
  const pool = await pgEngine.connect();
  try {
    const table = `trial_${process.pid}`;
    await pool.query(`CREATE TABLE IF NOT EXISTS ${table} (id int PRIMARY KEY, status text)`);
    await pool.query(`INSERT INTO ${table} VALUES (1, 'start') ON CONFLICT (id) DO UPDATE SET status = 'start'`);
    const store = await new PostgresStore(pool).init();
    const gate = new Gate(store, { stateCache: 0 });
    const key = uniqueKey('trial');
    assert.equal((await gate.transaction(key, 7, (tx) => tx.query(`UPDATE ${table} SET status = 'seven' WHERE id = 1`))).outcome, 'advance');
    for (const end of ['ROLLBACK', 'COMMIT']) {
      const e = await gate.transaction(key, 8, async (tx) => {
        await tx.query(end);
      }).catch((x) => x);
      assert.equal(e.code, 'INVALID_ARGUMENT', end);
      assert.match(e.message, /ended the transaction itself/);
    }
    // the ROLLBACK case undid the fence write; the COMMIT case committed it (reported as not applied, never as ok)
    assert.equal(await gate.mark(key), 8);
    await pool.query(`DROP TABLE ${table}`);
  } finally {
    await pgEngine.end(pool);
  }
});

test('pg: BEGIN and the cached fence step in one simple query — keys and states with quotes, backslashes and non-ASCII go through as literals; isolation levels too', { skip: pgEngine.skip }, async () => {
  const pool = await pgEngine.connect();
  const table = `fg_lit_${process.pid}`;
  try {
    await pool.query(`DROP TABLE IF EXISTS ${table}_orders`);
    await pool.query(`CREATE TABLE ${table}_orders (id int PRIMARY KEY, n int NOT NULL)`);
    await pool.query(`INSERT INTO ${table}_orders VALUES (1, 0)`);
    for (const isolation of [undefined, 'serializable']) {
      const store = await new PostgresStore(pool, { table, ...(isolation ? { isolation } : {}) }).init();
      const gate = new Gate(store, { stateCache: 64 });
      for (const key of ["o'brien\\x/1", 'ключ/"2"', "a''b\\\\'c", 'plain'].map((k) => `${k}/${isolation ?? 'default'}`)) {
        const bump = (c) => c.query(`UPDATE ${table}_orders SET n = n + 1 WHERE id = 1 RETURNING n`).then((r) => r.rows[0].n);
        const opId = `op-${key.length}-${isolation}`;
        const first = await gate.transaction(key, 3, bump, { opId: `${opId}-a`, holder: "h'1" });
        const second = await gate.transaction(key, 3, bump, { opId: `${opId}-b`, holder: "h'1" }); // from the cache: the one simple query
        const again = await gate.transaction(key, 3, bump, { opId: `${opId}-b`, holder: "h'1" }); // a duplicate: the body does not run
        const stale = await gate.transaction(key, 2, bump);
        assert.deepEqual([first.outcome, second.outcome, again.outcome, stale.code], ['advance', 'accept', 'duplicate', 'STALE_TOKEN']);
        assert.equal(second.result, first.result + 1);
        const { rows } = await pool.query(`SELECT key, version::int AS version FROM ${table} WHERE key = $1`, [key]);
        assert.deepEqual(rows, [{ key, version: 2 }]);
      }
    }
    assert.deepEqual((await pool.query(`SELECT n FROM ${table}_orders`)).rows, [{ n: 16 }]);
  } finally {
    await pool.query(`DROP TABLE IF EXISTS ${table}`);
    await pool.query(`DROP TABLE IF EXISTS ${table}_orders`);
    await pgEngine.end(pool);
  }
});
