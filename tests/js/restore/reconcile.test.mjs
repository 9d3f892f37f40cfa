// Quarantine, inspect, raise with revoke, reconcile() and the `fencegate
// reconcile` command (issue 9), in memory and on a SQLite file. The restore
// drills on real stores are tests/js/restore/drills.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { MemoryGate, Gate, Issuer, MemoryHostStore, reconcile, decodeState, errorCodes, FencegateError } from '../../../pkg/node.mjs';
import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';

const require = createRequire(import.meta.url);
const CLI = new URL('../../../pkg/bin/fencegate.mjs', import.meta.url).pathname;
const T = 1_700_000_000_000;

test('codes are only added at the end: QUARANTINED, OP_ID_REUSED, the issuer codes, then the own-data codes', () => {
  assert.deepEqual(errorCodes().slice(22), ['QUARANTINED', 'OP_ID_REUSED', 'LEASE_NOT_HELD', 'REQUEST_ID_REUSED', 'CALLBACK_FAILED', 'DUPLICATE_OPERATION', 'GUARD_REFUSED']);
  assert.equal(errorCodes().length, 29);
});

test('MemoryGate.quarantine: never lowers, refuses up to the floor, lifted by a larger epoch; bigint floors', () => {
  const g = new MemoryGate();
  g.write('k', 50, 'v50', { holder: 'A' });
  assert.deepEqual(g.quarantine('k', 40), { key: 'k', ok: true, changed: true, floor: 50, markBefore: 50, markAfter: 50 });
  assert.deepEqual(g.quarantine('k', 50), { key: 'k', ok: true, changed: false, floor: 50, markBefore: 50, markAfter: 50 });
  assert.deepEqual(g.state('k'), { v: 4, mark: '50', holder: 'A', ops: [], evicted: null, quarantine: '50' });
  assert.deepEqual(g.write('k', 50, 'x', { holder: 'A' }), { key: 'k', ok: false, outcome: 'reject', code: 'QUARANTINED', token: 50, markBefore: 50, markAfter: 50 });
  assert.equal(g.write('k', 49, 'x').code, 'QUARANTINED');
  assert.equal(g.write('k', undefined, 'x').code, 'MISSING_TOKEN');
  assert.equal(g.value('k'), 'v50');
  assert.equal(g.write('k', 51, 'v51').outcome, 'advance');
  assert.deepEqual(g.state('k'), { v: 1, mark: '51' });

  const big = 2n ** 64n - 2n;
  assert.deepEqual(g.quarantine('b', big), { key: 'b', ok: true, changed: true, floor: big, markBefore: 0, markAfter: big });
  assert.equal(g.establish('b', big).code, 'QUARANTINED');
  assert.equal(g.establish('b', big + 1n).outcome, 'advance');
  assert.deepEqual(decodeState({ v: 3, mark: '9', holder: null, ops: {}, evicted: null, quarantine: '9' }), { mark: 9, quarantine: 9 });
  for (const bad of [-1, 0.5, '9', null, 2n ** 64n]) {
    assert.throws(() => g.quarantine('k', bad), (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT', String(bad));
  }
  assert.throws(() => decodeState('{"v":3,"mark":"5","holder":null,"ops":{},"evicted":null,"quarantine":"6"}'), { code: 'CORRUPT_STATE' });
});

test('Gate.quarantine commits only the fence state, keeps the value; inspect shows the record', async () => {
  const store = new MemoryHostStore();
  const gate = new Gate(store);
  await gate.write('k', 7, 'seven', { holder: 'A' });
  assert.deepEqual(await gate.inspect('k'), { key: 'k', exists: true, mark: 7, holder: 'A', quarantine: null });
  assert.deepEqual(await gate.quarantine('k', 9), { key: 'k', ok: true, changed: true, floor: 9, markBefore: 7, markAfter: 9 });
  const version = store.load('k').version;
  assert.equal((await gate.quarantine('k', 8)).changed, false);
  assert.equal(store.load('k').version, version); // nothing written
  assert.deepEqual(await gate.read('k'), { mark: 9, value: 'seven', hasValue: true });
  assert.deepEqual(JSON.parse(store.load('k').state), { v: 4, mark: '9', holder: null, ops: [], evicted: null, quarantine: '9' });
  assert.equal((await gate.delete('k', 9)).code, 'QUARANTINED');
  assert.equal((await gate.write('k', 10, 'ten', { holder: 'B' })).outcome, 'advance');
  assert.deepEqual(await gate.inspect('k'), { key: 'k', exists: true, mark: 10, holder: 'B', quarantine: null });
});

test('reconcile: argument errors', async () => {
  const store = new MemoryHostStore();
  const issuer = new Issuer(store);
  const gate = new Gate(store);
  for (const bad of [undefined, { issuer, gate }, { issuer, gate, scopes: {} }, { issuer, gate, scopes: { s: 'k' } }, { issuer: gate, gate, scopes: { s: [] } }, { issuer, gate, scopes: { s: [] }, now: -1 }]) {
    await assert.rejects(reconcile(bad), { code: 'INVALID_ARGUMENT' });
  }
});

test('reconcile: a healthy scope changes nothing; a corrupt record is reported and left alone', async () => {
  const store = new MemoryHostStore();
  const issuer = new Issuer(store);
  const gate = new Gate(store);
  const a = await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 1000, now: T });
  await gate.establish('k1', a.epoch, { holder: a.holder });
  store.commit('bad', null, { v: 9 }, { kind: 'none' });
  const r = await reconcile({ issuer, gate, scopes: [{ scope: 's', keys: ['k1', 'bad'] }], now: T + 1 });
  assert.deepEqual(r.changes, []);
  assert.equal(r.changed, false);
  // The report names the lease's holder, never its lease id (issue 20: that id renews and releases it).
  assert.deepEqual(r.scopes[0].issuer, { epoch: 1, lease: { holder: 'A', expiresAt: T + 1000, live: true } });
  assert.ok(!JSON.stringify(r).includes(a.leaseId));
  assert.deepEqual(r.scopes[0].errors.map((e) => [e.key, e.code]), [['bad', 'CORRUPT_STATE']]);
  assert.equal(r.errors, 1);
  assert.deepEqual(JSON.parse(store.load('bad').state), { v: 9 });
});

