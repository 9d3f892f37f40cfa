// A fenced transaction (Gate.transaction: fence row + one UPDATE of the caller's row) on a
// guarded table vs the same on an unguarded one (docs/guard.md "Cost"): each table behind
// its own fence table, the guard installed once. In each round the two sides alternate
// transaction by transaction, each transaction timed, so a change in the machine's load
// (2 cores shared with other work) falls on both alike; the figure is the median of the
// rounds' guarded/unguarded ratios (MODE=block: n of one side then n of the other instead).
// SQLite (a WAL file), PostgreSQL (FENCEGATE_PG_URL, PostgresStore) and MySQL/MariaDB
// (FENCEGATE_MYSQL_URL; the guarded side uses MysqlStore { guard: true }, whose nonce
// statements are part of the guard's cost). Prints the load average before and after.
// Run: bash scripts/with-services.sh node bench/guard.mjs
// (FENCEGATE_SERVICES_DURABLE=1 before it: PostgreSQL, MariaDB and the SQLite file with their durable settings)
// Env: ROUNDS (default 15), STATE_CACHE, MODE (tx | block), CONTROL (1: no guard: an A/A run), ONLY (sqlite | postgres | mysql, comma-separated), SCALE (multiplies n).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { Gate } from '../pkg/node.mjs';
import { SqliteStore } from '../pkg/adapters/sqlite.mjs';
import { installGuard, removeGuard } from '../pkg/adapters/guard.mjs';

const ROUNDS = Number(process.env.ROUNDS ?? 15);
const SCALE = Number(process.env.SCALE ?? 1);
const MODE = process.env.MODE ?? 'tx';
// CONTROL=1: the same run with no guard installed anywhere (an A/A run: the method's own bias)
const CONTROL = process.env.CONTROL === '1';
const install = (client, options) => (CONTROL ? null : installGuard(client, options));
// STATE_CACHE: the gates' stateCache (default: the Gate's default, as a user gets it; 0: every key read under lock)
const GATE_OPTIONS = process.env.STATE_CACHE === undefined ? {} : { stateCache: Number(process.env.STATE_CACHE) };
const ONLY = process.env.ONLY ? process.env.ONLY.split(',') : null;
const want = (name) => ONLY === null || ONLY.includes(name);
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');

// Two tables, each behind its own fence table: guarded (installed once) and plain.
async function measure(name, setup, n) {
  n = Math.max(1, Math.round(n * SCALE));
  const guarded = [];
  const plain = [];
  const ratios = [];
  const { gates, bodies, close, between = () => {} } = await setup();
  const loadBefore = load();
  let token = 1;
  const one = async (which) => {
    const v = await gates[which].transaction('orders/1', token, bodies[which]);
    if (!v.ok) throw new Error(`${name}: a fenced transaction was not applied: ${JSON.stringify(v)}`);
  };
  // MODE=block: n guarded then n unguarded (the order swapped every round); default: the two
  // alternate transaction by transaction, each timed, so both sides meet the same load
  const round = async (first) => {
    const spent = [0, 0];
    if (MODE === 'block') {
      for (const which of [first, 1 - first]) {
        const t0 = performance.now();
        for (let i = 0; i < n; i++) await one(which);
        spent[which] = performance.now() - t0;
      }
    } else {
      for (let i = 0; i < n; i++) {
        for (const which of i % 2 === 0 ? [first, 1 - first] : [1 - first, first]) {
          const t0 = performance.now();
          await one(which);
          spent[which] += performance.now() - t0;
        }
      }
    }
    return spent.map((ms) => (n / ms) * 1000);
  };
  await round(0);
  for (let r = 0; r < ROUNDS; r++) {
    await between();
    token++; // the first transaction of each round on each side advances the mark, the others accept
    const [g, p] = await round(r % 2);
    guarded.push(g);
    plain.push(p);
    ratios.push(g / p);
  }
  await close();
  const g = median(guarded);
  const p = median(plain);
  console.log(
    `${name}${CONTROL ? ' (CONTROL: no guard installed)' : ''}: guarded ${g.toFixed(0)} tx/s, unguarded ${p.toFixed(0)} tx/s, ratio of medians ${(g / p).toFixed(3)}, ` +
      `median of round ratios ${median(ratios).toFixed(3)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}) ` +
      `(${ROUNDS} rounds of ${n} each, ${MODE === 'block' ? 'in blocks' : 'alternating transaction by transaction'}; load average ${loadBefore} -> ${load()})`,
  );
}

