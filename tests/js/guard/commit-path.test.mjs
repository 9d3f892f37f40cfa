// A guard refusal of fencegate's own statements (not the caller's) is GUARD_REFUSED, not
// STORE_ERROR: here a Gate's value table is itself guarded behind another fence table, so
// the Gate's own write of a key is a change "without the fence for its key". Nothing written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import pg from 'pg';
import { Gate, FencegateError } from '../../../pkg/node.mjs';
import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';
import { PostgresStore } from '../../../pkg/adapters/postgres.mjs';
import { installGuard, removeGuard } from '../../../pkg/adapters/guard.mjs';

const Database = createRequire(import.meta.url)('better-sqlite3');
const PG_URL = process.env.FENCEGATE_PG_URL;
const skip = !PG_URL && (process.env.FENCEGATE_REQUIRE_SERVICES ? false : 'FENCEGATE_PG_URL is not set');

test('PostgreSQL: a Gate.write the guard refuses is GUARD_REFUSED (callback, key, FG001 cause); the value table unchanged', { skip }, async () => {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
  try {
    await pool.query('DROP TABLE IF EXISTS fg_cp_values; DROP TABLE IF EXISTS fg_cp_fence');
    await new PostgresStore(pool, { table: 'fg_cp_fence' }).init();
    const values = await new PostgresStore(pool, { table: 'fg_cp_values' }).init();
    for (const stateCache of [0, 64]) {
      const gate = new Gate(values, { stateCache });
      const k = `a${stateCache}`;
      assert.equal((await gate.write(k, 5, 'before')).outcome, 'advance');
      await installGuard(pool, { table: 'fg_cp_values', key: 'key', fenceTable: 'fg_cp_fence' });
      for (const [key, what] of [[k, 'UPDATE'], [`new${stateCache}`, 'INSERT']]) {
        const e = await gate.write(key, 6, 'after').catch((x) => x);
        assert.ok(e instanceof FencegateError, String(e));
        assert.equal(e.code, 'GUARD_REFUSED');
        assert.equal(e.key, key);
        assert.equal(e.cause.code, 'FG001');
        assert.equal(e.cause.message, `fencegate guard: ${what} on fg_cp_values refused: key ${key} has no fence row: this transaction did not pass the fence for it`);
        assert.match(e.message, new RegExp(`^the database's guard refused host store ${e.callback}\\(${JSON.stringify(key)}\\), so nothing was written: fencegate guard: ${what}`));
      }
      const { rows } = await pool.query('SELECT key, value FROM fg_cp_values ORDER BY key');
      assert.deepEqual(rows, stateCache === 0 ? [{ key: 'a0', value: '"before"' }] : [{ key: 'a0', value: '"before"' }, { key: 'a64', value: '"before"' }]);
      await removeGuard(pool, { table: 'fg_cp_values' });
    }
  } finally {
    await pool.query('DROP TABLE IF EXISTS fg_cp_values; DROP TABLE IF EXISTS fg_cp_fence').catch(() => {});
    await pool.end();
  }
});

test('SQLite: a Gate.write the guard refuses is GUARD_REFUSED (the fencegate_pass refusal as cause); the value table unchanged', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fg-guard-cp-'));
  const db = new Database(join(dir, 'v.db'));
  try {
    db.pragma('journal_mode = WAL');
    new SqliteStore(db); // the fence table "fencegate"
    const gate = new Gate(new SqliteStore(db, { table: 'fg_values' }), { stateCache: 0 });
    assert.equal((await gate.write('a', 5, 'before')).outcome, 'advance');
    await installGuard(db, { table: 'fg_values', key: 'key' });
    for (const [key, what] of [['a', 'UPDATE'], ['b', 'INSERT']]) {
      const e = await gate.write(key, 6, 'after').catch((x) => x);
      assert.ok(e instanceof FencegateError, String(e));
      assert.equal(e.code, 'GUARD_REFUSED');
      assert.equal(e.key, key);
      assert.equal(e.cause.code, 'GUARD_REFUSED');
      assert.equal(e.cause.message, `fencegate guard: ${what} on fg_values refused: this transaction did not pass the fence for key ${key}`);
    }
    assert.deepEqual(db.prepare('SELECT key, value FROM fg_values').all(), [{ key: 'a', value: '"before"' }]);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
