// The network SQL engines of the own-data tests (pg, postgres.js, mysql2), each as
// the same small interface, so one set of cases (sql-cases.mjs) runs on all three:
//   connect()                 → the client the store gets (pg Pool / postgres.js sql / mysql2 Pool)
//   end(client)
//   query(client, text, p)    → rows, one autocommit statement, in the engine's placeholders
//   ph(n)                     → the n-th placeholder ($n or ?)
//   exec(tx, text, p)         → { rows, count } on a transaction handle the body got
//   manual(client, fn)        → the caller's own BEGIN … fn(handle) … COMMIT (ROLLBACK when fn throws)
//   open(client, level)       → a manual transaction handle left open: { handle, commit(), rollback() }
//   keyColumn                 → the fence table's key column
//   Store, storeOptions(level) → the store class and its options for an isolation level
import { PostgresStore } from '../../../pkg/adapters/postgres.mjs';
import { MysqlStore } from '../../../pkg/adapters/mysql.mjs';

export const PG_URL = process.env.FENCEGATE_PG_URL;
export const MYSQL_URL = process.env.FENCEGATE_MYSQL_URL;
const REQUIRE = process.env.FENCEGATE_REQUIRE_SERVICES === '1';
if (REQUIRE && (!PG_URL || !MYSQL_URL)) throw new Error('FENCEGATE_REQUIRE_SERVICES=1 but FENCEGATE_PG_URL / FENCEGATE_MYSQL_URL are not set');

const LEVELS = { 'read committed': 'READ COMMITTED', 'repeatable read': 'REPEATABLE READ', serializable: 'SERIALIZABLE' };

export const pgEngine = {
  name: 'pg',
  skip: !PG_URL && 'FENCEGATE_PG_URL is not set (scripts/with-services.sh)',
  keyColumn: 'key',
  Store: PostgresStore,
  storeOptions: (level) => (level ? { isolation: level } : {}),
  async connect() {
    const { default: pg } = await import('pg');
    return new pg.Pool({ connectionString: PG_URL, max: 6 });
  },
  end: (pool) => pool.end(),
  query: async (pool, text, params = []) => (await pool.query(text, params)).rows,
  ph: (n) => `$${n}`,
  exec: async (client, text, params = []) => {
    const r = await client.query(text, params);
    return { rows: r.rows, count: r.rowCount };
  },
  async open(pool, level) {
    const client = await pool.connect();
    await client.query(level ? `BEGIN ISOLATION LEVEL ${LEVELS[level]}` : 'BEGIN');
    const done = async (sql) => {
      try {
        await client.query(sql);
      } finally {
        client.release();
      }
    };
    return { handle: client, commit: () => done('COMMIT'), rollback: () => done('ROLLBACK') };
  },
  async idle(pool, fn) {
    const client = await pool.connect();
    try {
      return await fn(client);
    } finally {
      client.release();
    }
  },
  async manual(pool, fn) {
    const t = await this.open(pool);
    let out;
    try {
      out = await fn(t.handle);
    } catch (e) {
      await t.rollback();
      throw e;
    }
    await t.commit();
    return out;
  },
};

export const postgresJsEngine = {
  name: 'postgres.js',
  skip: !PG_URL && 'FENCEGATE_PG_URL is not set (scripts/with-services.sh)',
  keyColumn: 'key',
  Store: PostgresStore,
  storeOptions: (level) => (level ? { isolation: level } : {}),
  async connect() {
    const { default: postgres } = await import('postgres');
    return postgres(PG_URL, { max: 6, onnotice: () => {} });
  },
  end: (sql) => sql.end(),
  query: async (sql, text, params = []) => [...(await sql.unsafe(text, params))],
  ph: (n) => `$${n}`,
  exec: async (tx, text, params = []) => {
    const rows = await tx.unsafe(text, params);
    return { rows: [...rows], count: rows.count };
  },
  async open(sql, level) {
    // a transaction left open: sql.begin's callback waits until commit() or rollback()
    let handle;
    let finish;
    const ready = new Promise((r) => {
      handle = r;
    });
    const ended = sql
      .begin(level ? `isolation level ${level}` : '', (tx) => {
        handle(tx);
        return new Promise((resolve, reject) => {
          finish = { resolve, reject };
        });
      })
      .catch((e) => {
        if (e !== ROLLBACK) throw e;
      });
    const tx = await ready;
    return {
      handle: tx,
      commit: async () => {
        finish.resolve();
        await ended;
      },
      rollback: async () => {
        finish.reject(ROLLBACK);
        await ended;
      },
    };
  },
  manual: (sql, fn) => sql.begin(fn),
  async idle(sql, fn) {
    const reserved = await sql.reserve();
    try {
      return await fn(reserved);
    } finally {
      reserved.release();
    }
  },
};
const ROLLBACK = Symbol('rollback');

export const mysqlEngine = {
  name: 'mysql2',
  skip: !MYSQL_URL && 'FENCEGATE_MYSQL_URL is not set (scripts/with-services.sh)',
  keyColumn: 'k',
  Store: MysqlStore,
  storeOptions: () => ({}),
  async connect(level) {
    const mysql = await import('mysql2/promise');
    const pool = mysql.createPool({ uri: MYSQL_URL, connectionLimit: 6 });
    if (level) {
      // the session's isolation level for every transaction on the pool's connections
      pool.pool.on('connection', (c) => c.query(`SET SESSION TRANSACTION ISOLATION LEVEL ${LEVELS[level]}`));
    }
    return pool;
  },
  end: (pool) => pool.end(),
  query: async (pool, text, params = []) => (await pool.query(text, params))[0],
  ph: () => '?',
  exec: async (conn, text, params = []) => {
    const [r] = await conn.execute(text, params);
    return Array.isArray(r) ? { rows: r, count: r.length } : { rows: [], count: r.affectedRows };
  },
  async open(pool) {
    const conn = await pool.getConnection();
    await conn.beginTransaction();
    const done = async (f) => {
      try {
        await f();
      } finally {
        conn.release();
      }
    };
    return { handle: conn, commit: () => done(() => conn.commit()), rollback: () => done(() => conn.rollback()) };
  },
  async idle(pool, fn) {
    const conn = await pool.getConnection();
    try {
      return await fn(conn);
    } finally {
      conn.release();
    }
  },
  async manual(pool, fn) {
    const t = await this.open(pool);
    let out;
    try {
      out = await fn(t.handle);
    } catch (e) {
      await t.rollback();
      throw e;
    }
    await t.commit();
    return out;
  },
};

let n = 0;
/** A table name no other test of this run uses. */
export function tableName(prefix) {
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${n++}`;
}
