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
