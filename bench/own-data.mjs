// Own-data benchmark (docs/stores.md "Your own data"): the same caller transaction — one
// UPDATE of one row — fenced (gate.transaction, a cached key) and unfenced (BEGIN; UPDATE;
// COMMIT by hand on the same client), on pg, postgres.js, MySQL (mysql2) and SQLite
// (better-sqlite3: WAL with synchronous=NORMAL, and the durable WAL with synchronous=FULL).
// A third line, "hand", is the same transaction with a hand-written fence: one more
// conditional UPDATE of a fence row (version compare-and-set) and no decision — the floor of
// "one added statement". Interleaved rounds (BENCH_ROUNDS, default 5), medians; prints the
// fenced/unfenced and hand/unfenced ratios. BENCH_ENGINES=sqlite,pg,… picks engines. Run:
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
  const hand = +(m.hand / m.unfenced).toFixed(2);
  rows.push({ engine, unfenced: m.unfenced, fenced: m.fenced, hand: m.hand, ratio, handRatio: hand });
  const n = (x) => String(x).padStart(6);
  console.log(`${engine.padEnd(16)} unfenced ${n(m.unfenced)}/s  fenced ${n(m.fenced)}/s  ${ratio}x   hand-fenced ${n(m.hand)}/s  ${hand}x`);
}

/** A hand-written fence: a version counter per key, compare-and-set in the transaction (no decision, no cache). */
const HAND_TABLE = (t) => `CREATE TABLE ${t} (k VARCHAR(100) PRIMARY KEY, version BIGINT NOT NULL)`;

// SQLite
for (const [engine, synchronous] of [['sqlite', 'NORMAL'], ['sqlite durable', 'FULL']]) {
  if (!wanted(engine.replace(' ', '-')) && !wanted('sqlite')) continue;
  const dir = mkdtempSync(join(tmpdir(), 'fg-own-bench-'));
  const db = openSqlite(join(dir, 'b.db'));
  db.pragma(`synchronous = ${synchronous}`);
  db.exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT NOT NULL); INSERT INTO orders VALUES (1, 'x')");
  db.exec(`${HAND_TABLE('hand')}; INSERT INTO hand VALUES ('bench/own', 0)`);
  const gate = new Gate(new SqliteStore(db));
  const upd = db.prepare('UPDATE orders SET status = ? WHERE id = 1');
  const cas = db.prepare('UPDATE hand SET version = version + 1 WHERE k = ? AND version = ?');
  let version = 0;
  const unfenced = db.transaction((s) => upd.run(s));
  const hand = db.transaction((s) => {
    if (cas.run('bench/own', version).changes !== 1) throw new Error('lost');
    version++;
    upd.run(s);
  });
  const body = (i) => () => upd.run(`f${i}`);
  report(engine, await measure({
    unfenced: async (i) => unfenced.immediate(`u${i}`),
    fenced: (i) => gate.transaction('bench/own', 7, body(i)),
    hand: async (i) => hand.immediate(`h${i}`),
  }, synchronous === 'FULL' ? N : N * 5));
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
    const handTable = `hand_bench_${table}`;
    await q(`DROP TABLE IF EXISTS ${handTable}`);
    await q(HAND_TABLE(handTable));
    await q(`INSERT INTO ${handTable} VALUES ('bench/own', 0)`);
    const casText = `UPDATE ${handTable} SET version = version + 1 WHERE k = 'bench/own' AND version = $1`;
    let version = 0;
    let unfenced;
    let hand;
    let body;
    if (engine === 'pg') {
      const stmt = (s) => ({ name: `own_bench_${table}`, text, values: [s] });
      const inTransaction = (fn) => async (i) => {
        const c = await client.connect();
        try {
          await c.query('BEGIN');
          await fn(c, i);
          await c.query('COMMIT');
        } finally {
          c.release();
        }
      };
      unfenced = inTransaction((c, i) => c.query(stmt(`u${i}`)));
      hand = inTransaction(async (c, i) => {
        if ((await c.query({ name: `own_bench_cas_${table}`, text: casText, values: [version] })).rowCount !== 1) throw new Error('lost');
        version++;
        await c.query(stmt(`h${i}`));
      });
      body = (i) => (c) => c.query(stmt(`f${i}`));
    } else {
      unfenced = (i) => client.begin((tx) => tx`UPDATE ${tx(`orders_bench_${table}`)} SET status = ${`u${i}`} WHERE id = 1`);
      hand = (i) =>
        client.begin(async (tx) => {
          if ((await tx.unsafe(casText, [version], { prepare: true })).count !== 1) throw new Error('lost');
          version++;
          await tx`UPDATE ${tx(`orders_bench_${table}`)} SET status = ${`h${i}`} WHERE id = 1`;
        });
      body = (i) => (tx) => tx`UPDATE ${tx(`orders_bench_${table}`)} SET status = ${`f${i}`} WHERE id = 1`;
    }
    report(engine, await measure({ unfenced, fenced: (i) => gate.transaction('bench/own', 7, body(i)), hand }, N));
    await q(`DROP TABLE orders_bench_${table}`);
    await q(`DROP TABLE ${handTable}`);
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
  await pool.query('DROP TABLE IF EXISTS hand_bench');
  await pool.query(HAND_TABLE('hand_bench'));
  await pool.query("INSERT INTO hand_bench VALUES ('bench/own', 0)");
  let version = 0;
  const inTransaction = (fn) => async (i) => {
    const c = await pool.getConnection();
    try {
      await c.query('START TRANSACTION');
      await fn(c, i);
      await c.query('COMMIT');
    } finally {
      c.release();
    }
  };
  const unfenced = inTransaction((c, i) => c.execute(text, [`u${i}`]));
  const hand = inTransaction(async (c, i) => {
    const [r] = await c.execute("UPDATE hand_bench SET version = version + 1 WHERE k = 'bench/own' AND version = ?", [version]);
    if (r.affectedRows !== 1) throw new Error('lost');
    version++;
    await c.execute(text, [`h${i}`]);
  });
  report('mysql', await measure({ unfenced, fenced: (i) => gate.transaction('bench/own', 7, (c) => c.execute(text, [`f${i}`])), hand }, N));
  await pool.query('DROP TABLE hand_bench');
  await pool.query('DROP TABLE orders_bench');
  await pool.query('DROP TABLE fg_own_bench');
  await pool.end();
}

if (process.argv.includes('--json')) console.log(JSON.stringify({ ownData: rows }));
