// Several OS processes race fenced operations on a few keys through each real
// engine; then the recorded history and the final state are checked:
//   - the mark never decreased (any two operations in real-time order);
//   - no operation with a token below a mark that had already been observed
//     (established) was applied afterwards;
//   - the final mark is the largest token applied, and the stored value is the
//     value of a last applied data operation;
//   - every operation that hit COMMIT_UNKNOWN converged to a verdict on retry.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Gate } from '../../../pkg/node.mjs';
import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';
import { RedisStore } from '../../../pkg/adapters/redis.mjs';
import { PostgresStore } from '../../../pkg/adapters/postgres.mjs';
import { MysqlStore } from '../../../pkg/adapters/mysql.mjs';
import { EtcdStore } from '../../../pkg/adapters/etcd.mjs';
import { REDIS_URL, PG_URL, MYSQL_URL, ETCD_URLS, openSqlite, redisClient, pgPool, nodeRedisClient, postgresJs, mysqlPool, etcdClient, uniqueKey } from './targets.mjs';

const WORKERS = 4;
const OPS = 60;
const EPOCH0 = 2n ** 60n; // every epoch in the race is above 2^53
const WORKER = new URL('./race-worker.mjs', import.meta.url);

function spawnWorker(config) {
  const child = fork(WORKER, [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`worker exited with ${code} before it was ready`)));
  });
  const done = new Promise((resolve, reject) => {
    child.on('message', (m) => m.history && resolve(m.history));
    child.once('exit', (code) => code !== 0 && reject(new Error(`worker exited with ${code}`)));
  });
  child.send(config);
  return { child, ready, done };
}

/** The workers' `stateCache` (undefined: the default, on): every race runs with the cache on and off (issue 14). */
let stateCache;

async function race(engine, config, openGate) {
  const keys = [0, 1, 2].map((n) => uniqueKey(`race-${engine}-${n}`));
  const workers = [];
  for (let w = 0; w < WORKERS; w++) {
    workers.push(spawnWorker({ ...config, engine, worker: w, ops: OPS, keys, epoch0: EPOCH0, seed: 1000 + w * 7919, unknownRate: 0.2, stateCache }));
  }
  await Promise.all(workers.map((w) => w.ready));
  for (const w of workers) w.child.send('go');
  const histories = await Promise.all(workers.map((w) => w.done));
  const { gate, close } = await openGate();
  const finals = {};
  for (const k of keys) finals[k] = await gate.read(k);
  await close();
  return { keys, ops: histories.flat(), finals };
}

const max = (a, b) => (a > b ? a : b);

/**
 * A race whose point is the compare-and-set retry: each run is checked in full;
 * when the workers happened not to overlap (a loaded machine can run four short
 * processes one after another), the race runs again, at most 3 times in all.
 * The stats returned are of the last run, which produced conflicts or fails.
 */
async function conflictingRace(engine, config, openGate) {
  let stats;
  for (let run = 0; run < 3; run++) {
    stats = check(await race(engine, config, openGate));
    assertMeaningful(stats);
    if (stats.conflicts > 0) break;
  }
  assert.ok(stats.conflicts > 0, 'the race produced compare-and-set conflicts (3 runs)');
  return stats;
}


function check({ keys, ops, finals }) {
  const stats = { ops: ops.length, applied: 0, rejected: 0, unknown: 0, landedUnknown: 0, conflicts: 0 };
  for (const op of ops) {
    const last = op.attempts.at(-1);
    assert.ok(last.verdict, `op ${op.worker}/${op.i} ended without a verdict: ${JSON.stringify(last.error)}`);
    const unknowns = op.attempts.filter((a) => a.error && a.error.code === 'COMMIT_UNKNOWN');
    stats.unknown += unknowns.length;
    stats.landedUnknown += unknowns.filter((a) => a.landed).length;
    stats.conflicts += op.attempts.reduce((n, a) => n + a.conflicts, 0);
    for (const a of op.attempts) {
      assert.ok(!a.error || a.error.code === 'COMMIT_UNKNOWN' || a.error.code === 'COMMIT_CONFLICT', a.error && a.error.message);
    }
    if (last.verdict.ok) stats.applied++;
    else {
      stats.rejected++;
      assert.equal(last.verdict.code, 'STALE_TOKEN');
      assert.ok(last.verdict.markBefore > op.token);
    }
  }
  for (const key of keys) {
    const mine = ops.filter((o) => o.key === key);
    // every answered attempt, and every attempt whose commit landed (verdict ok, or a lost reply)
    const seen = mine.flatMap((o) => o.attempts.filter((a) => a.verdict).map((a) => ({ op: o, ...a })));
    const applied = mine.flatMap((o) =>
      o.attempts.filter((a) => (a.verdict && a.verdict.ok) || a.landed).map((a) => ({ op: o, t0: a.t0, t1: a.t1 })),
    );
    // 1. the mark never decreased, in real-time order
    for (const x of seen) {
      assert.ok(x.verdict.markAfter >= x.verdict.markBefore);
      for (const y of seen) {
        if (x.t1 < y.t0) assert.ok(y.verdict.markBefore >= x.verdict.markAfter, `mark went down on ${key}`);
      }
    }
    // 2. nothing below an already observed mark was applied afterwards
    for (const a of applied) {
      for (const x of seen) {
        if (x.t1 < a.t0) {
          assert.ok(
            a.op.token >= x.verdict.markAfter,
            `${a.op.kind} with token ${a.op.token} applied after the mark ${x.verdict.markAfter} was established on ${key}`,
          );
        }
      }
    }
    // 3. the final mark is the largest applied token, and no attempted token is above it
    const final = finals[key];
    const top = applied.reduce((m, a) => max(m, a.op.token), 0n);
    assert.equal(BigInt(final.mark), top, `final mark of ${key}`);
    for (const o of mine) assert.ok(o.token <= top);
    // 4. the stored value is the value of a last applied data operation (none later in real time)
    const data = applied.filter((a) => a.op.kind !== 'establish');
    const lastOnes = data.filter((w) => !data.some((x) => x.t0 > w.t1));
    const expected = lastOnes.map((w) => (w.op.kind === 'set' ? w.op.value : undefined));
    assert.ok(expected.includes(final.value), `final value ${final.value} of ${key} is not one of the last writes ${expected}`);
    assert.equal(final.hasValue, final.value !== undefined);
  }
  return stats;
}

