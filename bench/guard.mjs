// A fenced transaction (Gate.transaction: fence row + one UPDATE of the caller's row) on a
// guarded table vs the same on an unguarded one (docs/guard.md "Cost"), interleaved rounds,
// medians. PostgreSQL (FENCEGATE_PG_URL, the own-data verbs of tests/js/guard/pg-own.mjs)
// and SQLite (a WAL file). Run: bash scripts/with-services.sh node bench/guard.mjs
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { Gate } from '../pkg/node.mjs';
import { SqliteStore } from '../pkg/adapters/sqlite.mjs';
import { installGuard, removeGuard } from '../pkg/adapters/guard.mjs';

const ROUNDS = Number(process.env.ROUNDS ?? 7);
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

// Two tables, each behind its own fence table: `orders` guarded (installed once), `plain` not.
async function measure(name, setup, n) {
  const guarded = [];
  const plain = [];
  const { gates, bodies, close } = await setup();
  let token = 1;
  const round = async (which) => {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await gates[which].transaction('orders/1', token, bodies[which]);
    return (n / (performance.now() - t0)) * 1000;
  };
  await round(0);
  await round(1);
  for (let r = 0; r < ROUNDS; r++) {
    token++;
    if (r % 2 === 0) {
      guarded.push(await round(0));
      plain.push(await round(1));
    } else {
      plain.push(await round(1));
      guarded.push(await round(0));
    }
  }
  await close();
  const g = median(guarded);
  const p = median(plain);
  console.log(`${name}: guarded ${g.toFixed(0)} tx/s, unguarded ${p.toFixed(0)} tx/s, ratio ${(g / p).toFixed(3)} (medians of ${ROUNDS} interleaved rounds of ${n})`);
}

if (process.env.ONLY !== 'postgres') await measure('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fg-bench-guard-'));
  const Database = createRequire(import.meta.url)('better-sqlite3');
  const db = new Database(join(dir, 'b.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, n INTEGER NOT NULL); INSERT INTO orders VALUES (1, 0); CREATE TABLE plain (id INTEGER PRIMARY KEY, n INTEGER NOT NULL); INSERT INTO plain VALUES (1, 0)");
  const gates = [new Gate(new SqliteStore(db), { stateCache: 0 }), new Gate(new SqliteStore(db, { table: 'fence_plain' }), { stateCache: 0 })];
  await installGuard(db, { table: 'orders', key: "'orders/' || id" });
  const st = [db.prepare('UPDATE orders SET n = n + 1 WHERE id = 1'), db.prepare('UPDATE plain SET n = n + 1 WHERE id = 1')];
  return {
    gates,
    bodies: [() => st[0].run().changes, () => st[1].run().changes],
    close: () => { db.close(); rmSync(dir, { recursive: true, force: true }); },
  };
}, 4000);

if (process.env.FENCEGATE_PG_URL && process.env.ONLY !== 'sqlite') {
  const pg = (await import('pg')).default;
  const { pgOwnStore } = await import('../tests/js/guard/pg-own.mjs');
  await measure('postgres', async () => {
    const pool = new pg.Pool({ connectionString: process.env.FENCEGATE_PG_URL, max: 2 });
    await removeGuard(pool, { table: 'bench_orders', fence: true }).catch(() => {});
    await pool.query('DROP TABLE IF EXISTS bench_orders; DROP TABLE IF EXISTS bench_plain; DROP TABLE IF EXISTS fencegate; DROP TABLE IF EXISTS fence_plain');
    const stores = [pgOwnStore(pool), pgOwnStore(pool, 'fence_plain')];
    for (const s of stores) await s.init();
    await pool.query('CREATE TABLE bench_orders (id int PRIMARY KEY, n int NOT NULL); INSERT INTO bench_orders VALUES (1, 0); CREATE TABLE bench_plain (id int PRIMARY KEY, n int NOT NULL); INSERT INTO bench_plain VALUES (1, 0)');
    await installGuard(pool, { table: 'bench_orders', key: "'orders/' || id" });
    return {
      gates: stores.map((s) => new Gate(s, { stateCache: 0 })),
      bodies: [(c) => c.query('UPDATE bench_orders SET n = n + 1 WHERE id = 1'), (c) => c.query('UPDATE bench_plain SET n = n + 1 WHERE id = 1')],
      close: () => pool.end(),
    };
  }, 600);
}
