// Own-data benchmark (docs/stores.md "Your own data"): the same caller transaction — one
// UPDATE of one row — fenced (gate.transaction, a cached key: the fence row's conditional
// UPDATE is the one added statement) and unfenced (BEGIN; UPDATE; COMMIT by hand on the same
// client), on pg, postgres.js, MySQL (mysql2) and SQLite (better-sqlite3). Interleaved rounds
// (BENCH_ROUNDS, default 5), medians; prints fenced/unfenced ratios. Run with real services:
//   bash scripts/with-services.sh node bench/own-data.mjs
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Gate } from '../pkg/node.mjs';
import { SqliteStore } from '../pkg/adapters/sqlite.mjs';
import { PostgresStore } from '../pkg/adapters/postgres.mjs';
import { MysqlStore } from '../pkg/adapters/mysql.mjs';
import { openSqlite, pgPool, postgresJs, mysqlPool, PG_URL, MYSQL_URL } from '../tests/js/stores/targets.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const N = Number(process.env.BENCH_N ?? 1000);
const ONLY = process.env.BENCH_ENGINES ? process.env.BENCH_ENGINES.split(',') : null;
const wanted = (engine) => ONLY === null || ONLY.includes(engine);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function rate(n, fn) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn(i);
  return n / (Number(process.hrtime.bigint() - t0) / 1e9);
}

/** `variants`: name → (i) => Promise; interleaved rounds, the order rotating; median ops/s per variant. */
async function measure(variants, n) {
  const names = Object.keys(variants);
  const rates = Object.fromEntries(names.map((x) => [x, []]));
  for (const name of names) await rate(Math.ceil(n / 10), variants[name]); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    for (let j = 0; j < names.length; j++) {
      const name = names[(j + r) % names.length];
      rates[name].push(await rate(n, variants[name]));
    }
  }
  return Object.fromEntries(names.map((x) => [x, Math.round(median(rates[x]))]));
}

const rows = [];
function report(engine, m) {
  const ratio = +(m.fenced / m.unfenced).toFixed(2);
  rows.push({ engine, unfenced: m.unfenced, fenced: m.fenced, ratio });
  console.log(`${engine.padEnd(12)} unfenced ${String(m.unfenced).padStart(6)}/s  fenced ${String(m.fenced).padStart(6)}/s  ${ratio}x`);
}

// SQLite
if (wanted('sqlite')) {
  const dir = mkdtempSync(join(tmpdir(), 'fg-own-bench-'));
  const db = openSqlite(join(dir, 'b.db'));
  db.exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT NOT NULL); INSERT INTO orders VALUES (1, 'x')");
  const gate = new Gate(new SqliteStore(db));
  const upd = db.prepare('UPDATE orders SET status = ? WHERE id = 1');
  const unfenced = db.transaction((s) => upd.run(s));
  const body = (i) => (tx) => upd.run(`f${i}`);
  report('sqlite', await measure({
    unfenced: async (i) => unfenced.immediate(`u${i}`),
    fenced: (i) => gate.transaction('bench/own', 7, body(i)),
  }, N * 5));
  db.close();
  rmSync(dir, { recursive: true, force: true });
}

if (PG_URL) {
  for (const [engine, connect] of [['pg', pgPool], ['postgres.js', postgresJs]]) {
    if (!wanted(engine)) continue;
    const client = await connect();
    const table = `fg_own_bench_${engine === 'pg' ? 'pg' : 'js'}`;
    const q = (text) => (engine === 'pg' ? client.query(text) : client.unsafe(text));
    await q(`DROP TABLE IF EXISTS orders_bench_${table}`);
    await q(`CREATE TABLE orders_bench_${table} (id int PRIMARY KEY, status text NOT NULL)`);
    await q(`INSERT INTO orders_bench_${table} VALUES (1, 'x')`);
    const gate = new Gate(await new PostgresStore(client, { table }).init());
    const text = `UPDATE orders_bench_${table} SET status = $1 WHERE id = 1`;
    let unfenced;
    let body;
    if (engine === 'pg') {
      const stmt = (s) => ({ name: `own_bench_${table}`, text, values: [s] });
      unfenced = async (i) => {
        const c = await client.connect();
        try {
          await c.query('BEGIN');
          await c.query(stmt(`u${i}`));
          await c.query('COMMIT');
        } finally {
          c.release();
        }
      };
      body = (i) => (c) => c.query(stmt(`f${i}`));
    } else {
      unfenced = (i) => client.begin((tx) => tx`UPDATE ${tx(`orders_bench_${table}`)} SET status = ${`u${i}`} WHERE id = 1`);
      body = (i) => (tx) => tx`UPDATE ${tx(`orders_bench_${table}`)} SET status = ${`f${i}`} WHERE id = 1`;
    }
    report(engine, await measure({ unfenced, fenced: (i) => gate.transaction('bench/own', 7, body(i)) }, N));
    await q(`DROP TABLE orders_bench_${table}`);
    await q(`DROP TABLE ${table}`);
    await client.end();
  }
}

if (MYSQL_URL && wanted('mysql')) {
  const pool = await mysqlPool();
  await pool.query('DROP TABLE IF EXISTS orders_bench');
  await pool.query("CREATE TABLE orders_bench (id INT PRIMARY KEY, status VARCHAR(40) NOT NULL) ENGINE=InnoDB");
  await pool.query("INSERT INTO orders_bench VALUES (1, 'x')");
  const gate = new Gate(await new MysqlStore(pool, { table: 'fg_own_bench' }).init());
  const text = 'UPDATE orders_bench SET status = ? WHERE id = 1';
  const unfenced = async (i) => {
    const c = await pool.getConnection();
    try {
      await c.query('START TRANSACTION');
      await c.execute(text, [`u${i}`]);
      await c.query('COMMIT');
    } finally {
      c.release();
    }
  };
  report('mysql', await measure({ unfenced, fenced: (i) => gate.transaction('bench/own', 7, (c) => c.execute(text, [`f${i}`])) }, N));
  await pool.query('DROP TABLE orders_bench');
  await pool.query('DROP TABLE fg_own_bench');
  await pool.end();
}

if (process.argv.includes('--json')) console.log(JSON.stringify({ ownData: rows }));
