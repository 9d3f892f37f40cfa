// fencegate/postgres — a host store on PostgreSQL through node-postgres (pg).
//
// One table holds, per resource key, the fence state (its JSON text, as fencegate encodes it),
// the protected value (JSON text, NULL = no value) and a `version` bigint.
// fencegate makes the decision in Wasm; PostgreSQL runs a compare-and-set as
// one statement: `UPDATE … WHERE key = $1 AND version = $expected` (or an
// `INSERT … ON CONFLICT DO NOTHING` for a new key) that writes state and value
// together, or nothing. A lost compare-and-set makes the gate load, decide
// again and retry (bounded).
//
// Values go through a codec (default: fencegate's `valueCodec`, docs/stores.md
// "Values"): exact round trip, or INVALID_ARGUMENT before anything is written.
//
// Isolation: every statement is its own transaction (autocommit), and the
// compare-and-set lives in the statement's WHERE clause, so its correctness
// does not depend on the isolation level. Under READ COMMITTED a concurrent
// winner makes the UPDATE match no row (false); under REPEATABLE READ and
// SERIALIZABLE PostgreSQL raises a serialization failure instead: that whole
// "retry the transaction" class is read as a lost compare-and-set (docs/stores.md).
//
// The client is passed in (a `pg.Pool` or `pg.Client`, or a postgres.js `sql`
// instance); this module imports only the codec. postgres.js runs the same
// statements through `sql.unsafe(text, params)`; its server errors carry the
// same SQLSTATE in `code`.
import { valueCodec } from '../lib/codec.mjs';
import { FencegateError } from '../lib/errors.mjs';
import { codecOf, encodeWith, encodedOf, loadedRecord, tableOf, storeOptions, CODEC_OPTIONS } from './support.mjs';

const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * SQLSTATEs after which the statement did not commit and running it again is
 * the documented remedy: 40001 serialization_failure (REPEATABLE READ /
 * SERIALIZABLE, and hot-standby conflicts), 40P01 deadlock_detected, 55P03
 * lock_not_available (a `lock_timeout` while waiting for the row lock).
 * 40003 statement_completion_unknown is not among them: it may have committed.
 */
export const RETRY_SQLSTATES = Object.freeze(['40001', '40P01', '55P03']);

function retryable(e) {
  return e !== null && typeof e === 'object' && RETRY_SQLSTATES.includes(e.code);
}

// How often load() runs its SELECT again after a retry-class failure.
const LOAD_ATTEMPTS = 4;

// An error PostgreSQL answered with (a SQLSTATE), other than a connection or
// shutdown class, means the statement did not commit. Anything else (a lost
// connection, a client-side timeout) may have committed.
function definitelyFailed(e) {
  const code = e && typeof e === 'object' ? e.code : undefined;
  // (EPIPE and the like are socket errors, not SQLSTATEs: no SQLSTATE class starts with E.)
  return (
    typeof code === 'string' &&
    /^[0-9A-Z]{5}$/.test(code) &&
    !code.startsWith('E') &&
    !code.startsWith('08') &&
    !code.startsWith('57') &&
    code !== '40003'
  );
}

/** A prepared-statement name for `text` (pg keeps one parsed statement per name and connection): `fg_` + a 64-bit FNV-1a of the text. */
function statementName(text) {
  let h = 0xcbf29ce484222325n;
  for (let i = 0; i < text.length; i++) h = BigInt.asUintN(64, (h ^ BigInt(text.charCodeAt(i))) * 0x100000001b3n);
  return `fg_${h.toString(16)}`;
}

/** `query({ text, values })` → `{ rows, rowCount }` over pg (Pool, Client) or postgres.js (`sql`); null for anything else. */
function queryOf(client) {
  if (typeof client === 'function' && typeof client.unsafe === 'function') {
    // postgres.js: a tagged-template function; unsafe() takes SQL text and parameters.
    return async ({ text, values }) => {
      const rows = await client.unsafe(text, values ?? []);
      return { rows, rowCount: rows.count };
    };
  }
  if (client !== null && typeof client === 'object' && typeof client.query === 'function') {
    // pg: the statements of the store are prepared once per connection (named), not parsed and planned for each write
    return (q) => client.query(q.prepared === undefined ? q : { name: q.prepared, text: q.text, values: q.values });
  }
  return null;
}

/**
 * A compare-and-set host store on a pg `Pool` or `Client`, or a postgres.js `sql`.
 * Options: `table` (default `"fencegate"`), `encode`/`decode` for values
 * (default `valueCodec`), `prepare` (default true: on pg, the load and commit
 * statements are named prepared statements, parsed once per connection; false
 * behind a pooler that does not keep them). Call `await store.init()` once to create the table.
 */
export class PostgresStore {
  #pg;
  #table;
  #encode;
  #decode;
  /** The statements of load and commitFrom: `{ text, prepared }` (prepared: the pg statement name, or undefined). */
  #sql;

