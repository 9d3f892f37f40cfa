// The ORMs on a real PostgreSQL (docs/stores.md "ORMs"), each with its real npm package and its
// own transaction API, the way its docs write a transaction:
//   Drizzle   db.transaction(async (tx) => …)              (node-postgres driver, a pg Pool; postgres.js driver)
//   Kysely    db.transaction().execute(async (trx) => …)   (PostgresDialect over a pg Pool)
//   Knex      knex.transaction(async (trx) => …)           (the pg client)
//   Prisma 7  prisma.$transaction(async (tx) => …)         (prisma-client generator, @prisma/adapter-pg;
//             the client is generated and bundled at test time: prisma/generate.mjs)
// `await gate.fenceIn(tx, key, token)` reads the fence row on the ORM's transaction with a row lock
// and writes the next fence state there; a refusal throws the FencegateError with the verdict's code,
// so the ORM rolls the caller's UPDATE back. Exact verdicts, rows and fence rows after each case.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import pg from 'pg';
import { drizzle } from 'drizzle-orm/node-postgres';
import { drizzle as drizzlePostgresJs } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { pgTable, integer, text } from 'drizzle-orm/pg-core';
import { eq, sql as dsql } from 'drizzle-orm';
import { Kysely, PostgresDialect, sql as ksql } from 'kysely';
import knexFactory from 'knex';
import { Gate, FencegateError } from '../../../pkg/node.mjs';
import { PostgresStore } from '../../../pkg/adapters/postgres.mjs';
import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';
import { generatePrisma } from './prisma/generate.mjs';

const Database = createRequire(import.meta.url)('better-sqlite3');

const url = process.env.FENCEGATE_PG_URL;
const skip = !url && process.env.FENCEGATE_REQUIRE_SERVICES !== '1' && 'FENCEGATE_PG_URL is not set';

let pool;
before(async () => {
  if (skip) return;
  assert.ok(url, 'FENCEGATE_PG_URL is required (FENCEGATE_REQUIRE_SERVICES=1)');
  pool = new pg.Pool({ connectionString: url, max: 6 });
});
after(async () => {
  if (pool) await pool.end();
});

/** Fresh `orders` (42 and 43 'new') and fence table; the store and a gate without a state cache. */
async function setUp() {
  await pool.query('DROP TABLE IF EXISTS orders, fencegate');
  await pool.query('CREATE TABLE orders (id integer PRIMARY KEY, status text NOT NULL)');
  await pool.query("INSERT INTO orders VALUES (42, 'new'), (43, 'new')");
  const store = await new PostgresStore(pool).init();
  return { store, gate: new Gate(store, { stateCache: 0 }) };
}

const rows = async () => (await pool.query('SELECT id, status FROM orders ORDER BY id')).rows;
const fenceRow = async (key) => (await pool.query('SELECT value, version::int AS version FROM fencegate WHERE key = $1', [key])).rows[0] ?? null;