test('reconcile: a dry run reports exactly what the real run then does', async () => {
  const store = new MemoryHostStore();
  const issuer = new Issuer(store);
  const gate = new Gate(store);
  await gate.establish('hi', 12);
  await gate.establish('lo', 3);
  const scopes = { s: ['hi', 'lo', 'missing'] };
  const dry = await reconcile({ issuer, gate, scopes, now: T, dryRun: true });
  assert.equal((await issuer.current('s')).epoch, 0);
  assert.equal(await gate.mark('lo'), 3);
  const real = await reconcile({ issuer, gate, scopes, now: T });
  assert.deepEqual(real.changes, dry.changes);
  assert.deepEqual(real.changes, [
    { scope: 's', target: 'issuer', action: 'raise', epochBefore: 0, epochAfter: 12, revoked: null },
    { scope: 's', target: 'resource', key: 'lo', action: 'quarantine', markBefore: 3, markAfter: 12, floor: 12 },
    { scope: 's', target: 'resource', key: 'missing', action: 'quarantine', markBefore: 0, markAfter: 12, floor: 12 },
  ]);
  assert.equal((await reconcile({ issuer, gate, scopes, now: T })).changed, false);
  assert.equal((await issuer.acquire({ scope: 's', holder: 'N', ttlMs: 10, now: T })).epoch, 13);
});

const sqliteAvailable = (() => {
  try {
    require.resolve('better-sqlite3');
    return true;
  } catch {
    return false;
  }
})();

