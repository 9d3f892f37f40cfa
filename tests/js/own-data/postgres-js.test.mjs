// The caller's own data on PostgreSQL through postgres.js (`sql`, `sql.begin`):
// Gate.transaction and fenceIn inside the caller's sql.begin (cases in sql-cases.mjs).
import { ownDataCases } from './sql-cases.mjs';
import { postgresJsEngine } from './sql-engines.mjs';

ownDataCases(postgresJsEngine);

// The statements of gate.transaction get sql.begin's own transaction `sql`: its savepoint
// works inside the fenced transaction (and from the state cache).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Gate } from '../../../pkg/node.mjs';
import { tableName } from './sql-engines.mjs';

const engine = postgresJsEngine;
let sql;
let orders;
let fence;
before(async () => {
  if (engine.skip) return;
  sql = await engine.connect();
  orders = tableName('orders_sp');
  fence = tableName('fence_sp');
  await sql.unsafe(`CREATE TABLE ${orders} (id INTEGER PRIMARY KEY, status TEXT NOT NULL)`);
});
after(async () => {
  if (engine.skip) return;
  await sql.unsafe(`DROP TABLE IF EXISTS ${orders}`);
  await sql.unsafe(`DROP TABLE IF EXISTS ${fence}`);
  await sql.end();
});

test('postgres.js transaction: tx.savepoint commits its statements with the transaction, and a failed savepoint rolls back only its own', { skip: engine.skip }, async () => {
  const store = await new engine.Store(sql, { table: fence }).init();
  const gate = new Gate(store, { stateCache: 64 });
  await sql.unsafe(`INSERT INTO ${orders} VALUES (1, 'new'), (2, 'new'), (3, 'new')`);
  const statuses = async () => [...(await sql.unsafe(`SELECT id, status FROM ${orders} ORDER BY id`))].map((r) => `${r.id}:${r.status}`);
  for (const round of [1, 2]) {
    // round 2 runs from the state cache
    const v = await gate.transaction('orders/sp', 5, async (tx) => {
      await tx.unsafe(`UPDATE ${orders} SET status = $1 WHERE id = 1`, [`outer${round}`]);
      const inner = await tx.savepoint('inner', (s) => s.unsafe(`UPDATE ${orders} SET status = $1 WHERE id = 2`, [`saved${round}`]));
      const failed = await tx
        .savepoint(async (s) => {
          await s.unsafe(`UPDATE ${orders} SET status = $1 WHERE id = 3`, [`lost${round}`]);
          throw new Error('inner failure');
        })
        .catch((e) => e.message);
      return [inner.count, failed];
    });
    assert.equal(v.ok, true);
    assert.equal(v.outcome, round === 1 ? 'advance' : 'accept');
    assert.deepEqual(v.result, [1, 'inner failure']);
    assert.deepEqual(await statuses(), [`1:outer${round}`, `2:saved${round}`, '3:new']);
  }
  const [row] = await sql.unsafe(`SELECT state, version::text AS version FROM ${fence} WHERE key = 'orders/sp'`);
  assert.deepEqual({ ...row }, { state: '{"v":1,"mark":"5"}', version: '2' });
  // a stale token: refused before the statements, nothing of theirs written
  let ran = false;
  const stale = await gate.transaction('orders/sp', 4, () => {
    ran = true;
  });
  assert.equal(stale.code, 'STALE_TOKEN');
  assert.equal(ran, false);
  assert.deepEqual(await statuses(), ['1:outer2', '2:saved2', '3:new']);
});
