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
import { FencegateError } from '../lib/errors.mjs';
import { codecOf, encodeWith, encodedOf, loadedRecord, tableOf, storeOptions, CODEC_OPTIONS } from './support.mjs';

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

function invalid(message, details) {
  return new FencegateError('INVALID_ARGUMENT', message, details);
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
  #db;
  #table;
  #encode;
  #decode;

  constructor(client, options = {}) {
    const db = promiseClient(client);
    options = storeOptions(options, 'MysqlStore', { table: null, ...CODEC_OPTIONS });
    const table = tableOf(options, IDENT);
    this.#db = db;
    this.#table = `\`${table}\``;
    [this.#encode, this.#decode] = codecOf(options, valueCodec);
  }

  /** Creates the table when it does not exist. Run once, before concurrent use. */
  async init() {
    await this.#db.query(
      `CREATE TABLE IF NOT EXISTS ${this.#table} (` +
        'k VARBINARY(512) NOT NULL PRIMARY KEY, state TEXT NOT NULL, value LONGTEXT NULL, version BIGINT NOT NULL' +
        ') ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin',
    );
    return this;
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

  /** The stored text of `value` (the codec's `encode`); INVALID_ARGUMENT when the codec refuses it. */
  encodeValue(value) {
    return encodeWith(this.#encode, value);
  }
}