test('fencegate reconcile (CLI) on a SQLite file: dry run, run, run again', { skip: !sqliteAvailable && 'better-sqlite3 missing' }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fencegate-cli-'));
  const file = path.join(dir, 'app.db');
  try {
    const Database = require('better-sqlite3');
    const db = new Database(file);
    const store = new SqliteStore(db);
    const issuer = new Issuer(store);
    const gate = new Gate(store);
    await issuer.raise({ scope: 'orders', atLeast: 5, now: T });
    await gate.write('orders/1', 9, 'nine', { holder: 'A' });
    await gate.write('orders/2', 2, 'two');
    db.close();
    const cli = (...args) =>
      JSON.parse(execFileSync(process.execPath, [CLI, 'reconcile', '--sqlite', file, '--scope', 'orders', '--key', 'orders/1', '--key', 'orders/2', '--now', String(T), ...args], { encoding: 'utf8' }));
    const dry = cli('--dry-run');
    assert.equal(dry.dryRun, true);
    const expected = [
      { scope: 'orders', target: 'issuer', action: 'raise', epochBefore: 5, epochAfter: 9, revoked: null },
      { scope: 'orders', target: 'resource', key: 'orders/2', action: 'quarantine', markBefore: 2, markAfter: 9, floor: 9 },
    ];
    assert.deepEqual(dry.changes, expected);
    assert.deepEqual(cli().changes, expected);
    const again = cli();
    assert.deepEqual([again.changed, again.changes], [false, []]);
    assert.deepEqual(again.scopes[0].keys.map((k) => [k.key, k.mark, k.holder, k.quarantine]), [
      ['orders/1', 9, 'A', null],
      ['orders/2', 9, null, 9],
    ]);
    // Usage errors exit 2; a missing file exits 1 with a JSON error.
    assert.equal(spawnSync(process.execPath, [CLI, 'reconcile', '--sqlite', file, '--scope', 'orders']).status, 2);
    assert.equal(spawnSync(process.execPath, [CLI, 'frobnicate']).status, 2);
    const missing = spawnSync(process.execPath, [CLI, 'reconcile', '--sqlite', path.join(dir, 'nope.db'), '--scope', 's', '--key', 'k'], { encoding: 'utf8' });
    assert.equal(missing.status, 1);
    assert.match(JSON.parse(missing.stderr).error.message, /nope\.db|unable to open/i);
    // A corrupt record: the report lists it and the exit status is 3.
    const db2 = new Database(file);
    db2.prepare("INSERT INTO fencegate (key, state, value, version) VALUES ('orders/3', '{\"v\":7}', NULL, 1)").run();
    db2.close();
    const corrupt = spawnSync(process.execPath, [CLI, 'reconcile', '--sqlite', file, '--scope', 'orders', '--key', 'orders/3', '--now', String(T)], { encoding: 'utf8' });
    assert.equal(corrupt.status, 3);
    assert.deepEqual(JSON.parse(corrupt.stdout).scopes[0].errors.map((e) => [e.key, e.code]), [['orders/3', 'CORRUPT_STATE']]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

const services = [
  process.env.FENCEGATE_REDIS_URL && {
    name: 'redis',
    async open(run) {
      const { default: Redis } = await import('ioredis');
      const { RedisStore } = await import('../../../pkg/adapters/redis.mjs');
      const client = new Redis(process.env.FENCEGATE_REDIS_URL, { maxRetriesPerRequest: 2 });
      return {
        store: new RedisStore(client, { prefix: `${run}:` }),
        args: ['--redis', process.env.FENCEGATE_REDIS_URL, '--prefix', `${run}:`],
        async close() {
          const keys = await client.keys(`${run}:*`);
          if (keys.length > 0) await client.del(...keys);
          client.disconnect();
        },
      };
    },
  },
  process.env.FENCEGATE_PG_URL && {
    name: 'postgres',
    async open(run) {
      const { default: pg } = await import('pg');
      const { PostgresStore } = await import('../../../pkg/adapters/postgres.mjs');
      const pool = new pg.Pool({ connectionString: process.env.FENCEGATE_PG_URL, max: 2 });
      const table = run.replace(/-/g, '_');
      return {
        store: await new PostgresStore(pool, { table }).init(),
        args: ['--postgres', process.env.FENCEGATE_PG_URL, '--table', table],
        async close() {
          await pool.query(`DROP TABLE IF EXISTS ${table}`);
          await pool.end();
        },
      };
    },
  },
].filter(Boolean);

for (const service of services) {
  test(`fencegate reconcile (CLI) on ${service.name}: an issuer behind and a key behind, then nothing`, async () => {
    const s = await service.open(`fg_cli_${process.pid}_${Math.random().toString(36).slice(2, 8)}`);
    try {
      const issuer = new Issuer(s.store);
      const gate = new Gate(s.store);
      await issuer.raise({ scope: 'jobs', atLeast: 3, now: T });
      await gate.establish('a', 7n, { holder: 'A' });
      await gate.establish('b', 2n);
      const cli = () => {
        const r = spawnSync(process.execPath, [CLI, 'reconcile', ...s.args, '--scope', 'jobs', '--key', 'a', '--key', 'b', '--now', String(T)], { encoding: 'utf8' });
        assert.equal(r.status, 0, r.stderr);
        return JSON.parse(r.stdout);
      };
      assert.deepEqual(cli().changes, [
        { scope: 'jobs', target: 'issuer', action: 'raise', epochBefore: 3, epochAfter: 7, revoked: null },
        { scope: 'jobs', target: 'resource', key: 'b', action: 'quarantine', markBefore: 2, markAfter: 7, floor: 7 },
      ]);
      assert.equal(cli().changed, false);
      assert.equal((await gate.write('b', 7, 'x')).code, 'QUARANTINED');
      assert.equal((await issuer.acquire({ scope: 'jobs', holder: 'N', ttlMs: 10, now: T })).epoch, 8);
    } finally {
      await s.close();
    }
  });
}

/** A MemoryHostStore copy: every record's state and value (what a backup holds). */
function copyOf(store) {
  const out = new MemoryHostStore();
  for (const key of store.keys()) {
    const r = store.load(key);
    out.commit(key, null, JSON.parse(r.state), r.value === undefined ? { kind: 'none' } : { kind: 'set', value: r.value });
  }
  return out;
}

test('reconcile over random histories with restores: never lowers, idempotent, then no epoch ≤ any mark is issued', async () => {
  let seed = 0x9e3779b9;
  const rand = (n) => {
    seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
    return seed % n;
  };
  const keys = ['k0', 'k1', 'k2'];
  let live = 0;
  let changedRounds = 0;
  for (let round = 0; round < 150; round++) {
    let issuerStore = new MemoryHostStore();
    let resourceStore = new MemoryHostStore();
    const backups = { issuer: [copyOf(issuerStore)], resources: [copyOf(resourceStore)] };
    let now = T;
    for (let step = 0; step < 30; step++) {
      now += 1 + rand(40);
      const issuer = new Issuer(issuerStore);
      const gate = new Gate(resourceStore);
      switch (rand(6)) {
        case 0:
        case 1: {
          const l = await issuer.acquire({ scope: 's', holder: `H${rand(3)}`, ttlMs: 1 + rand(60), now });
          if (l.ok) for (const k of keys) if (rand(2)) await gate.write(k, l.epoch, step, { holder: l.holder });
          break;
        }
        case 2:
          backups.issuer.push(copyOf(issuerStore));
          backups.resources.push(copyOf(resourceStore));
          break;
        case 3:
          issuerStore = copyOf(backups.issuer[rand(backups.issuer.length)]);
          break;
        case 4:
          resourceStore = copyOf(backups.resources[rand(backups.resources.length)]);
          break;
        default:
          if (rand(2)) await gate.quarantine(keys[rand(3)], rand(5));
      }
    }
    const issuer = new Issuer(issuerStore);
    const gate = new Gate(resourceStore);
    now += rand(100);
    const before = { epoch: (await issuer.current('s')).epoch, marks: await Promise.all(keys.map((k) => gate.mark(k))) };
    const report = await reconcile({ issuer, gate, scopes: { s: keys }, now });
    const after = { epoch: (await issuer.current('s')).epoch, marks: await Promise.all(keys.map((k) => gate.mark(k))) };
    assert.ok(after.epoch >= before.epoch, `round ${round}: issuer lowered`);
    after.marks.forEach((m, i) => {
      assert.ok(m >= before.marks[i], `round ${round}: ${keys[i]} lowered`);
      assert.ok(m >= after.epoch, `round ${round}: ${keys[i]} below the issuer`);
    });
    assert.ok(after.epoch >= Math.max(...after.marks), `round ${round}: issuer below a mark`);
    changedRounds += report.changed ? 1 : 0;
    assert.equal(report.errors, 0);
    const again = await reconcile({ issuer, gate, scopes: { s: keys }, now });
    assert.deepEqual(again.changes, [], `round ${round}: second run changed something`);
    // Whoever holds the live lease can work; otherwise the next epoch is above every mark and is accepted everywhere.
    const cur = await issuer.current('s');
    if (cur.lease === null || cur.lease.expiresAt <= now) {
      const n = await issuer.acquire({ scope: 's', holder: 'N', ttlMs: 10, now });
      assert.ok(n.epoch > Math.max(...after.marks));
      for (const k of keys) assert.equal((await gate.establish(k, n.epoch, { holder: 'N' })).outcome, 'advance');
    } else {
      for (const k of keys) {
        // A key the host quarantined itself stays quarantined (reconcile never lifts one); elsewhere the live holder works.
        const expected = (await gate.inspect(k)).quarantine === null ? null : 'QUARANTINED';
        assert.equal((await gate.write(k, cur.epoch, 'live', { holder: cur.lease.holder })).code, expected, `round ${round}: live holder at ${k}`);
        live++;
      }
    }
  }
  // The histories exercise both branches and real repairs.
  assert.ok(live > 0 && changedRounds > 20, `live checks ${live}, rounds with changes ${changedRounds}`);
});

test('reconcile reports a conflict whose lease has ended without revoking anything; the next epoch is above it', async () => {
  const issuerStore = new MemoryHostStore();
  const gate = new Gate(new MemoryHostStore());
  const issuer = new Issuer(issuerStore);
  await issuer.raise({ scope: 's', atLeast: 40, now: T });
  const backup = issuerStore.load('issuer:s').state;
  const a = await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 100, now: T });
  await gate.establish('k', a.epoch, { holder: 'A' });
  const restoredStore = new MemoryHostStore();
  restoredStore.commit('issuer:s', null, JSON.parse(backup), { kind: 'none' });
  const restored = new Issuer(restoredStore);
  const b = await restored.acquire({ scope: 's', holder: 'B', ttlMs: 100, now: T + 1 });
  assert.equal((await gate.write('k', b.epoch, 'b', { holder: 'B' })).code, 'EPOCH_CONFLICT');
  for (const now of [T + 500, T + 501]) {
    const r = await reconcile({ issuer: restored, gate, scopes: { s: ['k'] }, now });
    assert.deepEqual(r.changes, []);
    assert.deepEqual(r.scopes[0].conflicts, [{ key: 'k', epoch: 41, resourceHolder: 'A', leaseHolder: 'B', live: false }]);
  }
  assert.equal((await restored.acquire({ scope: 's', holder: 'C', ttlMs: 100, now: T + 502 })).epoch, 42);
});
