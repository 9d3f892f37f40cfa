// A MySQL body that catches a deadlock (1213): InnoDB has already rolled the whole
// transaction back, the fence write with it, so a COMMIT would commit nothing. The store
// sees the error through the connection the body got and runs the transaction again
// (conflict), instead of reporting it applied. A real deadlock between two fenced bodies.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Gate } from '../../../pkg/node.mjs';
import { MysqlStore } from '../../../pkg/adapters/mysql.mjs';
import { MYSQL_URL, mysqlPool } from '../stores/targets.mjs';

const skip = !MYSQL_URL && 'FENCEGATE_MYSQL_URL is not set (scripts/with-services.sh)';
let pool;
before(async () => {
  if (skip) return;
  pool = await mysqlPool();
  await pool.query('DROP TABLE IF EXISTS dl_rows');
  await pool.query('DROP TABLE IF EXISTS fg_dl');
  await pool.query('CREATE TABLE dl_rows (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB');
  await pool.query('INSERT INTO dl_rows VALUES (1, 0), (2, 0)');
});
after(async () => {
  if (!pool) return;
  await pool.query('DROP TABLE IF EXISTS dl_rows');
  await pool.query('DROP TABLE IF EXISTS fg_dl');
  await pool.end();
});

test('MySQL: a body that swallows a deadlock is run again, never reported applied with nothing written', { skip }, async () => {
  const gate = new Gate(await new MysqlStore(pool, { table: 'fg_dl' }).init(), { stateCache: 0 });
  // the fence rows first: a first writer's locked read of a missing key takes a gap lock (REPEATABLE
  // READ) that would hold the other key's INSERT behind this test's barrier
  for (const key of ['dl/a', 'dl/b']) assert.equal((await gate.transaction(key, 5, () => null)).outcome, 'advance');
  let arrived = 0;
  let release;
  const both = new Promise((r) => {
    release = r;
  });
  const swallowed = [];
  const runs = { a: 0, b: 0 };
  // a: row 1 then row 2; b: row 2 then row 1 — on the first run both wait for each other
  const body = (name, first, second) => async (c) => {
    runs[name]++;
    await c.execute('UPDATE dl_rows SET n = n + 1 WHERE id = ?', [first]);
    if (runs[name] === 1) {
      arrived++;
      if (arrived === 2) release();
      await both;
    }
    try {
      await c.execute('UPDATE dl_rows SET n = n + 1 WHERE id = ?', [second]);
    } catch (e) {
      swallowed.push(e.errno); // the mistake: the error is caught and the body returns normally
    }
    return runs[name];
  };
  const [a, b] = await Promise.all([gate.transaction('dl/a', 5, body('a', 1, 2)), gate.transaction('dl/b', 5, body('b', 2, 1))]);
  assert.deepEqual(swallowed, [1213]);
  assert.deepEqual([a.ok, a.outcome, b.ok, b.outcome], [true, 'accept', true, 'accept']);
  // the deadlock's victim ran twice (its first run rolled back), the other once
  assert.deepEqual([a.result, b.result].sort(), [1, 2]);
  assert.deepEqual(runs.a + runs.b, 3);
  const [rows] = await pool.query('SELECT id, n FROM dl_rows ORDER BY id');
  assert.deepEqual(rows.map((r) => [r.id, r.n]), [[1, 2], [2, 2]]);
  const [fences] = await pool.query('SELECT k, state, version FROM fg_dl ORDER BY k');
  assert.deepEqual(fences.map((r) => [String(r.k), r.state, Number(r.version)]), [['dl/a', '{"v":1,"mark":"5"}', 2], ['dl/b', '{"v":1,"mark":"5"}', 2]]);
});
