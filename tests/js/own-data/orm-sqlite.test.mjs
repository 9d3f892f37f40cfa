// The ORMs on SQLite (docs/stores.md "ORMs"), each with its real npm package and its own
// transaction API, the way its docs write a transaction: Drizzle's better-sqlite3 driver
// (synchronous: gate.fenceInSync(tx, …)), Kysely's SqliteDialect and Knex's better-sqlite3
// client (asynchronous: await gate.fenceIn(trx, …)). A refused fence throws, so the ORM
// rolls the caller's UPDATE back: exact rows, marks and fence rows after each case.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { Gate, FencegateError } from '../../../pkg/node.mjs';
import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { sqliteTable, integer, text } from 'drizzle-orm/sqlite-core';
import { eq, sql as dsql } from 'drizzle-orm';
import { Kysely, SqliteDialect, sql as ksql } from 'kysely';
import knexFactory from 'knex';

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3');

function open() {
  const dir = mkdtempSync(join(tmpdir(), 'fg-orm-sqlite-'));
  const file = join(dir, 'shop.db');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT NOT NULL); INSERT INTO orders VALUES (42, 'new'), (43, 'new');");
  const store = new SqliteStore(db);
  const gate = new Gate(store, { stateCache: 0 });
  const rows = () => db.prepare('SELECT id, status FROM orders ORDER BY id').all();
  const fenceRow = (key) => db.prepare('SELECT value, version FROM fencegate WHERE key = ?').get(key) ?? null;
  return { dir, file, db, store, gate, rows, fenceRow, close: () => { db.close(); rmSync(dir, { recursive: true, force: true }); } };
}

const advance = (token, markBefore) => ({ key: 'orders/42', ok: true, outcome: 'advance', code: null, token, markBefore, markAfter: token });
const stale = (token, mark) => ({ key: 'orders/42', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token, markBefore: mark, markAfter: mark });

/** The refusal a fenceIn throws: FencegateError with the verdict's code and the verdict attached. */
function refused(code, verdict) {
  return (e) => {
    assert.ok(e instanceof FencegateError, `not a FencegateError: ${e}`);
    assert.equal(e.code, code);
    assert.deepEqual(e.verdict, verdict);
    return true;
  };
}

