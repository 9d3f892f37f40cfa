// `fencegate guard` (docs/guard.md) on a SQLite file: install, dry run, remove; usage
// errors exit 2, failures exit 1 with a JSON error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const Database = createRequire(import.meta.url)('better-sqlite3');
const CLI = new URL('../../../pkg/bin/fencegate.mjs', import.meta.url).pathname;
const run = (...args) => spawnSync(process.execPath, [CLI, 'guard', ...args], { encoding: 'utf8' });

test('fencegate guard: --dry-run prints the SQL and changes nothing; install; --remove --fence; usage errors and refused arguments exit 2', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fg-guard-cli-'));
  const file = join(dir, 'app.db');
  try {
    const db = new Database(file);
    db.exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT); CREATE TABLE fencegate (key TEXT PRIMARY KEY NOT NULL, state TEXT NOT NULL, value TEXT, version INTEGER NOT NULL) WITHOUT ROWID; INSERT INTO orders VALUES (1, 'new')");
    db.close();
    const triggers = () => {
      const d = new Database(file);
      try {
        return d.prepare("SELECT name FROM sqlite_schema WHERE type = 'trigger' ORDER BY name").pluck().all();
      } finally {
        d.close();
      }
    };
    const dry = run('--sqlite', file, '--table', 'orders', '--key', "'orders/' || id", '--dry-run');
    assert.equal(dry.status, 0, dry.stderr);
    assert.match(dry.stdout, /^-- fencegate guard \(docs\/guard\.md\): orders behind the fence table fencegate\nBEGIN IMMEDIATE;\n/);
    assert.match(dry.stdout, /SELECT fencegate_pass\('fencegate', CAST\(\('orders\/' \|\| NEW\."id"\) AS TEXT\), 'INSERT', 'orders', \(SELECT f\.version FROM "fencegate" AS f WHERE f\.key = CAST\(\('orders\/' \|\| NEW\."id"\) AS TEXT\)\)\);/);
    assert.deepEqual(triggers(), []);
    const done = run('--sqlite', file, '--table', 'orders', '--key', "'orders/' || id");
    assert.equal(done.status, 0, done.stderr);
    assert.deepEqual(JSON.parse(done.stdout), { engine: 'sqlite', table: 'orders', fenceTable: 'fencegate', removed: false });
    assert.deepEqual(triggers(), ['fencegate_fence_fencegate_bd', 'fencegate_fence_fencegate_bi', 'fencegate_fence_fencegate_bu', 'fencegate_guard_orders_bd', 'fencegate_guard_orders_bi', 'fencegate_guard_orders_bu']);
    const removed = run('--sqlite', file, '--remove', '--table', 'orders', '--fence');
    assert.equal(removed.status, 0, removed.stderr);
    assert.deepEqual(JSON.parse(removed.stdout), { engine: 'sqlite', table: 'orders', fenceTable: 'fencegate', removed: true });
    assert.deepEqual(triggers(), []);
    for (const args of [[], ['--sqlite', file], ['--sqlite', file, '--table', 'orders'], ['--sqlite', file, '--remove'], ['--sqlite', file, '--table', 'orders', '--key', 'id', '--fence'], ['--sqlite', file, '--postgres', 'x', '--table', 'orders', '--key', 'id'], ['--sqlite', file, '--bogus']]) {
      const r = run(...args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /^fencegate: .+\nusage: fencegate reconcile/);
    }
    // an argument the library refused (INVALID_ARGUMENT) is a usage error: exit 2, JSON error (the CLI's one rule)
    const bad = run('--sqlite', file, '--table', 'orders', '--key', "'orders/' || nosuch");
    assert.equal(bad.status, 2);
    assert.equal(JSON.parse(bad.stderr).error.code, 'INVALID_ARGUMENT');
    assert.match(JSON.parse(bad.stderr).error.message, /no such column: nosuch/);
    assert.deepEqual(triggers(), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
