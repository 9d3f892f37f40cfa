// Issue 13 item 4: an engine's "retry the transaction" errors are a lost
// compare-and-set, never STORE_ERROR. PostgreSQL 40001 / 40P01 / 55P03 under a
// database default of REPEATABLE READ or SERIALIZABLE; SQLite's SQLITE_BUSY /
// SQLITE_LOCKED classes. The gate retries under its bounded policy and answers
// COMMIT_CONFLICT only after the retries; marks and values stay exact.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Gate, FencegateError } from '../../../pkg/node.mjs';
import { PostgresStore } from '../../../pkg/adapters/postgres.mjs';
import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';
import { RedisStore } from '../../../pkg/adapters/redis.mjs';
import { MysqlStore, RETRY_ERRNOS } from '../../../pkg/adapters/mysql.mjs';
import { PG_URL, REDIS_URL, MYSQL_URL, openSqlite, redisClient, uniqueKey } from './targets.mjs';

const WRITERS = 8;
const WRITES = 40;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A pg client that records the SQLSTATE of every failed query, then rethrows. */
function recording(pool) {
  const codes = [];
  return {
    codes,
    query: async (...args) => {
      try {
        return await pool.query(...args);
      } catch (e) {
        codes.push(e.code);
        throw e;
      }
    },
  };
}

/**
 * WRITERS gates write WRITES times each to one new key, interleaved: writer w's
 * i-th write has epoch i·8 + w + 1 (the largest, 320, is writer 7's last). Every
 * write is advance at its epoch or STALE_TOKEN below the mark, none throws, and
 * the key ends at mark 320 with writer 7's last value. Returns the outcome counts.
 */