  constructor(pg, options = {}) {
    const query = queryOf(pg);
    if (query === null) {
      throw new FencegateError('INVALID_ARGUMENT', 'PostgresStore needs a pg Pool or Client, or a postgres.js sql instance', {
        client: pg === null ? 'null' : typeof pg,
      });
    }
    options = storeOptions(options, 'PostgresStore', { table: null, prepare: null, ...CODEC_OPTIONS });
    const table = tableOf(options, IDENT);
    const prepare = options.prepare ?? true;
    if (typeof prepare !== 'boolean') throw new FencegateError('INVALID_ARGUMENT', 'prepare must be true or false', { prepare });
    this.#pg = query;
    this.#table = `"${table}"`;
    [this.#encode, this.#decode] = codecOf(options, valueCodec);
    const t = this.#table;
    const texts = {
      load: `SELECT state, value, version::text AS version FROM ${t} WHERE key = $1`,
      // (no RETURNING: a row written has the version the WHERE clause pinned, plus one; an inserted row has 1)
      insert: `INSERT INTO ${t} (key, state, value, version) VALUES ($1, $2, $3, 1) ON CONFLICT (key) DO NOTHING`,
      set: `UPDATE ${t} SET state = $2, value = $3, version = version + 1 WHERE key = $1 AND version = $4::bigint AND state = $5`,
      delete: `UPDATE ${t} SET state = $2, value = NULL, version = version + 1 WHERE key = $1 AND version = $3::bigint AND state = $4`,
      none: `UPDATE ${t} SET state = $2, value = value, version = version + 1 WHERE key = $1 AND version = $3::bigint AND state = $4`,
    };
    this.#sql = {};
    for (const [name, text] of Object.entries(texts)) this.#sql[name] = { text, prepared: prepare ? statementName(text) : undefined };
  }

  /** Creates the table when it does not exist. Run once, before concurrent use. */
  async init() {
    // Looked up first so that an existing table draws no "already exists, skipping"
    // NOTICE (postgres.js prints notices with console.log unless `onnotice` is set).
    const found = await this.#pg({ text: 'SELECT to_regclass($1) IS NOT NULL AS found', values: [this.#table] });
    if (found.rows.length === 1 && found.rows[0].found === true) return this;
    await this.#pg({
      text: `CREATE TABLE IF NOT EXISTS ${this.#table} (` + 'key text PRIMARY KEY, state text NOT NULL, value text, version bigint NOT NULL)',
    });
    return this;
  }

  /** `{ state, version, value }` of `key` (version as decimal text), or null. */
  async load(key) {
    const { text, prepared } = this.#sql.load;
    const query = { text, prepared, values: [key] };
    let r;
    for (let attempt = 1; ; attempt++) {
      try {
        r = await this.#pg(query);
        break;
      } catch (e) {
        if (!retryable(e) || attempt >= LOAD_ATTEMPTS) throw e;
      }
    }
    if (r.rows.length === 0) return null;
    const row = r.rows[0];
    return loadedRecord(row.state, row.version, row.value, this.#decode);
  }

  /** Writes state and change when the row's version is still `expectedVersion`; true when it did. */
  async commit(key, expectedVersion, nextState, change) {
    const state = JSON.stringify(nextState);
    const value = change.kind === 'set' ? encodedOf(this, change) : null;
    const t = this.#table;
    let query;
    if (expectedVersion === null || expectedVersion === undefined) {
      query = {
        text: `INSERT INTO ${t} (key, state, value, version) VALUES ($1, $2, $3, 1) ON CONFLICT (key) DO NOTHING`,
        values: [key, state, value],
      };
    } else {
      const valueSql = change.kind === 'set' ? '$3' : change.kind === 'delete' ? 'NULL' : 'value';
      const params = [key, state, String(expectedVersion)];
      if (change.kind === 'set') params.splice(2, 0, value);
      const versionParam = change.kind === 'set' ? '$4' : '$3';
      query = {
        text:
          `UPDATE ${t} SET state = $2, value = ${valueSql}, version = version + 1 ` +
          `WHERE key = $1 AND version = ${versionParam}::bigint`,
        values: params,
      };
    }
    try {
      const r = await this.#pg(query);
      return r.rowCount === 1;
    } catch (e) {
      // Nothing committed, and another writer got there first (or a deadlock):
      // a lost compare-and-set. The gate loads, decides again and retries (bounded).
      if (retryable(e)) return false;
      if (!definitelyFailed(e) && e && typeof e === 'object') e.commitUnknown = true;
      throw e;
    }
  }

  /**
   * The gate's state-cache commit (docs/stores.md "commitFrom"): one statement
   * that writes `nextText` (the next state's JSON text, stored as is) and the
   * change when the row still has `expected.version` AND `expected.state`
   * (null: no row yet). Resolves to `{ version }` (the version it wrote), or
   * false when the precondition did not hold.
   */
  async commitFrom(key, expected, nextText, change) {
    const value = change.kind === 'set' ? encodedOf(this, change) : null;
    let sql;
    let values;
    if (expected === null) {
      sql = this.#sql.insert;
      values = [key, nextText, value];
    } else if (change.kind === 'set') {
      sql = this.#sql.set;
      values = [key, nextText, value, String(expected.version), expected.state];
    } else {
      sql = change.kind === 'delete' ? this.#sql.delete : this.#sql.none;
      values = [key, nextText, String(expected.version), expected.state];
    }
    const query = { text: sql.text, prepared: sql.prepared, values };
    let r;
    try {
      r = await this.#pg(query);
    } catch (e) {
      if (retryable(e)) return false;
      if (!definitelyFailed(e) && e && typeof e === 'object') e.commitUnknown = true;
      throw e;
    }
    if (r.rowCount !== 1) return false;
    // the version as load reads it (decimal text): the one the WHERE clause matched, plus one
    return { version: expected === null ? '1' : String(BigInt(expected.version) + 1n) };
  }

  /** The stored text of `value` (the codec's `encode`); INVALID_ARGUMENT when the codec refuses it. */
  encodeValue(value) {
    return encodeWith(this.#encode, value);
  }
}