function assertMeaningful(stats) {
  // the run must actually have exercised the interesting paths
  assert.ok(stats.applied > 0 && stats.rejected > 0, JSON.stringify(stats));
  assert.ok(stats.unknown > 0 && stats.landedUnknown > 0, JSON.stringify(stats));
}

/**
 * The race on a SQL store: the table `table` is created first (one connection, then
 * closed), each worker connects with `connect()`; every history checks, and is meaningful.
 */
async function sqlRace(t, name, table, connect, Store) {
  const first = await connect();
  await new Store(first, { table }).init();
  await first.end();
  const result = await race(name, { table }, async () => {
    const c = await connect();
    return { gate: new Gate(new Store(c, { table })), close: () => c.end() };
  });
  const stats = check(result);
  assertMeaningful(stats);
  t.diagnostic(JSON.stringify(stats));
}

for (const [mode, size] of [['state cache on', undefined], ['stateCache: 0', 0]]) {
describe(`concurrency (${mode}): ${WORKERS} processes × ${OPS} operations on 3 keys`, () => {
  before(() => {
    stateCache = size;
  });
  test('sqlite (better-sqlite3, one file, WAL)', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'fencegate-race-'));
    const file = join(dir, 'race.db');
    try {
      const db = openSqlite(file);
      new SqliteStore(db); // create the table before the race
      db.close();
      const result = await race('sqlite', { file }, async () => {
        const db2 = openSqlite(file);
        return { gate: new Gate(new SqliteStore(db2)), close: async () => db2.close() };
      });
      const stats = check(result);
      assertMeaningful(stats);
      t.diagnostic(JSON.stringify(stats));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('redis (ioredis, Lua compare-and-set)', { skip: !REDIS_URL && 'FENCEGATE_REDIS_URL is not set' }, async (t) => {
    const prefix = `${uniqueKey('race')}:`;
    const stats = await conflictingRace('redis', { prefix }, async () => {
      const client = await redisClient();
      return { gate: new Gate(new RedisStore(client, { prefix })), close: async () => client.disconnect() };
    });
    t.diagnostic(JSON.stringify(stats));
  });

  test('postgresql (pg, conditional UPDATE on a version)', { skip: !PG_URL && 'FENCEGATE_PG_URL is not set' }, async (t) => {
    await sqlRace(t, 'postgres', 'fencegate_race', pgPool, PostgresStore);
  });

  test('redis (node-redis, Lua compare-and-set through EVALSHA)', { skip: !REDIS_URL && 'FENCEGATE_REDIS_URL is not set' }, async (t) => {
    const prefix = `${uniqueKey('race-nr')}:`;
    const stats = await conflictingRace('node-redis', { prefix }, async () => {
      const client = await nodeRedisClient();
      return { gate: new Gate(new RedisStore(client, { prefix })), close: () => client.close() };
    });
    t.diagnostic(JSON.stringify(stats));
  });

  test('postgresql (postgres.js, conditional UPDATE on a version)', { skip: !PG_URL && 'FENCEGATE_PG_URL is not set' }, async (t) => {
    await sqlRace(t, 'postgres-js', 'fencegate_race_js', postgresJs, PostgresStore);
  });

  test('mysql (mysql2 on MariaDB, conditional UPDATE on a version)', { skip: !MYSQL_URL && 'FENCEGATE_MYSQL_URL is not set' }, async (t) => {
    await sqlRace(t, 'mysql', 'fencegate_race', mysqlPool, MysqlStore);
  });

  test('etcd 3-member cluster (etcd3, Txn compare on mod_revision)', { skip: !ETCD_URLS && 'FENCEGATE_ETCD_URLS is not set' }, async (t) => {
    const prefix = `${uniqueKey('race')}/`;
    const stats = await conflictingRace('etcd', { prefix }, async () => {
      const client = await etcdClient();
      return { gate: new Gate(new EtcdStore(client, { prefix })), close: async () => client.close() };
    });
    t.diagnostic(JSON.stringify(stats));
    const client = await etcdClient();
    await client.delete().prefix(prefix);
    client.close();
  });
});
}