async function writersOnOneKey(store) {
  const k = uniqueKey('iso');
  const outcomes = { advance: 0, reject: 0 };
  const errors = [];
  const writer = async (w) => {
    const gate = new Gate(store, { maxRetries: 64 });
    for (let i = 0; i < WRITES; i++) {
      const epoch = i * WRITERS + w + 1;
      try {
        const v = await gate.write(k, epoch, { w, i });
        outcomes[v.outcome]++;
        if (v.outcome === 'reject') {
          assert.equal(v.code, 'STALE_TOKEN');
          assert.ok(v.markBefore > epoch);
        } else {
          assert.equal(v.outcome, 'advance');
          assert.equal(v.markAfter, epoch);
        }
      } catch (e) {
        errors.push(`${e.code}: ${e.message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  assert.deepEqual(errors, []);
  assert.equal(outcomes.advance + outcomes.reject, WRITERS * WRITES);
  assert.deepEqual(await new Gate(store).read(k), { mark: WRITERS * WRITES, value: { w: WRITERS - 1, i: WRITES - 1 }, hasValue: true });
  return outcomes;
}

async function expectConflict(promise, attempts) {
  const e = await promise.then((v) => assert.fail(`expected COMMIT_CONFLICT, got ${JSON.stringify(v)}`), (x) => x);
  assert.ok(e instanceof FencegateError, String(e));
  assert.equal(e.code, 'COMMIT_CONFLICT', e.message);
  assert.equal(e.attempts, attempts);
  return e;
}

describe('PostgreSQL: serialization failures are lost compare-and-sets', { skip: !PG_URL && 'FENCEGATE_PG_URL is not set' }, () => {
  let pg;
  let admin;
  const dbs = {};
  before(async () => {
    ({ default: pg } = await import('pg'));
    admin = new pg.Pool({ connectionString: PG_URL, max: 2 });
    for (const level of ['read committed', 'repeatable read', 'serializable']) {
      const name = `fg_iso_${level.replace(' ', '_')}_${process.pid}`;
      await admin.query(`DROP DATABASE IF EXISTS ${name}`);
      await admin.query(`CREATE DATABASE ${name}`);
      // the database's default isolation, as in the issue
      await admin.query(`ALTER DATABASE ${name} SET default_transaction_isolation = '${level}'`);
      const url = new URL(PG_URL);
      url.pathname = `/${name}`;
      dbs[level] = { name, url: url.toString() };
    }
  });
  after(async () => {
    for (const { name } of Object.values(dbs)) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  for (const level of ['read committed', 'repeatable read', 'serializable']) {
    test(`default isolation ${level}: ${WRITERS} writers × ${WRITES} writes on one key, no STORE_ERROR, exact final mark and value`, async () => {
      const pool = new pg.Pool({ connectionString: dbs[level].url, max: WRITERS });
      try {
        const shown = await pool.query('SHOW transaction_isolation');
        assert.equal(shown.rows[0].transaction_isolation, level);
        const client = recording(pool);
        const store = await new PostgresStore(client).init();
        const outcomes = await writersOnOneKey(store);
        const failures = client.codes.filter((c) => c !== undefined);
        for (const c of failures) assert.ok(['40001', '40P01'].includes(c), `unexpected SQLSTATE ${c}`);
        if (level === 'read committed') assert.deepEqual(failures, []);
        console.log(`# ${level}: ${outcomes.advance} advance, ${outcomes.reject} STALE_TOKEN, ${failures.length} serialization failures retried`);
      } finally {
        await pool.end();
      }
    });
  }

  for (const level of ['repeatable read', 'serializable']) {
    test(`default isolation ${level}: a 40001 on commit is retried, and is COMMIT_CONFLICT once the retries are spent`, async () => {
      const pool = new pg.Pool({ connectionString: dbs[level].url, max: 4 });
      const locker = await pool.connect();
      try {
        const client = recording(pool);
        const store = await new PostgresStore(client).init();
        for (const [maxRetries, expectation] of [[0, 'conflict'], [1, 'advance']]) {
          const k = uniqueKey(`forced-${maxRetries}`);
          const gate = new Gate(store, { maxRetries });
          assert.equal((await gate.write(k, 5, 'five')).outcome, 'advance');
          client.codes.length = 0;
          // Another transaction updates the row and holds its lock; our UPDATE
          // (snapshot taken before that commit) waits, then fails with 40001.
          await locker.query('BEGIN');
          await locker.query('UPDATE fencegate SET version = version WHERE key = $1', [k]);
          const pending = gate.write(k, 6, 'six');
          pending.catch(() => {}); // settled while COMMIT is awaited; checked below
          for (let i = 0; i < 200; i++) {
            const r = await admin.query(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'",
              [dbs[level].name],
            );
            if (r.rows[0].n > 0) break;
            await sleep(10);
          }
          await locker.query('COMMIT');
          if (expectation === 'conflict') {
            await expectConflict(pending, 1);
            assert.deepEqual(await gate.read(k), { mark: 5, value: 'five', hasValue: true });
          } else {
            assert.deepEqual(await pending, { key: k, ok: true, outcome: 'advance', code: null, token: 6, markBefore: 5, markAfter: 6 });
            assert.deepEqual(await gate.read(k), { mark: 6, value: 'six', hasValue: true });
          }
          assert.deepEqual(client.codes, ['40001']);
        }
      } finally {
        locker.release();
        await pool.end();
      }
    });
  }

  test('40001, 40P01 and 55P03 from commit are "false"; 40003 and connection classes are COMMIT_UNKNOWN; others STORE_ERROR', async () => {
    const answers = [];
    const fake = {
      query: async (q) => {
        if (typeof q === 'object' && q.text.startsWith('SELECT')) return { rows: [{ state: '{"v":1,"mark":"5"}', value: '"x"', version: '1' }], rowCount: 1 };
        const code = answers.shift();
        // a commit that lands: one row (commitFrom's RETURNING version)
        if (code === undefined) return { rows: [{ version: '2' }], rowCount: 1 };
        throw Object.assign(new Error(`sqlstate ${code}`), { code });
      },
    };
    const store = new PostgresStore(fake);
    for (const code of ['40001', '40P01', '55P03']) {
      answers.push(code, code, code);
      await expectConflict(new Gate(store, { maxRetries: 2 }).write('k', 6, 'v'), 3);
      answers.push(code);
      assert.equal((await new Gate(store, { maxRetries: 2 }).write('k', 6, 'v')).outcome, 'advance');
    }
    for (const [code, expected] of [['40003', 'COMMIT_UNKNOWN'], ['08006', 'COMMIT_UNKNOWN'], ['57P01', 'COMMIT_UNKNOWN'], ['23505', 'STORE_ERROR'], ['54000', 'STORE_ERROR']]) {
      answers.push(code);
      const e = await new Gate(store).write('k', 6, 'v').catch((x) => x);
      assert.equal(e.code, expected, code);
    }
  });

  test('load retries a retry-class failure of its SELECT (a few times)', async () => {
    let fails = 3;
    const fake = {
      query: async () => {
        if (fails-- > 0) throw Object.assign(new Error('could not serialize access'), { code: '40001' });
        return { rows: [], rowCount: 0 };
      },
    };
    assert.equal(await new PostgresStore(fake).load('k'), null);
    fails = 4;
    await assert.rejects(new PostgresStore(fake).load('k'), (e) => e.code === '40001');
  });
});