const advance = (token, markBefore) => ({ key: 'orders/42', ok: true, outcome: 'advance', code: null, token, markBefore, markAfter: token });
const stale = (token, mark) => ({ key: 'orders/42', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token, markBefore: mark, markAfter: mark });
const invalid = (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT';

/** The refusal a fenceIn throws: FencegateError with the verdict's code and the verdict attached. */
function refused(code, verdict) {
  return (e) => {
    assert.ok(e instanceof FencegateError, `not a FencegateError: ${e}`);
    assert.equal(e.code, code);
    assert.deepEqual(e.verdict, verdict);
    return true;
  };
}

/**
 * The common script, for one ORM: `setStatus(token, status, options)` fences then updates order 42
 * in one ORM transaction; `updateThenFence(token, status)` updates first and fences after;
 * `appendPlus(token, opId)` fences with an op id and appends '+' to order 42's status.
 */
async function script(gate, { setStatus, updateThenFence, appendPlus }) {
  assert.deepEqual(await setStatus(5, 'paid'), advance(5, 0));
  assert.deepEqual(await setStatus(6, 'shipped'), advance(6, 5));
  assert.deepEqual(await rows(), [{ id: 42, status: 'shipped' }, { id: 43, status: 'new' }]);
  // the paused old leader (token 5): refused, its UPDATE rolled back
  await assert.rejects(setStatus(5, 'refunded'), refused('STALE_TOKEN', stale(5, 6)));
  await assert.rejects(updateThenFence(5, 'refunded'), refused('STALE_TOKEN', stale(5, 6)));
  assert.deepEqual(await rows(), [{ id: 42, status: 'shipped' }, { id: 43, status: 'new' }]);
  // the same op id twice: the second throws DUPLICATE_OPERATION, '+' is appended once
  await appendPlus(6, 'ship-1');
  await assert.rejects(appendPlus(6, 'ship-1'), (e) => {
    assert.ok(e instanceof FencegateError);
    assert.equal(e.code, 'DUPLICATE_OPERATION');
    assert.deepEqual(e.verdict, { key: 'orders/42', ok: true, outcome: 'duplicate', code: null, original: 'accept', token: 6, markBefore: 6, markAfter: 6 });
    return true;
  });
  assert.deepEqual(await rows(), [{ id: 42, status: 'shipped+' }, { id: 43, status: 'new' }]);
  // the fence applies (token 7) but the caller's UPDATE then fails (status NOT NULL): the ORM rolls
  // back the fence row with it, because it was written on the same transaction
  await assert.rejects(setStatus(7, null), (e) => !(e instanceof FencegateError));
  assert.equal(await gate.mark('orders/42'), 6);
  // written once per applied transaction: advance 5, advance 6, the op id's accept
  assert.deepEqual(await fenceRow('orders/42'), { value: null, version: 3 });
}

test('Drizzle (node-postgres, Pool): await gate.fenceIn(tx) in db.transaction', { skip }, async () => {
  const { gate } = await setUp();
  const orders = pgTable('orders', { id: integer('id').primaryKey(), status: text('status').notNull() });
  const db = drizzle({ client: pool });
  await script(gate, {
    setStatus: (token, status) => db.transaction(async (tx) => {
      const v = await gate.fenceIn(tx, 'orders/42', token);
      await tx.update(orders).set({ status }).where(eq(orders.id, 42));
      return v;
    }),
    updateThenFence: (token, status) => db.transaction(async (tx) => {
      await tx.update(orders).set({ status }).where(eq(orders.id, 42));
      await gate.fenceIn(tx, 'orders/42', token);
    }),
    appendPlus: (token, opId) => db.transaction(async (tx) => {
      await gate.fenceIn(tx, 'orders/42', token, { opId });
      await tx.update(orders).set({ status: dsql`${orders.status} || '+'` }).where(eq(orders.id, 42));
    }),
  });
  // the Drizzle database outside a transaction: refused, nothing written
  await assert.rejects(gate.fenceIn(db, 'orders/43', 1), invalid);
  assert.equal(await fenceRow('orders/43'), null);
});

test('Drizzle (postgres.js driver): await gate.fenceIn(tx) in db.transaction', { skip }, async () => {
  const { gate } = await setUp();
  const orders = pgTable('orders', { id: integer('id').primaryKey(), status: text('status').notNull() });
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  const db = drizzlePostgresJs({ client: sql });
  try {
    await script(gate, {
      setStatus: (token, status) => db.transaction(async (tx) => {
        const v = await gate.fenceIn(tx, 'orders/42', token);
        await tx.update(orders).set({ status }).where(eq(orders.id, 42));
        return v;
      }),
      updateThenFence: (token, status) => db.transaction(async (tx) => {
        await tx.update(orders).set({ status }).where(eq(orders.id, 42));
        await gate.fenceIn(tx, 'orders/42', token);
      }),
      appendPlus: (token, opId) => db.transaction(async (tx) => {
        await gate.fenceIn(tx, 'orders/42', token, { opId });
        await tx.update(orders).set({ status: dsql`${orders.status} || '+'` }).where(eq(orders.id, 42));
      }),
    });
    await assert.rejects(gate.fenceIn(db, 'orders/43', 1), invalid);
    assert.equal(await fenceRow('orders/43'), null);
  } finally {
    await sql.end();
  }
});

test('Drizzle (node-postgres): the row lock serialises two transactions on one key; the waiting zombie is refused after the new leader commits', { skip }, async () => {
  const { gate } = await setUp();
  const orders = pgTable('orders', { id: integer('id').primaryKey(), status: text('status').notNull() });
  const db = drizzle({ client: pool });
  await db.transaction(async (tx) => { await gate.fenceIn(tx, 'orders/42', 1); });
  let release;
  const held = new Promise((r) => { release = r; });
  let leaderFenced;
  const fenced = new Promise((r) => { leaderFenced = r; });
  const leader = db.transaction(async (tx) => {
    const v = await gate.fenceIn(tx, 'orders/42', 2);
    leaderFenced();
    await held; // holds the fence row's lock
    await tx.update(orders).set({ status: 'leader' }).where(eq(orders.id, 42));
    return v;
  });
  await fenced;
  const zombie = db.transaction(async (tx) => {
    await tx.update(orders).set({ status: 'zombie' }).where(eq(orders.id, 43));
    await gate.fenceIn(tx, 'orders/42', 1); // waits for the leader's lock, then reads mark 2
  });
  const zombieOutcome = zombie.then(() => 'committed', (e) => e);
  await new Promise((r) => setTimeout(r, 200));
  release();
  assert.deepEqual(await leader, advance(2, 1));
  const e = await zombieOutcome;
  assert.ok(e instanceof FencegateError, String(e));
  assert.equal(e.code, 'STALE_TOKEN');
  assert.deepEqual(e.verdict, { key: 'orders/42', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 1, markBefore: 2, markAfter: 2 });
  assert.deepEqual(await rows(), [{ id: 42, status: 'leader' }, { id: 43, status: 'new' }]);
  assert.deepEqual(await fenceRow('orders/42'), { value: null, version: 2 });
});

test('Kysely (PostgresDialect, pg Pool): await gate.fenceIn(trx) in db.transaction().execute', { skip }, async () => {
  const { gate } = await setUp();
  const db = new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 2 }) }) });
  try {
    await script(gate, {
      setStatus: (token, status) => db.transaction().execute(async (trx) => {
        const v = await gate.fenceIn(trx, 'orders/42', token);
        await trx.updateTable('orders').set({ status }).where('id', '=', 42).execute();
        return v;
      }),
      updateThenFence: (token, status) => db.transaction().execute(async (trx) => {
        await trx.updateTable('orders').set({ status }).where('id', '=', 42).execute();
        await gate.fenceIn(trx, 'orders/42', token);
      }),
      appendPlus: (token, opId) => db.transaction().execute(async (trx) => {
        await gate.fenceIn(trx, 'orders/42', token, { opId });
        await trx.updateTable('orders').set({ status: ksql`status || '+'` }).where('id', '=', 42).execute();
      }),
    });
    // a controlled transaction (db.startTransaction()) works too; a refusal then must be rolled back by the caller
    const trx = await db.startTransaction().execute();
    await trx.updateTable('orders').set({ status: 'zombie' }).where('id', '=', 43).execute();
    await assert.rejects(gate.fenceIn(trx, 'orders/42', 4), refused('STALE_TOKEN', stale(4, 6)));
    await trx.rollback().execute();
    // after it ended, and the Kysely instance itself: refused, nothing written
    await assert.rejects(gate.fenceIn(trx, 'orders/43', 1), invalid);
    await assert.rejects(gate.fenceIn(db, 'orders/43', 1), invalid);
    assert.deepEqual(await rows(), [{ id: 42, status: 'shipped+' }, { id: 43, status: 'new' }]);
    assert.equal(await fenceRow('orders/43'), null);
  } finally {
    await db.destroy();
  }
});

