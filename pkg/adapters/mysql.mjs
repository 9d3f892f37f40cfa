// fencegate/mysql — a host store on MySQL / MariaDB through mysql2.
//
// One InnoDB table holds, per resource key, the fence state (JSON text), the
// protected value (codec text, NULL = no value) and a `version` counter.
// fencegate makes the decision in Wasm; the database runs a compare-and-set as
// one autocommit statement: `UPDATE … WHERE k = ? AND version = ?` (or a plain
// `INSERT` for a new key, where a duplicate-key error means another writer
// created it first) that writes state and value together, or nothing. A lost
// compare-and-set makes the gate load, decide again and retry (bounded).
//
// Why a conditional UPDATE and not `SELECT … FOR UPDATE` in a transaction: one
// round trip per commit and no row lock held across round trips (a paused
// client holding FOR UPDATE would stall every other writer of the key until
// innodb_lock_wait_timeout), a pool needs no pinned connection, and the check
// does not depend on the isolation level: InnoDB evaluates an UPDATE's WHERE on
// the latest committed row version (a locking read), even under REPEATABLE READ.
//
// Keys are VARBINARY(512) (exact bytes: MAX_KEY_BYTES; no case- or
// accent-insensitive collation can merge two keys); state and value are
// utf8mb4 text with a binary collation.
//
// The client is passed in (a mysql2 Pool or Connection, promise or callback
// API); this module imports only the codec.
import { valueCodec } from '../lib/codec.mjs';
import { codecOf, encodeWith, encodedOf, loadedRecord, tableOf, storeOptions, endedItself, runWatched, CODEC_OPTIONS } from './support.mjs';
import { sqlRunner, poolKind } from './handles.mjs';
import { invalid } from '../lib/options.mjs';

// The caller's own data (Gate.transaction, Gate.fenceIn; docs/stores.md "Your
// own data"): `fencedTransaction` runs one transaction on one connection
// (a pool's getConnection, released after) — START TRANSACTION, the fence
// step (from the state cache a conditional UPDATE of the fence row first;
// else `SELECT … FOR UPDATE` of it, then its UPDATE or INSERT), the caller's
// statements, COMMIT. The fence row's lock orders every fenced transaction on
// a key under any isolation level: InnoDB's locking reads and UPDATEs read the
// latest committed row, not the snapshot.

const isObject = (x) => x !== null && (typeof x === 'object' || typeof x === 'function');

/** A fresh per-transaction nonce for the MySQL guard. */
const nonce = () => globalThis.crypto.randomUUID();

const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/**
 * Server error numbers after which the statement did not commit and running it
 * again is the documented remedy: 1213 ER_LOCK_DEADLOCK (InnoDB rolled the
 * transaction back; also a Galera certification failure), 1205
 * ER_LOCK_WAIT_TIMEOUT (the statement waited too long for the row lock and was
 * rolled back), 1020 ER_CHECKREAD (MariaDB's innodb_snapshot_isolation: the
 * record changed since the snapshot was read).
 */
export const RETRY_ERRNOS = Object.freeze([1213, 1205, 1020]);

const ER_DUP_ENTRY = 1062;
/** ER_SP_DOES_NOT_EXIST, ER_SP_ALREADY_EXISTS */
const ER_SP_DOES_NOT_EXIST = 1305;
/** ER_PROCACCESS_DENIED_ERROR: the user may not EXECUTE the procedure (another account created it) */
const ER_PROCACCESS_DENIED_ERROR = 1370;
/** A CALL refused before the procedure ran (dropped since init(), or no EXECUTE privilege): nothing ran. */
const callRefused = (e) => isObject(e) && (e.errno === ER_SP_DOES_NOT_EXIST || e.errno === ER_PROCACCESS_DENIED_ERROR);
const ER_SP_ALREADY_EXISTS = 1304;

function retryable(e) {
  return e !== null && typeof e === 'object' && RETRY_ERRNOS.includes(e.errno);
}

// How often load() runs its SELECT again after a retry-class failure.
const LOAD_ATTEMPTS = 4;

// A server error reply (an errno and a SQLSTATE, not a fatal connection error,
// not a connection-class SQLSTATE 08xxx) means the autocommit statement did not
// commit. Anything else (a lost connection, a client-side timeout) may have.
function definitelyFailed(e) {
  return (
    e !== null &&
    typeof e === 'object' &&
    !e.fatal &&
    typeof e.errno === 'number' &&
    typeof e.sqlState === 'string' &&
    /^[0-9A-Z]{5}$/.test(e.sqlState) &&
    !e.sqlState.startsWith('08')
  );
}

