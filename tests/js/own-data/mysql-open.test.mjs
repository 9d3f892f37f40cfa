// MysqlStore's procedures (docs/stores.md "Your own data", MySQL): init() creates
// fencegate_open_<table>, and a cached key's gate.transaction runs START TRANSACTION and
// the fence row's conditional UPDATE in one CALL; and fencegate_lock_<table>, with which
// a key that is not cached runs START TRANSACTION and the fence row's read FOR UPDATE in
// one CALL. Without them (no CREATE ROUTINE privilege, or dropped after init) the same
// transactions run as separate statements, with the same verdicts, rows and fence rows.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Gate } from '../../../pkg/node.mjs';
import { MysqlStore } from '../../../pkg/adapters/mysql.mjs';
import { MYSQL_URL, mysqlPool } from '../stores/targets.mjs';

const skip = !MYSQL_URL && 'FENCEGATE_MYSQL_URL is not set (scripts/with-services.sh)';
let pool;
const q = async (text, params = []) => (await pool.query(text, params))[0];

before(async () => {
  if (skip) return;
  pool = await mysqlPool();
});
after(async () => {
  if (pool) await pool.end();
});

/** A pool whose connections log every statement they are sent (text), for counting round trips. */
async function loggingPool(uri) {
  const mysql = await import('mysql2/promise');
  const log = [];
  const p = mysql.createPool({ uri, connectionLimit: 2 });
  const wrap = (c) => {
    for (const verb of ['query', 'execute']) {
      const f = c[verb].bind(c);
      c[verb] = (text, ...rest) => {
        log.push(typeof text === 'string' ? text.split('(')[0].trim() : text.sql);
        return f(text, ...rest);
      };
    }
    return c;
  };
  const getConnection = p.getConnection.bind(p);
  p.getConnection = async () => wrap(await getConnection());
  return { pool: p, log };
}

async function scenario(store, log) {
  await q('DROP TABLE IF EXISTS own_open_orders');
  await q("CREATE TABLE own_open_orders (id INT PRIMARY KEY, status VARCHAR(40) NOT NULL) ENGINE=InnoDB");
  await q("INSERT INTO own_open_orders VALUES (1, 'new')");
  const gate = new Gate(store, { stateCache: 64 });
  const set = (s) => (c) => c.execute('UPDATE own_open_orders SET status = ? WHERE id = 1', [s]).then(([r]) => r.affectedRows);
  const out = [];
  for (const [token, s] of [[5, 'a'], [5, 'b'], [6, 'c'], [4, 'stale']]) {
    log.length = 0;
    const v = await gate.transaction('orders/1', token, set(s));
    out.push({ outcome: v.ok ? v.outcome : v.code, result: v.result, statements: [...log] });
  }
  const boom = await gate.transaction('orders/1', 6, async (c) => {
    await set('lost')(c);
    throw new Error('boom');
  }).catch((e) => e.code);
  out.push({ boom });
  out.push({ row: (await q('SELECT status FROM own_open_orders'))[0].status });
  return out;
}

const UPDATE = 'UPDATE own_open_orders SET status = ? WHERE id = 1';

test('MySQL open procedure: init creates it; a cached transaction is CALL + the caller\'s statement + COMMIT', { skip }, async () => {
  await q('DROP TABLE IF EXISTS fg_open_t');
  await q('DROP PROCEDURE IF EXISTS fencegate_open_fg_open_t');
  await q('DROP PROCEDURE IF EXISTS fencegate_lock_fg_open_t');
  const { pool: p, log } = await loggingPool(MYSQL_URL);
  try {
    const store = await new MysqlStore(p, { table: 'fg_open_t' }).init();
    const procs = await q("SELECT ROUTINE_NAME AS name FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME LIKE 'fencegate\\_%\\_fg\\_open\\_t' ORDER BY ROUTINE_NAME");
    assert.deepEqual(procs.map((r) => r.name), ['fencegate_lock_fg_open_t', 'fencegate_open_fg_open_t']);
    // init twice: the procedure is kept (ER_SP_ALREADY_EXISTS is not a failure)
    await new MysqlStore(p, { table: 'fg_open_t' }).init();
    const out = await scenario(store, log);
    assert.deepEqual(out.slice(0, 4), [
      // the first write of the key: no cached state (read under lock in the lock procedure, then the fence row inserted)
      { outcome: 'advance', result: 1, statements: ['CALL `fencegate_lock_fg_open_t`', 'INSERT INTO `fg_open_t`', UPDATE, 'COMMIT'] },
      { outcome: 'accept', result: 1, statements: ['CALL `fencegate_open_fg_open_t`', UPDATE, 'COMMIT'] },
      // a new epoch from the cache: the procedure too
      { outcome: 'advance', result: 1, statements: ['CALL `fencegate_open_fg_open_t`', UPDATE, 'COMMIT'] },
      // refused on the remembered state: read again under lock, rolled back, the statements never run
      { outcome: 'STALE_TOKEN', result: undefined, statements: ['CALL `fencegate_lock_fg_open_t`', 'ROLLBACK'] },
    ]);
    assert.deepEqual(out.slice(4), [{ boom: 'CALLBACK_FAILED' }, { row: 'c' }]);
    assert.deepEqual({ ...(await q("SELECT state, version FROM fg_open_t WHERE k = 'orders/1'"))[0] }, { state: '{"v":1,"mark":"6"}', version: 3 });
  } finally {
    await p.end();
    await q('DROP TABLE IF EXISTS fg_open_t');
    await q('DROP PROCEDURE IF EXISTS fencegate_open_fg_open_t');
    await q('DROP PROCEDURE IF EXISTS fencegate_lock_fg_open_t');
  }
});