test('Knex (pg client): await gate.fenceIn(trx) in knex.transaction', { skip }, async () => {
  const { gate } = await setUp();
  const knex = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 2 } });
  try {
    await script(gate, {
      setStatus: (token, status) => knex.transaction(async (trx) => {
        const v = await gate.fenceIn(trx, 'orders/42', token);
        await trx('orders').where({ id: 42 }).update({ status });
        return v;
      }),
      updateThenFence: (token, status) => knex.transaction(async (trx) => {
        await trx('orders').where({ id: 42 }).update({ status });
        await gate.fenceIn(trx, 'orders/42', token);
      }),
      appendPlus: (token, opId) => knex.transaction(async (trx) => {
        await gate.fenceIn(trx, 'orders/42', token, { opId });
        await trx('orders').where({ id: 42 }).update({ status: knex.raw("status || '+'") });
      }),
    });
    // the knex instance (autocommit) is refused; so is a pg transaction handed to a SQLite store
    await assert.rejects(gate.fenceIn(knex, 'orders/43', 1), invalid);
    const sqlite = new Database(':memory:');
    const sqliteGate = new Gate(new SqliteStore(sqlite));
    await assert.rejects(knex.transaction((trx) => sqliteGate.fenceIn(trx, 'orders/43', 1)), invalid);
    sqlite.close();
    assert.equal(await fenceRow('orders/43'), null);
  } finally {
    await knex.destroy();
  }
});

test('Prisma 7 (prisma-client generator, @prisma/adapter-pg, generated offline): await gate.fenceIn(tx) in prisma.$transaction', { skip, timeout: 180_000 }, async () => {
  const { gate } = await setUp();
  const dir = mkdtempSync(join(tmpdir(), 'fg-prisma-'));
  let prisma;
  try {
    const { PrismaClient, PrismaPg } = await import(await generatePrisma(dir));
    prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: url }) });
    await script(gate, {
      setStatus: (token, status) => prisma.$transaction(async (tx) => {
        const v = await gate.fenceIn(tx, 'orders/42', token);
        await tx.order.update({ where: { id: 42 }, data: { status } });
        return v;
      }),
      updateThenFence: (token, status) => prisma.$transaction(async (tx) => {
        await tx.order.update({ where: { id: 42 }, data: { status } });
        await gate.fenceIn(tx, 'orders/42', token);
      }),
      appendPlus: (token, opId) => prisma.$transaction(async (tx) => {
        await gate.fenceIn(tx, 'orders/42', token, { opId });
        const { status } = await tx.order.findUniqueOrThrow({ where: { id: 42 } });
        await tx.order.update({ where: { id: 42 }, data: { status: `${status}+` } });
      }),
    });
    // the PrismaClient itself (each query its own transaction) is refused, nothing written
    await assert.rejects(gate.fenceIn(prisma, 'orders/43', 1), invalid);
    assert.equal(await fenceRow('orders/43'), null);
    assert.deepEqual(await prisma.order.findMany({ orderBy: { id: 'asc' } }), [{ id: 42, status: 'shipped+' }, { id: 43, status: 'new' }]);
  } finally {
    if (prisma) await prisma.$disconnect();
    rmSync(dir, { recursive: true, force: true });
  }
});