/**
 * Errors after which InnoDB has rolled back the whole transaction, not only the statement:
 * 1213 ER_LOCK_DEADLOCK, 1020 ER_CHECKREAD (MariaDB's snapshot isolation).
 */
const ROLLED_BACK = [1213, 1020];
/** The server status flag of an open transaction (mysql2's constants/server_status). */
const SERVER_STATUS_IN_TRANS = 1;

/**
 * What the body of a fenced transaction gets: `conn` with its `query` and `execute` watched
 * (an object whose prototype is `conn`, so every other member is the connection's). `rolledBack`:
 * the first error of a ROLLED_BACK errno a statement failed with, even when the body caught it.
 */
function watchedConnection(conn) {
  const out = { handle: Object.create(conn), rolledBack: null, ended: false };
  for (const verb of ['query', 'execute']) {
    out.handle[verb] = (...args) =>
      conn[verb](...args).then(
        (result) => {
          // an OK packet's status without SERVER_STATUS_IN_TRANS: the statement ended the
          // transaction (COMMIT, ROLLBACK, a statement that commits implicitly, such as DDL)
          const header = Array.isArray(result) ? result[0] : undefined;
          if (isObject(header) && !Array.isArray(header) && typeof header.serverStatus === 'number' && (header.serverStatus & SERVER_STATUS_IN_TRANS) === 0) out.ended = true;
          return result;
        },
        (e) => {
          if (out.rolledBack === null && isObject(e) && ROLLED_BACK.includes(e.errno)) out.rolledBack = e;
          throw e;
        },
      );
  }
  return out;
}

/** The promise API of a mysql2 Pool / Connection / PoolConnection (the callback API has `.promise()`). */
function promiseClient(client) {
  if (client === null || typeof client !== 'object' || typeof client.execute !== 'function' || typeof client.query !== 'function') {
    throw invalid('MysqlStore needs a mysql2 Pool or Connection (mysql2/promise, or the callback API)', { client: typeof client });
  }
  return typeof client.promise === 'function' ? client.promise() : client;
}

/**
 * A compare-and-set host store on a mysql2 Pool or Connection.
 * Options: `table` (default `"fencegate"`), `encode`/`decode` for values
 * (default `valueCodec`). Call `await store.init()` once to create the table.
 */
export class MysqlStore {
  /** `guard: true`: each fenced step stamps the session's nonce `@fencegate_xact` for the MySQL guard (docs/guard.md). */
  #guard = false;
  #db;
  #table;
  #encode;
  #decode;

  /** A single connection runs one fenced transaction at a time: the tail of that queue. */
  #lane = Promise.resolve();
  /** The quoted name of the table's open procedure (see `init`), or null: none (BEGIN and the fence step as two statements). */
  #open = null;
  /** The quoted name of the table's lock procedure (see `init`), or null: none (BEGIN and the locked read as two statements). */
  #lock = null;
  /** The unquoted table name. */
  #name;
  /** The quoted name of the commit procedure of the guard mode (see `init`), or null: COMMIT, then the nonce cleared. */
  #commit = null;