test('MySQL open procedure: dropped after init, or never created (no CREATE ROUTINE privilege): two statements, the same verdicts and rows', { skip }, async () => {
  // dropped after init
  const { pool: p, log } = await loggingPool(MYSQL_URL);
  try {
    const store = await new MysqlStore(p, { table: 'fg_open_d' }).init();
    await q('DROP PROCEDURE fencegate_open_fg_open_d');
    await q('DROP PROCEDURE fencegate_lock_fg_open_d');
    const out = await scenario(store, log);
    assert.deepEqual(out.map((o) => o.outcome ?? o.boom ?? o.row), ['advance', 'accept', 'advance', 'STALE_TOKEN', 'CALLBACK_FAILED', 'c']);
    // the first write met the missing lock procedure (nothing ran) and went on with two statements
    assert.deepEqual(out[0].statements, ['CALL `fencegate_lock_fg_open_d`', 'START TRANSACTION', 'SELECT state, CAST', 'INSERT INTO `fg_open_d`', UPDATE, 'COMMIT']);
    assert.deepEqual(out[3].statements, ['START TRANSACTION', 'SELECT state, CAST', 'ROLLBACK']);
    // the first cached call met the missing procedure (nothing ran) and went on with two statements
    assert.deepEqual(out[1].statements, ['CALL `fencegate_open_fg_open_d`', 'START TRANSACTION', 'UPDATE `fg_open_d` SET state = ?, version = version + 1 WHERE k = ? AND version = CAST', UPDATE, 'COMMIT']);
    assert.deepEqual(out[2].statements, ['START TRANSACTION', 'UPDATE `fg_open_d` SET state = ?, version = version + 1 WHERE k = ? AND version = CAST', UPDATE, 'COMMIT']);
  } finally {
    await p.end();
    await q('DROP TABLE IF EXISTS fg_open_d');
  }
  // a user without CREATE ROUTINE (scripts/services.sh creates fencegate_noroutine, same password)
  const url = new URL(MYSQL_URL);
  url.username = 'fencegate_noroutine';
  const limited = await loggingPool(url.toString());
  try {
    const store = await new MysqlStore(limited.pool, { table: 'fg_open_n' }).init();
    const [none] = await q("SELECT COUNT(*) AS n FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME IN ('fencegate_open_fg_open_n', 'fencegate_lock_fg_open_n')");
    assert.equal(Number(none.n), 0);
    const out = await scenario(store, limited.log);
    assert.deepEqual(out.map((o) => o.outcome ?? o.boom ?? o.row), ['advance', 'accept', 'advance', 'STALE_TOKEN', 'CALLBACK_FAILED', 'c']);
    assert.deepEqual(out[0].statements, ['START TRANSACTION', 'SELECT state, CAST', 'INSERT INTO `fg_open_n`', UPDATE, 'COMMIT']);
    assert.deepEqual(out[1].statements, ['START TRANSACTION', 'UPDATE `fg_open_n` SET state = ?, version = version + 1 WHERE k = ? AND version = CAST', UPDATE, 'COMMIT']);
  } finally {
    await limited.pool.end();
    await q('DROP TABLE IF EXISTS fg_open_n');
  }
});

test('MySQL guard mode (guard: true): a transaction is CALL open or CALL lock (the nonce set in it) + the caller\'s statement + CALL commit (the nonce cleared in it); the nonce is NULL after', { skip }, async () => {
  await q('DROP TABLE IF EXISTS fg_open_g');
  const { pool: p, log } = await loggingPool(MYSQL_URL);
  try {
    const store = await new MysqlStore(p, { table: 'fg_open_g', guard: true }).init();
    const out = await scenario(store, log);
    assert.deepEqual(out.slice(0, 4).map((o) => [o.outcome, o.statements]), [
      ['advance', ['CALL `fencegate_lock_fg_open_g`', 'INSERT INTO `fg_open_g`', UPDATE, 'CALL `fencegate_commit_guarded`']],
      ['accept', ['CALL `fencegate_open_fg_open_g`', UPDATE, 'CALL `fencegate_commit_guarded`']],
      ['advance', ['CALL `fencegate_open_fg_open_g`', UPDATE, 'CALL `fencegate_commit_guarded`']],
      ['STALE_TOKEN', ['CALL `fencegate_lock_fg_open_g`', 'ROLLBACK', 'SET @fencegate_xact = NULL']],
    ]);
    assert.deepEqual(out.slice(4), [{ boom: 'CALLBACK_FAILED' }, { row: 'c' }]);
    // every connection of the pool: no nonce left
    const conns = await Promise.all([p.getConnection(), p.getConnection()]);
    for (const c of conns) {
      assert.equal((await c.query('SELECT @fencegate_xact AS x'))[0][0].x, null);
      c.release();
    }
  } finally {
    await p.end();
    await q('DROP TABLE IF EXISTS fg_open_g');
    await q('DROP PROCEDURE IF EXISTS fencegate_open_fg_open_g');
    await q('DROP PROCEDURE IF EXISTS fencegate_lock_fg_open_g');
  }
});
