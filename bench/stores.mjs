// Host-store benchmark: fenced writes per second through fencegate against raw
// unfenced writes of the same value with the same client and transaction style
// (and the same fencing written by hand: one transaction, Lua script or UPDATE), in one run; then
// the compare-and-set conflict retries under 4-way contention on one key.
// Run with real services: scripts/bench-stores.sh (or set FENCEGATE_REDIS_URL /
// FENCEGATE_PG_URL / FENCEGATE_MYSQL_URL yourself). Also writes build/stores-bench.json (git-ignored).
// SQLite, Redis and PostgreSQL (issue 14): raw, hand-written fencing, fencegate with its state cache and with
// `stateCache: 0`, medians of BENCH_ROUNDS (default 5) interleaved rounds. Flags: `--json` prints one final
// line `{"stores":{"sqlite":{raw,hand,fencegate,fencegateNoCache,…},"redis":…,"postgres":…}}`;
// `--no-contention` skips the 4-process contention part; `--only=redis,postgres` runs just those stores.
// etcd (a 3-member cluster, FENCEGATE_ETCD_URLS): raw put, a hand-written fencing Txn, fencegate cached / stateCache: 0.
import { fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// FENCEGATE_BENCH_PKG: another package directory to measure (e.g. an earlier commit's pkg/, for a before/after table).
const PKG = process.env.FENCEGATE_BENCH_PKG ? new URL(`file://${join(process.env.FENCEGATE_BENCH_PKG, '/')}`) : new URL('../pkg/', import.meta.url);
const { Gate: GateOf } = await import(new URL('node.mjs', PKG));
const { SqliteStore } = await import(new URL('adapters/sqlite.mjs', PKG));
const { RedisStore } = await import(new URL('adapters/redis.mjs', PKG));
const { PostgresStore } = await import(new URL('adapters/postgres.mjs', PKG));
const { MysqlStore } = await import(new URL('adapters/mysql.mjs', PKG));
const { EtcdStore } = await import(new URL('adapters/etcd.mjs', PKG));

/** A Gate; `stateCache: 0` is dropped for a package from before the option (it had no cache). */
class Gate extends GateOf {
  constructor(store, options) {
    try {
      super(store, options);
    } catch (e) {
      if (options?.stateCache === undefined || e.code !== 'INVALID_ARGUMENT') throw e;
      super(store, {});
    }
  }
}
import {
  openSqlite, redisClient, pgPool, nodeRedisClient, postgresJs, mysqlPool, etcdClient, REDIS_URL, PG_URL, MYSQL_URL, ETCD_URLS, uniqueKey,
} from '../tests/js/stores/targets.mjs';

const JSON_OUT = process.argv.includes('--json');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const results = [];
/** The issue 14 table: per store, writes/s of raw, hand-written fencing, fencegate (cache on) and fencegate (stateCache: 0). */
const table = {};

async function rate(label, n, fn) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn(i);
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  return { label, n, perSecond: Math.round(n / s), usPerOp: +((s / n) * 1e6).toFixed(1) };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * Runs every variant `rounds` times, interleaved (round 1 of each, then round 2, …; the order rotates each
 * round), after a warm-up, and keeps each one's median round (shared, noisy cores).
 */
async function measure(variants, n, rounds = ROUNDS) {
  for (const [, fn] of variants) for (let i = 0; i < Math.min(200, n); i++) await fn(i); // warm-up
  const seen = new Map(variants.map(([label]) => [label, []]));
  for (let r = 0; r < rounds; r++) {
    for (let j = 0; j < variants.length; j++) {
      const [label, fn] = variants[(j + r) % variants.length];
      seen.get(label).push((await rate(label, n, fn)).perSecond);
    }
  }
  return variants.map(([label]) => {
    const perSecond = Math.round(median(seen.get(label)));
    // the best round too: on shared cores, interference only ever slows a round down
    return { label, n, rounds, perSecond, best: Math.max(...seen.get(label)), usPerOp: +(1e6 / perSecond).toFixed(1) };
  });
}

/** Prints the rows with ratios to raw (row 0) and, when there is one, to the hand-written fencing (row `hand`). */
function report(engine, rows, hand = -1) {
  const raw = rows[0].perSecond;
  for (const r of rows) {
    r.ratioToRaw = +(r.perSecond / raw).toFixed(3);
    if (hand >= 0) r.ratioToHand = +(r.perSecond / rows[hand].perSecond).toFixed(3);
  }
  results.push({ engine, rows });
  console.log(`\n${engine}`);
  for (const r of rows) {
    console.log(
      `  ${r.label.padEnd(58)} ${String(r.perSecond).padStart(8)} writes/s  ${String(r.usPerOp).padStart(7)} µs  ×${r.ratioToRaw.toFixed(3)} raw` +
        (hand >= 0 ? `  ×${r.ratioToHand.toFixed(3)} hand` : ''),
    );
  }
}

/** The four figures of one store for the issue 14 table. */
function keep(store, rows) {
  const [raw, hand, fencegate, fencegateNoCache] = rows.map((r) => r.perSecond);
  const [bRaw, bHand, bFencegate, bNoCache] = rows.map((r) => r.best);
  table[store] = {
    raw,
    hand,
    fencegate,
    fencegateNoCache,
    ratioToRaw: +(fencegate / raw).toFixed(3),
    ratioToHand: +(fencegate / hand).toFixed(3),
    noCacheRatioToRaw: +(fencegateNoCache / raw).toFixed(3),
    best: { raw: bRaw, hand: bHand, fencegate: bFencegate, fencegateNoCache: bNoCache, ratioToRaw: +(bFencegate / bRaw).toFixed(3), ratioToHand: +(bFencegate / bHand).toFixed(3) },
  };
}

async function sqlite() {
  const dir = mkdtempSync(join(tmpdir(), 'fencegate-bench-'));
  const db = openSqlite(join(dir, 'bench.db'));
  const store = new SqliteStore(db);
  // SqliteStore is transaction-shaped and has commitFrom: with the state cache, a cached write is one
  // conditional UPDATE (committed on its own); stateCache: 0 runs the BEGIN IMMEDIATE transaction every time
  const gate = new Gate(store);
  const gateNoCache = new Gate(store, { stateCache: 0 });
  const key = 'k';
  await gate.write(key, 1, 'init');
  const raw = db.prepare('UPDATE fencegate SET value = ?, version = version + 1 WHERE key = ?');
  const rawTx = db.transaction((v) => raw.run(v, key));
  const sel = db.prepare('SELECT state FROM fencegate WHERE key = ?');
  const upd = db.prepare('UPDATE fencegate SET state = ?, value = ?, version = version + 1 WHERE key = ?');
  const handTx = db.transaction((token, v) => {
    const mark = BigInt(JSON.parse(sel.get(key).state).mark);
    if (token < mark) return false;
    upd.run(`{"v":1,"mark":"${token > mark ? token : mark}"}`, v, key);
    return true;
  });
  // The same two written as one statement each, committed on its own (autocommit), the shape of fencegate's
  // cached write: the fair baselines for it (same client, same WAL settings, one commit per write).
  db.exec('CREATE TABLE IF NOT EXISTS fencegate_bench_hand (key TEXT PRIMARY KEY, mark INTEGER NOT NULL, value TEXT)');
  db.prepare('INSERT OR REPLACE INTO fencegate_bench_hand (key, mark, value) VALUES (?, 1, NULL)').run(key);
  const handOne = db.prepare('UPDATE fencegate_bench_hand SET mark = ?, value = ? WHERE key = ? AND mark <= ?');
  const n = 10000;
  const rows = await measure([
    ['raw UPDATE in a transaction (unfenced)', (i) => rawTx.immediate(JSON.stringify(`v${i}`))],
    ['hand-written JS fencing in one transaction', (i) => handTx.immediate(1n, JSON.stringify(`v${i}`))],
    ['fencegate Gate + SqliteStore', (i) => gate.write(key, 1, `v${i}`)],
    ['fencegate Gate + SqliteStore, stateCache: 0', (i) => gateNoCache.write(key, 1, `v${i}`)],
    ['raw UPDATE, one statement (autocommit, unfenced)', (i) => raw.run(JSON.stringify(`v${i}`), key)],
    ['hand-written fencing: one conditional UPDATE … WHERE mark <= ?', (i) => handOne.run(1, JSON.stringify(`v${i}`), key, 1)],
  ], n);
  report('sqlite (better-sqlite3, WAL, synchronous=NORMAL, one commit per write)', rows, 1);
  keep('sqlite', rows);
  // fencegate's cached write against the one-statement baselines as well
  const [rawOne, handOneRow] = [rows[4], rows[5]];
  Object.assign(table.sqlite, {
    rawStatement: rawOne.perSecond,
    handStatement: handOneRow.perSecond,
    ratioToRawStatement: +(rows[2].perSecond / rawOne.perSecond).toFixed(3),
    ratioToHandStatement: +(rows[2].perSecond / handOneRow.perSecond).toFixed(3),
  });
  console.log(
    `  fencegate (cached) against the one-statement baselines: ×${table.sqlite.ratioToRawStatement.toFixed(3)} raw, ×${table.sqlite.ratioToHandStatement.toFixed(3)} hand`,
  );
  db.close();
  rmSync(dir, { recursive: true, force: true });
}

// Hand-written fencing on Redis: one Lua script that compares the token with the stored mark and writes both.
const HAND_LUA =
  "local m = tonumber(redis.call('HGET', KEYS[1], 'mark') or '0') " +
  "if tonumber(ARGV[1]) < m then return 0 end " +
  "redis.call('HSET', KEYS[1], 'mark', ARGV[1], 'value', ARGV[2]) return 1";

async function redis() {
  const client = await redisClient();
  const prefix = `${uniqueKey('bench')}:`;
  const store = new RedisStore(client, { prefix });
  const gate = new Gate(store);
  const gateNoCache = new Gate(store, { stateCache: 0 });
  await gate.write('k', 1, 'init');
  await gateNoCache.write('k', 1, 'init');
  const k = store.redisKey('k');
  const hk = `${prefix}hand`;
  client.defineCommand('fencegateBenchRaw', {
    numberOfKeys: 1,
    lua: "redis.call('HSET', KEYS[1], 'value', ARGV[1]) redis.call('HINCRBY', KEYS[1], 'version', 1) return 1",
  });
  client.defineCommand('fencegateBenchHand', { numberOfKeys: 1, lua: HAND_LUA });
  const n = 2000;
  const rows = await measure([
    ['raw Lua write of value+version (unfenced, 1 round trip)', (i) => client.fencegateBenchRaw(k, JSON.stringify(`v${i}`))],
    ['hand-written fencing: one Lua script (compare mark, write)', (i) => client.fencegateBenchHand(hk, '1', JSON.stringify(`v${i}`))],
    ['fencegate Gate + RedisStore (cached: one EVALSHA)', (i) => gate.write('k', 1, `v${i}`)],
    ['fencegate Gate + RedisStore, stateCache: 0 (HMGET + EVALSHA)', (i) => gateNoCache.write('k', 1, `v${i}`)],
  ], n);
  report('redis (ioredis, loopback)', rows, 1);
  keep('redis', rows);
  await client.del(k, hk);
  client.disconnect();
}

async function postgres() {
  const pool = await pgPool();
  const table = 'fencegate_bench';
  const store = await new PostgresStore(pool, { table }).init();
  await pool.query('CREATE TABLE IF NOT EXISTS fencegate_bench_hand (key text PRIMARY KEY, mark bigint NOT NULL, value text)');
  const gate = new Gate(store);
  const gateNoCache = new Gate(store, { stateCache: 0 });
  const key = uniqueKey('bench');
  await gate.write(key, 1, 'init');
  await pool.query('INSERT INTO fencegate_bench_hand (key, mark, value) VALUES ($1, 1, NULL) ON CONFLICT (key) DO NOTHING', [key]);
  const n = 1500;
  // Raw and hand-written statements are named prepared statements too, as the store's are
  // (PostgresStore's `prepare` option, default on): the ratios compare like with like.
  const rows = await measure([
    ['raw UPDATE value, version (unfenced, 1 statement)', (i) =>
      pool.query({ name: 'bench-raw', text: `UPDATE ${table} SET value = $1, version = version + 1 WHERE key = $2`, values: [JSON.stringify(`v${i}`), key] })],
    ['hand-written fencing: one conditional UPDATE … WHERE mark <= $token', (i) =>
      pool.query({ name: 'bench-hand', text: 'UPDATE fencegate_bench_hand SET mark = $1, value = $2 WHERE key = $3 AND mark <= $1', values: [1, JSON.stringify(`v${i}`), key] })],
    ['fencegate Gate + PostgresStore (cached: one conditional UPDATE)', (i) => gate.write(key, 1, `v${i}`)],
    ['fencegate Gate + PostgresStore, stateCache: 0 (SELECT + UPDATE)', (i) => gateNoCache.write(key, 1, `v${i}`)],
  ], n);
  report('postgresql (pg Pool, loopback, fsync off)', rows, 1);
  keep('postgres', rows);
  await pool.query(`DELETE FROM ${table} WHERE key = $1`, [key]);
  await pool.query('DELETE FROM fencegate_bench_hand WHERE key = $1', [key]);
  await pool.end();
}

async function nodeRedis() {
  const client = await nodeRedisClient();
  const prefix = `${uniqueKey('bench-nr')}:`;
  const store = new RedisStore(client, { prefix });
  const gate = new Gate(store);
  await gate.write('k', 1, 'init');
  const k = store.redisKey('k');
  const lua = "redis.call('HSET', KEYS[1], 'value', ARGV[1]) redis.call('HINCRBY', KEYS[1], 'version', 1) return 1";
  const sha = await client.sendCommand(['SCRIPT', 'LOAD', lua]);
  const n = 2000;
  report('redis (node-redis, loopback)', await measure([
    ['raw Lua write of value+version (unfenced, 1 round trip)', (i) => client.sendCommand(['EVALSHA', sha, '1', k, JSON.stringify(`v${i}`)])],
    ['fencegate Gate + RedisStore (cached: one EVALSHA)', (i) => gate.write('k', 1, `v${i}`)],
  ], n));
  await client.del(k);
  await client.close();
}

async function postgresJsBench() {
  const sql = await postgresJs();
  const table = 'fencegate_bench';
  const store = await new PostgresStore(sql, { table }).init();
  const gate = new Gate(store);
  const key = uniqueKey('bench-js');
  await gate.write(key, 1, 'init');
  const n = 1500;
  report('postgresql (postgres.js, loopback, fsync off)', await measure([
    ['raw UPDATE value, version (unfenced, 1 statement)', (i) =>
      sql.unsafe(`UPDATE ${table} SET value = $1, version = version + 1 WHERE key = $2`, [JSON.stringify(`v${i}`), key])],
    ['fencegate Gate + PostgresStore (cached: one conditional UPDATE)', (i) => gate.write(key, 1, `v${i}`)],
  ], n));
  await sql.unsafe(`DELETE FROM ${table} WHERE key = $1`, [key]);
  await sql.end();
}

async function mysql() {
  const pool = await mysqlPool();
  const table = 'fencegate_bench';
  const store = await new MysqlStore(pool, { table }).init();
  const gate = new Gate(store);
  const key = uniqueKey('bench');
  await gate.write(key, 1, 'init');
  const n = 1500;
  report('mysql (mysql2 Pool, MariaDB 10.11, loopback, redo-log flush off)', await measure([
    ['raw UPDATE value, version (unfenced, 1 statement)', (i) =>
      pool.execute(`UPDATE ${table} SET value = ?, version = version + 1 WHERE k = ?`, [JSON.stringify(`v${i}`), key])],
    ['fencegate Gate + MysqlStore (cached: one conditional UPDATE)', (i) => gate.write(key, 1, `v${i}`)],
  ], n));
  await pool.execute(`DELETE FROM ${table} WHERE k = ?`, [key]);
  await pool.end();
}

/** A mark as fixed-width decimal text, so that etcd's byte compare of values orders marks. */
const pad20 = (n) => String(n).padStart(20, '0');

async function etcd() {
  const client = await etcdClient();
  const prefix = `${uniqueKey('bench-etcd')}/`;
  const store = new EtcdStore(client, { prefix });
  const gate = new Gate(store);
  const gateNoCache = new Gate(store, { stateCache: 0 });
  await gate.write('k', 1, 'init');
  const rawKey = Buffer.from(`${prefix}raw`);
  const markKey = Buffer.from(`${prefix}hand/mark`);
  const handValue = Buffer.from(`${prefix}hand/value`);
  await client.kv.put({ key: markKey, value: Buffer.from(pad20(1)) });
  // Hand-written fencing: one Txn, `if value(mark) < token + 1 then put mark = token, put value` (fixed-width marks).
  const hand = (token, v) =>
    client.kv.txn({
      compare: [{ key: markKey, target: 3, result: 2, value: Buffer.from(pad20(token + 1)) }], // VALUE, LESS
      success: [{ request_put: { key: markKey, value: Buffer.from(pad20(token)) } }, { request_put: { key: handValue, value: Buffer.from(v) } }],
      failure: [],
    });
  if (!(await hand(1, '"check"')).succeeded || (await hand(0, '"stale"')).succeeded) throw new Error('bench: the hand-written etcd fencing Txn does not fence');
  const n = 1000;
  const rows = await measure([
    ['raw put of the value (unfenced, 1 request)', (i) => client.kv.put({ key: rawKey, value: Buffer.from(JSON.stringify(`v${i}`)) })],
    ['hand-written fencing: one Txn (compare mark, put mark + value)', (i) => hand(1, JSON.stringify(`v${i}`))],
    ['fencegate Gate + EtcdStore (cached: one Txn)', (i) => gate.write('k', 1, `v${i}`)],
    ['fencegate Gate + EtcdStore, stateCache: 0 (load Txn + commit Txn)', (i) => gateNoCache.write('k', 1, `v${i}`)],
  ], n);
  report('etcd (etcd3, 3-member cluster on loopback, --unsafe-no-fsync)', rows, 1);
  keep('etcd', rows);
  await client.delete().prefix(prefix);
  client.close();
}

/** 4 processes × 200 fenced writes on ONE key; counts compare-and-set retries. */
async function contention(engine, config) {
  const worker = new URL('../tests/js/stores/race-worker.mjs', import.meta.url);
  const keys = [uniqueKey(`contention-${engine}`)];
  const ops = 200;
  const kids = [];
  for (let w = 0; w < 4; w++) {
    const child = fork(worker, [], { serialization: 'advanced' });
    const ready = new Promise((r) => child.once('message', r));
    const done = new Promise((r) => child.on('message', (m) => m.history && r(m.history)));
    child.send({ ...config, engine, worker: w, ops, keys, epoch0: 1n, seed: 77 + w, unknownRate: 0 });
    kids.push({ child, ready, done });
  }
  await Promise.all(kids.map((k) => k.ready));
  const t0 = process.hrtime.bigint();
  for (const k of kids) k.child.send('go');
  const ops4 = (await Promise.all(kids.map((k) => k.done))).flat();
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  const retries = ops4.reduce((n, o) => n + o.attempts.reduce((m, a) => m + a.conflicts, 0), 0);
  const maxPerOp = Math.max(...ops4.map((o) => o.attempts.reduce((m, a) => m + a.conflicts, 0)));
  const row = { engine, operations: ops4.length, conflictRetries: retries, maxRetriesOneOp: maxPerOp, perSecond: Math.round(ops4.length / s) };
  results.push({ contention: row });
  console.log(
    `  ${engine.padEnd(10)} ${row.operations} ops, ${row.conflictRetries} compare-and-set retries ` +
      `(max ${row.maxRetriesOneOp} for one op), ${row.perSecond} ops/s overall`,
  );
}

// --only=sqlite,redis,postgres,mysql,etcd: run just those (the others, and their client variants, are skipped)
const onlyArg = process.argv.find((a) => a.startsWith('--only='));
const only = onlyArg === undefined ? null : new Set(onlyArg.slice(7).split(','));
const wanted = (name) => only === null || only.has(name);
if (wanted('sqlite')) await sqlite();
if (!wanted('redis'));
else if (REDIS_URL) {
  await redis();
  await nodeRedis();
} else console.log('\nredis: skipped (FENCEGATE_REDIS_URL not set)');
if (!wanted('postgres'));
else if (PG_URL) {
  await postgres();
  await postgresJsBench();
} else console.log('\npostgresql: skipped (FENCEGATE_PG_URL not set)');
if (!wanted('mysql'));
else if (MYSQL_URL) await mysql();
else console.log('\nmysql: skipped (FENCEGATE_MYSQL_URL not set)');
if (!wanted('etcd'));
else if (ETCD_URLS) await etcd();
else console.log('\netcd: skipped (FENCEGATE_ETCD_URLS not set)');

if (process.argv.includes('--no-contention')) {
  finish();
  process.exit(0);
}

console.log('\n4-way contention on one key (4 processes × 200 fenced operations, stale and current tokens mixed):');
const dir = mkdtempSync(join(tmpdir(), 'fencegate-bench-'));
const file = join(dir, 'c.db');
new SqliteStore(openSqlite(file));
await contention('sqlite', { file });
rmSync(dir, { recursive: true, force: true });
if (REDIS_URL) await contention('redis', { prefix: `${uniqueKey('c')}:` });
if (PG_URL) {
  const p = await pgPool();
  await new PostgresStore(p, { table: 'fencegate_race' }).init();
  await p.end();
  await contention('postgres', { table: 'fencegate_race' });
}
if (REDIS_URL) await contention('node-redis', { prefix: `${uniqueKey('c-nr')}:` });
if (PG_URL) {
  const q = await postgresJs();
  await new PostgresStore(q, { table: 'fencegate_race' }).init();
  await q.end();
  await contention('postgres-js', { table: 'fencegate_race' });
}
if (MYSQL_URL) {
  const p = await mysqlPool();
  await new MysqlStore(p, { table: 'fencegate_race' }).init();
  await p.end();
  await contention('mysql', { table: 'fencegate_race' });
}
console.log('  (SQLite serialises writers on its write lock, so its transaction shape never retries.)');
finish();

/** The issue 14 table, build/stores-bench.json, and with --json one final line of JSON. */
function finish() {
  console.log('\nfenced writes against raw and hand-written fencing (median of interleaved rounds):');
  console.log('  store      raw/s   hand/s   fencegate/s  ×raw   ×hand   stateCache:0/s  ×raw');
  for (const [name, r] of Object.entries(table)) {
    console.log(
      `  ${name.padEnd(9)}${String(r.raw).padStart(7)}${String(r.hand).padStart(9)}${String(r.fencegate).padStart(13)}  ${r.ratioToRaw.toFixed(2)}  ${r.ratioToHand.toFixed(2)}  ${String(r.fencegateNoCache).padStart(14)}  ${r.noCacheRatioToRaw.toFixed(2)}`,
    );
  }
  console.log('  best rounds (interference only slows a round down):');
  for (const [name, { best: b }] of Object.entries(table)) {
    console.log(
      `  ${name.padEnd(9)}${String(b.raw).padStart(7)}${String(b.hand).padStart(9)}${String(b.fencegate).padStart(13)}  ${b.ratioToRaw.toFixed(2)}  ${b.ratioToHand.toFixed(2)}  ${String(b.fencegateNoCache).padStart(14)}  ${(b.fencegateNoCache / b.raw).toFixed(2)}`,
    );
  }
  mkdirSync(new URL('../build/', import.meta.url), { recursive: true });
  writeFileSync(
    new URL('../build/stores-bench.json', import.meta.url),
    JSON.stringify({ node: process.version, date: new Date().toISOString(), stores: table, results }, null, 2) + '\n',
  );
  if (JSON_OUT) console.log(JSON.stringify({ stores: table }));
}