  constructor(client, options = {}) {
    const db = promiseClient(client);
    options = storeOptions(options, 'MysqlStore', { table: null, guard: 'boolean', ...CODEC_OPTIONS });
    this.#guard = options.guard === true;
    const table = tableOf(options, IDENT);
    this.#db = db;
    this.#table = `\`${table}\``;
    this.#name = table;
    [this.#encode, this.#decode] = codecOf(options, valueCodec);
  }

  /**
   * Creates the table when it does not exist, and the table's procedures when it
   * can (docs/stores.md "Your own data", MySQL): `fencegate_open_<table>` runs START
   * TRANSACTION and a cached key's conditional UPDATE of the fence row in one CALL, so
   * that `gate.transaction` adds no round trip to the caller's own transaction;
   * `fencegate_lock_<table>` runs START TRANSACTION and the fence row's read FOR UPDATE
   * in one CALL for a key that is not cached. Both set the guard mode's nonce first.
   * Without the CREATE ROUTINE privilege (or for a table name over 49 characters) the
   * store runs them as separate statements. Run once, before concurrent use.
   */
  async init() {
    await this.#db.query(
      `CREATE TABLE IF NOT EXISTS ${this.#table} (` +
        'k VARBINARY(512) NOT NULL PRIMARY KEY, state TEXT NOT NULL, value LONGTEXT NULL, version BIGINT NOT NULL' +
        ') ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin',
    );
    const name = `fencegate_open_${this.#name}`;
    if (name.length <= 64) {
      const body =
        `PROCEDURE \`${name}\`(IN xact_ VARCHAR(80), IN k_ VARBINARY(512), IN next_ TEXT CHARACTER SET utf8mb4, IN version_ BIGINT, IN state_ TEXT CHARACTER SET utf8mb4)\n` +
        'BEGIN\n' +
        '  IF xact_ IS NOT NULL THEN SET @fencegate_xact = xact_; END IF;\n' +
        '  START TRANSACTION;\n' +
        `  UPDATE ${this.#table} SET state = next_, version = version + 1 WHERE k = k_ AND version = version_ AND state = state_ COLLATE utf8mb4_bin;\n` +
        '  SELECT ROW_COUNT() AS n;\n' +
        'END';
      this.#open = await this.#procedure(name, body);
      // the key not cached (or refused on the remembered state): START TRANSACTION and the
      // fence row read under lock in one CALL
      const lock = `fencegate_lock_${this.#name}`;
      this.#lock = await this.#procedure(
        lock,
        `PROCEDURE \`${lock}\`(IN xact_ VARCHAR(80), IN k_ VARBINARY(512))\n` +
          'BEGIN\n' +
          '  IF xact_ IS NOT NULL THEN SET @fencegate_xact = xact_; END IF;\n' +
          '  START TRANSACTION;\n' +
          `  SELECT state, CAST(version AS CHAR) AS version FROM ${this.#table} WHERE k = k_ FOR UPDATE;\n` +
          'END',
      );
    }
    if (this.#guard) {
      // the guard mode's COMMIT and the nonce cleared in one CALL (a transaction may end in a procedure)
      this.#commit = await this.#procedure('fencegate_commit_guarded', 'PROCEDURE `fencegate_commit_guarded`()\nBEGIN\n  COMMIT;\n  SET @fencegate_xact = NULL;\nEND');
    }
    return this;
  }

  /** Creates the procedure `name` from `body` (CREATE `body`): its quoted name, or null when it cannot (no CREATE ROUTINE privilege). */
  async #procedure(name, body) {
    const [found] = await this.#db.query('SELECT 1 FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = ? AND ROUTINE_TYPE = \'PROCEDURE\'', [name]);
    if (Array.isArray(found) && found.length > 0) return `\`${name}\``;
    try {
      await this.#db.query(`CREATE ${body}`);
    } catch (e) {
      // already there (another process's init, or an earlier one: its definition is this one)
      if (!isObject(e) || e.errno !== ER_SP_ALREADY_EXISTS) return null;
    }
    return `\`${name}\``;
  }

  /** `{ state, version, value }` of `key` (version as decimal text), or null. */
  async load(key) {
    const sql = `SELECT state, value, CAST(version AS CHAR) AS version FROM ${this.#table} WHERE k = ?`;
    let rows;
    for (let attempt = 1; ; attempt++) {
      try {
        [rows] = await this.#db.execute(sql, [key]);
        break;
      } catch (e) {
        if (!retryable(e) || attempt >= LOAD_ATTEMPTS) throw e;
      }
    }
    if (rows.length === 0) return null;
    const row = rows[0];
    return loadedRecord(row.state, String(row.version), row.value, this.#decode);
  }

  /** Writes state and change when the row's version is still `expectedVersion`; true when it did. */
  async commit(key, expectedVersion, nextState, change) {
    const state = JSON.stringify(nextState);
    const value = change.kind === 'set' ? encodedOf(this, change) : null;
    const t = this.#table;
    let sql;
    let params;
    const creating = expectedVersion === null || expectedVersion === undefined;
    if (creating) {
      sql = `INSERT INTO ${t} (k, state, value, version) VALUES (?, ?, ?, 1)`;
      params = [key, state, value];
    } else {
      const valueSql = change.kind === 'set' ? '?' : change.kind === 'delete' ? 'NULL' : 'value';
      sql = `UPDATE ${t} SET state = ?, value = ${valueSql}, version = version + 1 WHERE k = ? AND version = CAST(? AS SIGNED)`;
      params = change.kind === 'set' ? [state, value, key, String(expectedVersion)] : [state, key, String(expectedVersion)];
    }
    try {
      const [r] = await this.#db.execute(sql, params);
      return r.affectedRows === 1;
    } catch (e) {
      // A concurrent writer created the key first: a lost compare-and-set.
      if (creating && e && e.errno === ER_DUP_ENTRY) return false;
      // Nothing committed, and another writer got in the way (deadlock, lock wait):
      // a lost compare-and-set. The gate loads, decides again and retries (bounded).
      if (retryable(e)) return false;
      if (!definitelyFailed(e) && e && typeof e === 'object') e.commitUnknown = true;
      throw e;
    }
  }

  /**
   * The gate's state-cache commit (docs/stores.md "commitFrom"): one statement
   * that writes `nextText` as is and the change when the row still has
   * `expected.version` AND `expected.state` (null: no row yet). Resolves to
   * `{ version }` (the version it wrote: expected + 1, or 1 for a new row), or
   * false when the precondition did not hold.
   */
  async commitFrom(key, expected, nextText, change) {
    const value = change.kind === 'set' ? encodedOf(this, change) : null;
    const t = this.#table;
    let sql;
    let params;
    if (expected === null) {
      sql = `INSERT INTO ${t} (k, state, value, version) VALUES (?, ?, ?, 1)`;
      params = [key, nextText, value];
    } else {
      const valueSql = change.kind === 'set' ? '?' : change.kind === 'delete' ? 'NULL' : 'value';
      sql = `UPDATE ${t} SET state = ?, value = ${valueSql}, version = version + 1 WHERE k = ? AND version = CAST(? AS SIGNED) AND state = ?`;
      const v = String(expected.version);
      params = change.kind === 'set' ? [nextText, value, key, v, expected.state] : [nextText, key, v, expected.state];
    }
    try {
      const [r] = await this.#db.execute(sql, params);
      if (r.affectedRows !== 1) return false;
      return { version: expected === null ? '1' : String(BigInt(expected.version) + 1n) };
    } catch (e) {
      if (expected === null && e && e.errno === ER_DUP_ENTRY) return false;
      if (retryable(e)) return false;
      if (!definitelyFailed(e) && e && typeof e === 'object') e.commitUnknown = true;
      throw e;
    }
  }

  /**
   * The caller's own statements in one transaction with the fence step
   * (Gate.transaction): on one connection (a Pool's `getConnection()`, released
   * after; a Connection itself, one transaction at a time) START TRANSACTION,
   * the fence row conditionally updated from `step.cached` or read `FOR
   * UPDATE` and written, then `step.run(connection)` (the mysql2 promise
   * connection), then COMMIT. A refusal rolls back before the statements run.
   * 1213, 1205, 1020 and 1062 on the fence row's INSERT are thrown with
   * `conflict: true`; a COMMIT whose outcome is unknown with `commitUnknown: true`.
   */
  fencedTransaction(key, step) {
    const db = this.#db;
    if (typeof db.getConnection === 'function') return this.#viaPool(key, step);
    const run = this.#lane.then(() => this.#onConnection(db, key, step));
    this.#lane = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  async #viaPool(key, step) {
    const conn = await this.#db.getConnection();
    let broken = false;
    try {
      return await this.#onConnection(conn, key, step, () => {
        broken = true;
      });
    } finally {
      if (broken && typeof conn.destroy === 'function') conn.destroy();
      else conn.release();
    }
  }

  async #onConnection(conn, key, step, lost = () => {}) {
    if (!this.#guard) return this.#inTransaction(conn, key, step, lost, null, null);
    // the MySQL guard's pass: a fresh nonce for this transaction, cleared when it ends (docs/guard.md)
    const guard = { cleared: false };
    try {
      return await this.#inTransaction(conn, key, step, lost, nonce(), guard);
    } finally {
      if (!guard.cleared) {
        try {
          await conn.query('SET @fencegate_xact = NULL');
        } catch {
          lost();
        }
      }
    }
  }

  /** COMMIT on `conn`; in the guard mode (`guard` not null) with the nonce cleared in the same CALL when the commit procedure is there. */
  async #commitOn(conn, guard) {
    if (guard !== null && this.#commit !== null) {
      try {
        await conn.query(`CALL ${this.#commit}()`);
        guard.cleared = true;
        return;
      } catch (e) {
        if (!callRefused(e)) throw e;
        this.#commit = null; // dropped since init() or not ours to run: nothing ran; COMMIT, then the clear
      }
    }
    await conn.query('COMMIT');
  }

  /** START TRANSACTION on `conn`, after setting the guard's nonce `xact` (null: none). */
  async #begin(conn, xact) {
    if (xact !== null) await conn.query('SET @fencegate_xact = ?', [xact]);
    await conn.query('START TRANSACTION');
  }

  /**
   * START TRANSACTION and the fence step on `conn`: the version written, or null (refused).
   * A cached key whose remembered state the decision applies to goes through the open
   * procedure (`init`): one round trip; a lost compare-and-set leaves the transaction open
   * and goes on with the locked read.
   */
  async #openWithFence(conn, key, step, xact) {
    const x = (text, params) => conn.execute(text, params);
    const cached = step.cached;
    if (cached === null || cached === undefined) return this.#openLocked(conn, key, step, xact);
    if (this.#open === null) {
      await this.#begin(conn, xact);
      return this.#fence(x, key, step);
    }
    const plan = step.decide(cached.state);
    // refused on the remembered state: decided again on the row as it is
    if (plan === null) return this.#openLocked(conn, key, step, xact);
    let results;
    try {
      [results] = await conn.execute(`CALL ${this.#open}(?, ?, ?, ?, ?)`, [xact, key, plan.nextStateText, String(cached.version), cached.state]);
    } catch (e) {
      if (!callRefused(e)) throw e;
      this.#open = null; // dropped since init() or not ours to run: nothing ran; two statements from now on
      await this.#begin(conn, xact);
      return this.#fence(x, key, step);
    }
    const first = Array.isArray(results) && Array.isArray(results[0]) ? results[0][0] : undefined;
    if (first !== undefined && Number(first.n) === 1) return String(BigInt(cached.version) + 1n);
    return this.#fence(x, key, step, null);
  }

  /**
   * START TRANSACTION and the fence step from the fence row read under lock: through the
   * lock procedure (`init`) in one round trip when it is there.
   */
  async #openLocked(conn, key, step, xact) {
    const x = (text, params) => conn.execute(text, params);
    if (this.#lock !== null) {
      let results;
      try {
        [results] = await conn.execute(`CALL ${this.#lock}(?, ?)`, [xact, key]);
      } catch (e) {
        if (!callRefused(e)) throw e;
        this.#lock = null; // dropped since init() or not ours to run: nothing ran; two statements from now on
      }
      if (this.#lock !== null) return this.#fenceRow(x, key, step, Array.isArray(results) && Array.isArray(results[0]) ? results[0][0] : undefined);
    }
    await this.#begin(conn, xact);
    return this.#fence(x, key, step, null);
  }

  async #inTransaction(conn, key, step, lost, xact, guard) {
    let committing = false;
    try {
      const version = await this.#openWithFence(conn, key, step, xact);
      if (version === null) {
        await conn.query('ROLLBACK');
        return null;
      }
      const watched = watchedConnection(conn);
      await runWatched(step, watched, (cause) => endedItself('MysqlStore', 'COMMIT, ROLLBACK, or a statement that commits implicitly, on the connection', cause));
      if (watched.rolledBack !== null) {
        // the body caught an error after which InnoDB had rolled the whole transaction back (the
        // fence write with it): a COMMIT now would commit nothing and report it applied
        const e = new Error(`MysqlStore: a statement of the transaction failed with ${watched.rolledBack.errno} (the server rolled the transaction back) and the statements function caught its error; nothing was written`);
        e.errno = watched.rolledBack.errno;
        e.cause = watched.rolledBack;
        throw e;
      }
      committing = true;
      await this.#commitOn(conn, guard);
      return { version };
    } catch (e) {
      if (!committing) {
        try {
          await conn.query('ROLLBACK');
        } catch {
          lost();
        }
      }
      if (isObject(e)) {
        if (retryable(e)) e.conflict = true;
        else if (committing && !definitelyFailed(e)) {
          e.commitUnknown = true;
          lost();
        }
      }
      throw e;
    }
  }

  /** The fence step on an open transaction, `x(text, params)` → `[result]`: the version written (decimal text), or null (refused). */
  async #fence(x, key, step, cached = step.cached) {
    const t = this.#table;
    if (cached !== null && cached !== undefined) {
      const plan = step.decide(cached.state);
      if (plan !== null) {
        const [r] = await x(`UPDATE ${t} SET state = ?, version = version + 1 WHERE k = ? AND version = CAST(? AS SIGNED) AND state = ?`, [
          plan.nextStateText,
          key,
          String(cached.version),
          cached.state,
        ]);
        if (r.affectedRows === 1) return String(BigInt(cached.version) + 1n);
      }
    }
    const [rows] = await x(`SELECT state, CAST(version AS CHAR) AS version FROM ${t} WHERE k = ? FOR UPDATE`, [key]);
    return this.#fenceRow(x, key, step, rows[0]);
  }

  /** The fence step on the fence row `row` read under lock (undefined: none): the version written (decimal text), or null (refused). */
  async #fenceRow(x, key, step, row) {
    const t = this.#table;
    const plan = step.decide(row === undefined ? null : row.state);
    if (plan === null) return null;
    if (row === undefined) {
      await this.#insertFence(x, key, plan.nextStateText);
      return '1';
    }
    await x(`UPDATE ${t} SET state = ?, version = version + 1 WHERE k = ?`, [plan.nextStateText, key]);
    return String(BigInt(String(row.version)) + 1n);
  }

  async #insertFence(x, key, text) {
    try {
      await x(`INSERT INTO ${this.#table} (k, state, value, version) VALUES (?, ?, NULL, 1)`, [key, text]);
    } catch (e) {
      if (isObject(e) && e.errno === ER_DUP_ENTRY) e.conflict = true; // a concurrent first writer
      throw e;
    }
  }

  /**
   * The fence step inside the caller's open transaction on `handle`: a mysql2
   * Connection or PoolConnection after `beginTransaction()` (promise or
   * callback API), or an ORM transaction (adapters/orm-handles.mjs). One
   * statement reads the fence row `FOR UPDATE` and whether a transaction is
   * open (`@@in_transaction`, or autocommit off); then the row is written on
   * the same connection. INVALID_ARGUMENT for a Pool, an unknown handle, or no
   * open transaction (nothing written then).
   */
  async fenceIn(handle, key, step) {
    try {
      return await this.#fenceIn(handle, key, step);
    } catch (e) {
      if (isObject(e) && (retryable(e) || e.errno === ER_DUP_ENTRY)) e.conflict = true; // the caller runs its transaction again
      throw e;
    }
  }

  async #fenceIn(handle, key, step) {
    const pool = poolKind(handle);
    if (pool !== null) {
      throw invalid(`MysqlStore.fenceIn: a ${pool} has no transaction of its own; pass the connection you began the transaction on (await pool.getConnection())`, {});
    }
    const run = sqlRunner(handle, 'mysql');
    if (run === null) throw invalid('MysqlStore.fenceIn: the handle is not a mysql2 connection nor an ORM transaction fencegate knows', {});
    const t = this.#table;
    const rows = await run(
      `SELECT f.state, CAST(f.version AS CHAR) AS version, (@@in_transaction = 1 OR @@autocommit = 0) AS in_tx FROM (SELECT 1 AS one) AS d LEFT JOIN ${t} AS f ON f.k = ? FOR UPDATE`,
      [key],
    );
    const row = rows[0];
    const inTx = row === undefined ? undefined : row.in_tx;
    if (!(inTx === 1 || inTx === '1' || inTx === true || inTx === 1n)) {
      throw invalid('MysqlStore.fenceIn: no transaction is open on the connection: call it after beginTransaction() (or inside your ORM\'s transaction) so the fence and your statements commit together', {});
    }
    const absent = row.version === null || row.version === undefined;
    const plan = step.decide(absent ? null : row.state);
    if (plan === null) {
      // refused: no pass on this connection (an earlier fenced step's nonce must not outlive this one)
      if (this.#guard) await run('SET @fencegate_xact = NULL', []);
      return;
    }
    // the MySQL guard's pass for the caller's transaction: lasts until this connection's next fenced step
    if (this.#guard) await run('SET @fencegate_xact = ?', [nonce()]);
    const x = async (text, params) => [await run(text, params)];
    if (absent) await this.#insertFence(x, key, plan.nextStateText);
    else await run(`UPDATE ${t} SET state = ?, version = version + 1 WHERE k = ?`, [plan.nextStateText, key]);
  }

  /** The stored text of `value` (the codec's `encode`); INVALID_ARGUMENT when the codec refuses it. */
  encodeValue(value) {
    return encodeWith(this.#encode, value);
  }
}