describe('MySQL (MariaDB): deadlocks and lock wait timeouts are lost compare-and-sets', { skip: !MYSQL_URL && 'FENCEGATE_MYSQL_URL is not set' }, () => {
  let mysql;
  before(async () => {
    mysql = await import('mysql2/promise');
  });

  /** A pool whose sessions run `setup` first, recording the errno of every failed statement. */
  function pool(setup) {
    const p = mysql.createPool({ uri: MYSQL_URL, connectionLimit: WRITERS });
    if (setup) p.pool.on('connection', (c) => c.query(setup));
    const errnos = [];
    const wrap = (name) => async (...args) => {
      try {
        return await p[name](...args);
      } catch (e) {
        errnos.push(e.errno);
        throw e;
      }
    };
    return { pool: p, errnos, client: { execute: wrap('execute'), query: wrap('query') } };
  }

  for (const level of ['READ COMMITTED', 'REPEATABLE READ', 'SERIALIZABLE']) {
    test(`session isolation ${level}: ${WRITERS} writers × ${WRITES} writes on one key, no STORE_ERROR, exact final mark and value`, async () => {
      const { pool: p, errnos, client } = pool(`SET SESSION TRANSACTION ISOLATION LEVEL ${level}`);
      try {
        const [[row]] = await p.query('SELECT @@tx_isolation AS level');
        assert.equal(row.level, level.replace(' ', '-'));
        const store = await new MysqlStore(client, { table: 'fg_iso' }).init();
        const outcomes = await writersOnOneKey(store);
        // a concurrent first write loses with a duplicate key (1062), read as a lost compare-and-set
        for (const n of errnos) assert.ok([1062, ...RETRY_ERRNOS].includes(n), `unexpected errno ${n}`);
        console.log(`# ${level}: ${outcomes.advance} advance, ${outcomes.reject} STALE_TOKEN, ${errnos.length} errors read as lost compare-and-sets`);
      } finally {
        await p.end();
      }
    });
  }

  test('a row lock held past innodb_lock_wait_timeout (1205): COMMIT_CONFLICT after maxRetries + 1 attempts, nothing written; then it lands', async () => {
    const { pool: p, errnos, client } = pool('SET SESSION innodb_lock_wait_timeout = 1');
    const holder = await mysql.createConnection(MYSQL_URL);
    try {
      const store = await new MysqlStore(client, { table: 'fg_lock' }).init();
      const k = uniqueKey('lock');
      assert.equal((await new Gate(store).write(k, 5, 'five')).outcome, 'advance');
      await holder.query('START TRANSACTION');
      await holder.execute('SELECT * FROM fg_lock WHERE k = ? FOR UPDATE', [k]);
      await expectConflict(new Gate(store, { maxRetries: 1 }).write(k, 6, 'six'), 2);
      assert.deepEqual(errnos, [1205, 1205]);
      await holder.query('ROLLBACK');
      assert.deepEqual(await new Gate(store).read(k), { mark: 5, value: 'five', hasValue: true });
      assert.equal((await new Gate(store).write(k, 6, 'six')).outcome, 'advance');
      assert.deepEqual(await new Gate(store).read(k), { mark: 6, value: 'six', hasValue: true });
    } finally {
      await holder.end();
      await p.end();
    }
  });

  test('1213, 1205 and 1020 from commit are "false", 1062 on a first write too; fatal and 08 errors are COMMIT_UNKNOWN; others STORE_ERROR', async () => {
    const answers = [];
    let exists = true;
    const fail = (a) => Object.assign(new Error(`errno ${a.errno}`), a);
    const fake = {
      execute: async (sql) => {
        if (sql.startsWith('SELECT')) return [exists ? [{ state: '{"v":1,"mark":"5"}', value: '"x"', version: '1' }] : []];
        const a = answers.shift();
        if (a === undefined) return [{ affectedRows: 1 }];
        throw fail(a);
      },
      query: async () => [[]],
    };
    const store = new MysqlStore(fake);
    for (const errno of RETRY_ERRNOS) {
      const a = { errno, sqlState: errno === 1213 ? '40001' : 'HY000' };
      answers.push(a, a, a);
      await expectConflict(new Gate(store, { maxRetries: 2 }).write('k', 6, 'v'), 3);
      answers.push(a);
      assert.equal((await new Gate(store, { maxRetries: 2 }).write('k', 6, 'v')).outcome, 'advance');
    }
    exists = false;
    answers.push({ errno: 1062, sqlState: '23000' }, { errno: 1062, sqlState: '23000' });
    await expectConflict(new Gate(store, { maxRetries: 1 }).write('k', 6, 'v'), 2);
    exists = true;
    for (const [a, expected] of [
      [{ errno: 1062, sqlState: '23000' }, 'STORE_ERROR'], // on an UPDATE a duplicate key is not a lost race
      [{ errno: 1406, sqlState: '22001' }, 'STORE_ERROR'],
      [{ errno: 1927, sqlState: '08S01' }, 'COMMIT_UNKNOWN'],
      [{ code: 'PROTOCOL_CONNECTION_LOST', fatal: true }, 'COMMIT_UNKNOWN'],
      [{ code: 'ECONNRESET', errno: -104, fatal: true }, 'COMMIT_UNKNOWN'],
      [{ code: 'ETIMEDOUT' }, 'COMMIT_UNKNOWN'],
    ]) {
      answers.push(a);
      const e = await new Gate(store).write('k', 6, 'v').catch((x) => x);
      assert.equal(e.code, expected, JSON.stringify(a));
    }
  });

  test('load retries a retry-class failure of its SELECT (a few times)', async () => {
    let fails = 3;
    const fake = {
      execute: async () => {
        if (fails-- > 0) throw Object.assign(new Error('Deadlock found'), { errno: 1213, sqlState: '40001' });
        return [[]];
      },
      query: async () => [[]],
    };
    assert.equal(await new MysqlStore(fake).load('k'), null);
    fails = 4;
    await assert.rejects(new MysqlStore(fake).load('k'), (e) => e.errno === 1213);
  });
});