if (want('sqlite')) await measure('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fg-bench-guard-'));
  const Database = createRequire(import.meta.url)('better-sqlite3');
  const db = new Database(join(dir, 'b.db'));
  db.pragma('journal_mode = WAL');
  // FENCEGATE_SERVICES_DURABLE=1 (the servers with their durable defaults): SQLite's durable setting too
  db.pragma(process.env.FENCEGATE_SERVICES_DURABLE === '1' ? 'synchronous = FULL' : 'synchronous = NORMAL');
  // checkpoints between rounds, untimed: an automatic one lands on every n-th commit, and with
  // the two sides alternating that is always the same side's transaction
  db.pragma('wal_autocheckpoint = 0');
  db.exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, n INTEGER NOT NULL); INSERT INTO orders VALUES (1, 0); CREATE TABLE plain (id INTEGER PRIMARY KEY, n INTEGER NOT NULL); INSERT INTO plain VALUES (1, 0)");
  const gates = [new Gate(new SqliteStore(db), { stateCache: 0 }), new Gate(new SqliteStore(db, { table: 'fence_plain' }), { stateCache: 0 })];
  await install(db, { table: 'orders', key: "'orders/' || id" });
  const st = [db.prepare('UPDATE orders SET n = n + 1 WHERE id = 1'), db.prepare('UPDATE plain SET n = n + 1 WHERE id = 1')];
  return {
    gates,
    bodies: [() => st[0].run().changes, () => st[1].run().changes],
    between: () => db.pragma('wal_checkpoint(TRUNCATE)'),
    close: () => { db.close(); rmSync(dir, { recursive: true, force: true }); },
  };
}, 4000);

if (process.env.FENCEGATE_PG_URL && want('postgres')) {
  const pg = (await import('pg')).default;
  const { PostgresStore } = await import('../pkg/adapters/postgres.mjs');
  await measure('postgres', async () => {
    const pool = new pg.Pool({ connectionString: process.env.FENCEGATE_PG_URL, max: 2 });
    await removeGuard(pool, { table: 'bench_orders', fenceTable: 'bench_fence', fence: true }).catch(() => {});
    await pool.query('DROP TABLE IF EXISTS bench_orders; DROP TABLE IF EXISTS bench_plain; DROP TABLE IF EXISTS bench_fence; DROP TABLE IF EXISTS bench_fence_plain');
    const stores = [new PostgresStore(pool, { table: 'bench_fence' }), new PostgresStore(pool, { table: 'bench_fence_plain' })];
    for (const s of stores) await s.init();
    await pool.query('CREATE TABLE bench_orders (id int PRIMARY KEY, n int NOT NULL); INSERT INTO bench_orders VALUES (1, 0); CREATE TABLE bench_plain (id int PRIMARY KEY, n int NOT NULL); INSERT INTO bench_plain VALUES (1, 0)');
    await install(pool, { table: 'bench_orders', key: "'orders/' || id", fenceTable: 'bench_fence' });
    return {
      gates: stores.map((s) => new Gate(s, GATE_OPTIONS)),
      bodies: [(c) => c.query('UPDATE bench_orders SET n = n + 1 WHERE id = 1'), (c) => c.query('UPDATE bench_plain SET n = n + 1 WHERE id = 1')],
      close: async () => {
        await removeGuard(pool, { table: 'bench_orders', fenceTable: 'bench_fence', fence: true });
        await pool.query('DROP TABLE bench_orders; DROP TABLE bench_plain; DROP TABLE bench_fence; DROP TABLE bench_fence_plain');
        await pool.end();
      },
    };
  }, 600);
}

if (process.env.FENCEGATE_MYSQL_URL && want('mysql')) {
  const mysql = (await import('mysql2/promise')).default;
  const { MysqlStore } = await import('../pkg/adapters/mysql.mjs');
  await measure('mysql', async () => {
    const pool = mysql.createPool({ uri: process.env.FENCEGATE_MYSQL_URL, connectionLimit: 2 });
    await removeGuard(pool, { table: 'bench_orders', fenceTable: 'bench_fence', fence: true }).catch(() => {});
    for (const t of ['bench_orders', 'bench_plain', 'bench_fence', 'bench_fence_plain']) await pool.query(`DROP TABLE IF EXISTS ${t}`);
    const stores = [new MysqlStore(pool, { table: 'bench_fence', guard: true }), new MysqlStore(pool, { table: 'bench_fence_plain' })];
    for (const s of stores) await s.init();
    for (const t of ['bench_orders', 'bench_plain']) {
      await pool.query(`CREATE TABLE ${t} (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB`);
      await pool.query(`INSERT INTO ${t} VALUES (1, 0)`);
    }
    await install(pool, { table: 'bench_orders', key: "CONCAT('orders/', id)", fenceTable: 'bench_fence' });
    return {
      gates: stores.map((s) => new Gate(s, GATE_OPTIONS)),
      bodies: [(c) => c.query('UPDATE bench_orders SET n = n + 1 WHERE id = 1'), (c) => c.query('UPDATE bench_plain SET n = n + 1 WHERE id = 1')],
      close: async () => {
        await removeGuard(pool, { table: 'bench_orders', fenceTable: 'bench_fence', fence: true });
        for (const t of ['bench_orders', 'bench_plain', 'bench_fence', 'bench_fence_plain']) await pool.query(`DROP TABLE ${t}`);
        await pool.end();
      },
    };
  }, 600);
}
