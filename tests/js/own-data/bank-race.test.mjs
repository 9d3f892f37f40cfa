// The bank-transfer race (issue 28): 4 OS processes move money between the rows of a real
// `accounts` table with gate.transaction on one fence key, two with epoch 10 and two, a bit
// later, with epoch 20 (so the first two go on after a newer epoch was established). After:
//   - the sum of the balances is unchanged;
//   - no transfer with a stale token committed after the newer epoch's first one (transfers
//     are serialised by the fence row, so their ids are in commit order: every token-10 row
//     has a smaller id than every token-20 row);
//   - every acknowledged transfer (ok verdict) is in `transfers` exactly once, every refused
//     or failed one is absent, and the refusals are STALE_TOKEN.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';
import { PG_URL, MYSQL_URL, openSqlite, pgPool, mysqlPool } from '../stores/targets.mjs';

const WORKER = new URL('./bank-worker.mjs', import.meta.url);
const ACCOUNTS = 6;
const OPS = 40;
const START = 1000;

function spawn(config) {
  const child = fork(WORKER, [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`worker exited with ${code} before it was ready`)));
  });
  const done = new Promise((resolve, reject) => {
    child.on('message', (m) => m.outcomes && resolve(m.outcomes));
    child.once('exit', (code) => code !== 0 && reject(new Error(`worker exited with ${code}`)));
  });
  child.send(config);
  return { child, ready, done };
}

async function race(engine, config, query) {
  const plan = [
    // the epoch-10 processes pace their transfers (10 ms apart), so they are still going when epoch 20 starts
    { token: 10, delayMs: 0, paceMs: 10 },
    { token: 10, delayMs: 0, paceMs: 10 },
    { token: 20, delayMs: 250, paceMs: 0 },
    { token: 20, delayMs: 350, paceMs: 0 },
  ];
  const workers = plan.map((p, w) => spawn({ ...config, engine, worker: w, ops: OPS, accounts: ACCOUNTS, seed: 7 + w * 101, ...p }));
  await Promise.all(workers.map((w) => w.ready));
  for (const w of workers) w.child.send('go');
  const outcomes = await Promise.all(workers.map((w) => w.done));
  const rows = await query('SELECT id, worker, op, token FROM transfers ORDER BY id');
  const sum = Number((await query('SELECT SUM(balance) AS s FROM accounts'))[0].s);
  assert.equal(sum, ACCOUNTS * START, 'the sum of the balances is unchanged');
  const seen = new Map();
  for (const r of rows) {
    const k = `${r.worker}/${r.op}`;
    assert.ok(!seen.has(k), `transfer ${k} is in the table twice`);
    seen.set(k, r);
  }
  let acked = 0;
  let refused = 0;
  for (const [w, list] of outcomes.entries()) {
    for (const o of list) {
      const row = seen.get(`${w}/${o.i}`);
      if (o.ok) {
        acked++;
        assert.ok(row, `acknowledged transfer ${w}/${o.i} is missing`);
        assert.equal(Number(row.token), plan[w].token);
      } else {
        assert.equal(row, undefined, `refused transfer ${w}/${o.i} (${o.code ?? o.error}) is in the table`);
        if (o.error === undefined) {
          refused++;
          assert.deepEqual([o.outcome, o.code], ['reject', 'STALE_TOKEN']);
          assert.equal(plan[w].token, 10);
        }
      }
    }
  }
  assert.equal(rows.length, acked, 'every row is an acknowledged transfer');
  const stale = rows.filter((r) => Number(r.token) === 10).map((r) => Number(r.id));
  const fresh = rows.filter((r) => Number(r.token) === 20).map((r) => Number(r.id));
  assert.ok(fresh.length > 0 && stale.length > 0, `both epochs applied: ${stale.length} at 10, ${fresh.length} at 20`);
  assert.ok(Math.max(...stale) < Math.min(...fresh), 'no epoch-10 transfer committed after the first epoch-20 one');
  assert.ok(refused > 0, 'the epoch-10 processes went on after epoch 20 and were refused');
  return { acked, refused, stale: stale.length, fresh: fresh.length };
}

test('bank transfers, SQLite (better-sqlite3, 4 processes, one file)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'fg-bank-'));
  const file = join(dir, 'bank.db');
  try {
    const db = openSqlite(file);
    db.exec('CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL); CREATE TABLE transfers (id INTEGER PRIMARY KEY AUTOINCREMENT, worker INTEGER, op INTEGER, token INTEGER, src INTEGER, dst INTEGER, amount INTEGER)');
    for (let i = 1; i <= ACCOUNTS; i++) db.prepare('INSERT INTO accounts VALUES (?, ?)').run(i, START);
    new SqliteStore(db, { table: 'fence' });
    const stats = await race('sqlite', { file, table: 'fence' }, async (text) => db.prepare(text).all());
    t.diagnostic(JSON.stringify(stats));
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

for (const [engine, url, connect, ddl] of [
  ['postgres', PG_URL, pgPool, ['CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL)', 'CREATE TABLE transfers (id bigserial PRIMARY KEY, worker int, op int, token bigint, src int, dst int, amount int)']],
  ['mysql', MYSQL_URL, mysqlPool, ['CREATE TABLE accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL) ENGINE=InnoDB', 'CREATE TABLE transfers (id BIGINT AUTO_INCREMENT PRIMARY KEY, worker INT, op INT, token BIGINT, src INT, dst INT, amount INT) ENGINE=InnoDB']],
]) {
  test(`bank transfers, ${engine} (4 processes)`, { skip: !url && `no ${engine} URL` }, async (t) => {
    const pool = await connect();
    const q = async (text, params = []) => {
      const r = await pool.query(text, params);
      return Array.isArray(r) ? r[0] : r.rows;
    };
    try {
      for (const x of ['accounts', 'transfers', 'fence_bank']) await q(`DROP TABLE IF EXISTS ${x}`);
      for (const x of ddl) await q(x);
      for (let i = 1; i <= ACCOUNTS; i++) await q(`INSERT INTO accounts VALUES (${i}, ${START})`);
      const Store = engine === 'mysql' ? (await import('../../../pkg/adapters/mysql.mjs')).MysqlStore : (await import('../../../pkg/adapters/postgres.mjs')).PostgresStore;
      await new Store(pool, { table: 'fence_bank' }).init();
      const stats = await race(engine, { table: 'fence_bank' }, q);
      t.diagnostic(JSON.stringify(stats));
    } finally {
      for (const x of ['accounts', 'transfers', 'fence_bank']) await q(`DROP TABLE IF EXISTS ${x}`);
      await pool.end();
    }
  });
}