describe('SQLite: SQLITE_BUSY and SQLITE_LOCKED classes are transaction conflicts', () => {
  test('a database held by another writer past the busy timeout: COMMIT_CONFLICT after maxRetries + 1 attempts, nothing written; then it lands', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fg-busy-'));
    const file = join(dir, 'busy.db');
    const holder = openSqlite(file);
    const Database = (await import('better-sqlite3')).default;
    const db = new Database(file, { timeout: 0 });
    try {
      const store = new SqliteStore(db);
      const gate = new Gate(store, { maxRetries: 2 });
      assert.equal((await gate.write('k', 5, 'five')).outcome, 'advance');
      holder.exec('BEGIN IMMEDIATE'); // another connection holds the write lock
      const e = await expectConflict(gate.write('k', 6, 'six'), 3);
      assert.equal(e.cause.code, 'SQLITE_BUSY');
      assert.equal(e.cause.conflict, true);
      await expectConflict(gate.quarantine('k', 9), 3);
      holder.exec('ROLLBACK');
      assert.deepEqual(await gate.read('k'), { mark: 5, value: 'five', hasValue: true });
      assert.deepEqual(await gate.write('k', 6, 'six'), { key: 'k', ok: true, outcome: 'advance', code: null, token: 6, markBefore: 5, markAfter: 6 });
    } finally {
      db.close();
      holder.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('every SQLITE_BUSY* / SQLITE_LOCKED* code is retried; other codes are STORE_ERROR at once', async () => {
    for (const code of ['SQLITE_BUSY', 'SQLITE_BUSY_RECOVERY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_TIMEOUT', 'SQLITE_LOCKED', 'SQLITE_LOCKED_SHAREDCACHE', 'SQLITE_LOCKED_VTAB', 'SQLITE_IOERR', 'SQLITE_FULL']) {
      let calls = 0;
      const fakeDb = {
        exec() {},
        prepare: () => ({ get: () => undefined, run: () => undefined }),
        transaction: () => ({
          immediate: () => {
            calls++;
            throw Object.assign(new Error(code.toLowerCase()), { code });
          },
        }),
      };
      const e = await new Gate(new SqliteStore(fakeDb), { maxRetries: 3 }).write('k', 1, 'v').catch((x) => x);
      const retried = /^SQLITE_(BUSY|LOCKED)/.test(code);
      assert.equal(e.code, retried ? 'COMMIT_CONFLICT' : 'STORE_ERROR', code);
      assert.equal(calls, retried ? 4 : 1, code);
    }
  });
});

// The same race on SQLite: 8 threads, each with its own connection and a short
// busy timeout (1 ms), so SQLITE_BUSY can surface (in some runs) and is then
// retried by the gate; the held-lock test above makes it surface every time.
const SQLITE_WRITER = `
const { parentPort, workerData: { file, w, writers, writes, pkg } } = require('node:worker_threads');
(async () => {
  const { Gate } = await import(pkg + '/node.mjs');
  const { SqliteStore } = await import(pkg + '/adapters/sqlite.mjs');
  const Database = require(${JSON.stringify(new URL('../../../node_modules/better-sqlite3', import.meta.url).pathname)});
  const db = new Database(file, { timeout: 1 });
  const store = new SqliteStore(db, { createTable: false });
  let busy = 0;
  const counted = {
    transaction: (k, fn) => {
      try {
        return store.transaction(k, fn);
      } catch (e) {
        if (e.conflict) busy++;
        throw e;
      }
    },
    load: (k) => store.load(k),
    encodeValue: (v) => store.encodeValue(v),
  };
  const gate = new Gate(counted, { maxRetries: 64 });
  const out = { advance: 0, reject: 0, errors: [], busy: 0 };
  for (let i = 0; i < writes; i++) {
    const epoch = i * writers + w + 1;
    try {
      const v = await gate.write('k', epoch, { w, i });
      out[v.outcome]++;
      if (v.outcome === 'reject' && (v.code !== 'STALE_TOKEN' || !(v.markBefore > epoch))) out.errors.push('bad reject ' + JSON.stringify(v));
    } catch (e) {
      out.errors.push(e.code + ': ' + e.message);
    }
  }
  out.busy = busy;
  db.close();
  parentPort.postMessage(out);
})();
`;

describe('SQLite and Redis: the same 8 writers × 40 writes on one key', () => {
  test('SQLite, 8 threads with a 1 ms busy timeout: no STORE_ERROR, exact final mark and value', async () => {
    const { Worker } = await import('node:worker_threads');
    const dir = mkdtempSync(join(tmpdir(), 'fg-race-'));
    const file = join(dir, 'race.db');
    const setup = openSqlite(file);
    new SqliteStore(setup); // the table, before the race
    try {
      const pkg = new URL('../../../pkg', import.meta.url).href;
      const results = await Promise.all(
        Array.from({ length: WRITERS }, (_, w) =>
          new Promise((resolve, reject) => {
            const worker = new Worker(SQLITE_WRITER, { eval: true, workerData: { file, w, writers: WRITERS, writes: WRITES, pkg } });
            worker.once('message', resolve);
            worker.once('error', reject);
          }),
        ),
      );
      assert.deepEqual(results.flatMap((r) => r.errors), []);
      assert.equal(results.reduce((n, r) => n + r.advance + r.reject, 0), WRITERS * WRITES);
      assert.deepEqual(await new Gate(new SqliteStore(setup)).read('k'), { mark: WRITERS * WRITES, value: { w: WRITERS - 1, i: WRITES - 1 }, hasValue: true });
      console.log(`# sqlite: ${results.reduce((n, r) => n + r.advance, 0)} advance, ${results.reduce((n, r) => n + r.busy, 0)} SQLITE_BUSY retried`);
    } finally {
      setup.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('Redis, 8 clients: every lost compare-and-set is retried; no STORE_ERROR, exact final mark and value', { skip: !REDIS_URL && 'FENCEGATE_REDIS_URL is not set' }, async () => {
    const clients = await Promise.all(Array.from({ length: WRITERS }, () => redisClient()));
    try {
      const prefix = `${uniqueKey('race')}:`;
      const errors = [];
      let conflicts = 0;
      const writer = async (w) => {
        const store = new RedisStore(clients[w], { prefix });
        const counted = {
          load: (k) => store.load(k),
          commit: async (...args) => {
            const ok = await store.commit(...args);
            if (!ok) conflicts++;
            return ok;
          },
          encodeValue: (v) => store.encodeValue(v),
        };
        const gate = new Gate(counted, { maxRetries: 64 });
        for (let i = 0; i < WRITES; i++) {
          const epoch = i * WRITERS + w + 1;
          try {
            const v = await gate.write('k', epoch, { w, i });
            if (v.outcome === 'reject') assert.ok(v.code === 'STALE_TOKEN' && v.markBefore > epoch);
            else assert.equal(v.markAfter, epoch);
          } catch (e) {
            errors.push(`${e.code}: ${e.message}`);
          }
        }
      };
      await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
      assert.deepEqual(errors, []);
      assert.deepEqual(await new Gate(new RedisStore(clients[0], { prefix })).read('k'), { mark: WRITERS * WRITES, value: { w: WRITERS - 1, i: WRITES - 1 }, hasValue: true });
      console.log(`# redis: ${conflicts} lost compare-and-sets retried`);
    } finally {
      for (const c of clients) c.disconnect();
    }
  });
});