test('Drizzle (better-sqlite3, synchronous): fenceInSync(tx) with tx.update; stale and duplicate throw and roll the update back', async () => {
  const t = open();
  try {
    const orders = sqliteTable('orders', { id: integer('id').primaryKey(), status: text('status').notNull() });
    const db = drizzle({ client: t.db });
    const setStatus = (token, status, options) => db.transaction((tx) => {
      const v = t.gate.fenceInSync(tx, 'orders/42', token, options);
      tx.update(orders).set({ status }).where(eq(orders.id, 42)).run();
      return v;
    });
    assert.deepEqual(setStatus(5, 'paid'), advance(5, 0));
    assert.deepEqual(t.rows(), [{ id: 42, status: 'paid' }, { id: 43, status: 'new' }]);
    assert.throws(() => setStatus(4, 'refunded'), refused('STALE_TOKEN', stale(4, 5)));
    assert.deepEqual(t.rows(), [{ id: 42, status: 'paid' }, { id: 43, status: 'new' }]);
    // the same op id twice: the second throws DUPLICATE_OPERATION, the update is not applied again
    const bump = () => db.transaction((tx) => {
      t.gate.fenceInSync(tx, 'orders/42', 6, { opId: 'ship-1' });
      tx.update(orders).set({ status: dsql`${orders.status} || '+'` }).where(eq(orders.id, 42)).run();
    });
    bump();
    assert.throws(bump, (e) => e instanceof FencegateError && e.code === 'DUPLICATE_OPERATION' && e.verdict.outcome === 'duplicate' && e.verdict.markAfter === 6);
    assert.deepEqual(t.rows(), [{ id: 42, status: 'paid+' }, { id: 43, status: 'new' }]);
    // the fence applies (7), then the UPDATE fails (NOT NULL): both roll back
    assert.throws(() => setStatus(7, null), (e) => e.code === 'SQLITE_CONSTRAINT_NOTNULL');
    assert.equal(await t.gate.mark('orders/42'), 6);
    assert.deepEqual(t.fenceRow('orders/42'), { value: null, version: 2 });
    // the Drizzle database outside db.transaction: no transaction open, refused, nothing written
    assert.throws(() => t.gate.fenceInSync(db, 'orders/43', 1), (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT');
    assert.equal(t.fenceRow('orders/43'), null);
    // an async callback: better-sqlite3 refuses it before anything commits
    await assert.rejects(async () => db.transaction(async (tx) => { await t.gate.fenceIn(tx, 'orders/43', 1); }), TypeError);
    assert.equal(t.fenceRow('orders/43'), null);
  } finally {
    t.close();
  }
});

test('Kysely (SqliteDialect over better-sqlite3): await fenceIn(trx) in db.transaction().execute; stale throws, the update is rolled back', async () => {
  const t = open();
  const db = new Kysely({ dialect: new SqliteDialect({ database: t.db }) });
  try {
    const setStatus = (token, status, options) => db.transaction().execute(async (trx) => {
      const v = await t.gate.fenceIn(trx, 'orders/42', token, options);
      await trx.updateTable('orders').set({ status }).where('id', '=', 42).execute();
      return v;
    });
    assert.deepEqual(await setStatus(7, 'paid'), advance(7, 0));
    assert.deepEqual(t.rows(), [{ id: 42, status: 'paid' }, { id: 43, status: 'new' }]);
    // the update runs first here, the fence after: the refusal still rolls it back
    const err = await db.transaction().execute(async (trx) => {
      await trx.updateTable('orders').set({ status: 'zombie' }).where('id', '=', 42).execute();
      await t.gate.fenceIn(trx, 'orders/42', 6);
    }).catch((e) => e);
    assert.ok(refused('STALE_TOKEN', stale(6, 7))(err));
    assert.deepEqual(t.rows(), [{ id: 42, status: 'paid' }, { id: 43, status: 'new' }]);
    const bump = () => db.transaction().execute(async (trx) => {
      await t.gate.fenceIn(trx, 'orders/42', 7, { opId: 'ship-1' });
      await trx.updateTable('orders').set({ status: ksql`status || '+'` }).where('id', '=', 42).execute();
    });
    await bump();
    await assert.rejects(bump(), (e) => e instanceof FencegateError && e.code === 'DUPLICATE_OPERATION' && e.verdict.outcome === 'duplicate');
    assert.deepEqual(t.rows(), [{ id: 42, status: 'paid+' }, { id: 43, status: 'new' }]);
    await assert.rejects(setStatus(8, null), (e) => e.code === 'SQLITE_CONSTRAINT_NOTNULL');
    assert.equal(await t.gate.mark('orders/42'), 7);
    assert.deepEqual(t.fenceRow('orders/42'), { value: null, version: 2 });
    // the Kysely instance itself is not a transaction: refused, nothing written
    await assert.rejects(t.gate.fenceIn(db, 'orders/43', 1), (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT');
    // a Kysely transaction on another database file: refused, and that database's transaction rolls back
    const other = new Database(join(t.dir, 'other.db'));
    other.exec('CREATE TABLE fencegate (key TEXT PRIMARY KEY NOT NULL, state TEXT NOT NULL, value TEXT, version INTEGER NOT NULL)');
    const odb = new Kysely({ dialect: new SqliteDialect({ database: other }) });
    await assert.rejects(odb.transaction().execute((trx) => t.gate.fenceIn(trx, 'orders/43', 1)), (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT');
    await odb.destroy();
    assert.equal(t.fenceRow('orders/43'), null);
  } finally {
    t.close();
  }
});

test('Knex (better-sqlite3 client, its own connection to the file): await fenceIn(trx) in knex.transaction; stale throws, the update is rolled back', async () => {
  const t = open();
  const knex = knexFactory({ client: 'better-sqlite3', connection: { filename: t.file }, useNullAsDefault: true });
  try {
    const setStatus = (token, status, options) => knex.transaction(async (trx) => {
      const v = await t.gate.fenceIn(trx, 'orders/42', token, options);
      await trx('orders').where({ id: 42 }).update({ status });
      return v;
    });
    assert.deepEqual(await setStatus(9, 'paid'), advance(9, 0));
    assert.deepEqual(t.rows(), [{ id: 42, status: 'paid' }, { id: 43, status: 'new' }]);
    await assert.rejects(setStatus(8, 'refunded'), refused('STALE_TOKEN', stale(8, 9)));
    assert.deepEqual(t.rows(), [{ id: 42, status: 'paid' }, { id: 43, status: 'new' }]);
    const bump = () => knex.transaction(async (trx) => {
      await t.gate.fenceIn(trx, 'orders/42', 10, { opId: 'ship-1' });
      await trx('orders').where({ id: 42 }).update({ status: knex.raw("status || '+'") });
    });
    await bump();
    await assert.rejects(bump(), (e) => e instanceof FencegateError && e.code === 'DUPLICATE_OPERATION' && e.verdict.markAfter === 10);
    assert.deepEqual(t.rows(), [{ id: 42, status: 'paid+' }, { id: 43, status: 'new' }]);
    await assert.rejects(setStatus(11, null), (e) => e.code === 'SQLITE_CONSTRAINT_NOTNULL');
    assert.equal(await t.gate.mark('orders/42'), 10);
    assert.deepEqual(t.fenceRow('orders/42'), { value: null, version: 2 });
    // the knex instance (autocommit) is refused, nothing written
    await assert.rejects(t.gate.fenceIn(knex, 'orders/43', 1), (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT');
    assert.equal(t.fenceRow('orders/43'), null);
    // fenceInSync cannot run through Knex (its statements answer Promises): refused, nothing written
    await assert.rejects(knex.transaction(async (trx) => { t.gate.fenceInSync(trx, 'orders/43', 1); }), (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT');
    assert.equal(t.fenceRow('orders/43'), null);
  } finally {
    await knex.destroy();
    t.close();
  }
});
