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
//
// The caller's own data (Gate.transaction, Gate.fenceIn; docs/stores.md "Your
// own data"): `fencedTransaction` runs one transaction on one connection —
// BEGIN, the fence step (from the state cache a conditional UPDATE of the
// fence row as the first statement; else `SELECT … FOR UPDATE` of the fence
// row, then its UPDATE or INSERT), the caller's statements, COMMIT — and
// `fenceIn` runs the locked read and the write on the caller's own handle
// (adapters/handles.mjs). The fence row's lock orders every fenced
// transaction on a key, under any isolation level.
import { valueCodec } from '../lib/codec.mjs';
import { codecOf, encodeWith, encodedOf, loadedRecord, tableOf, storeOptions, endedItself as ended, runWatched, CODEC_OPTIONS } from './support.mjs';
import { sqlRunner, poolKind, pgInTransaction } from './handles.mjs';
import { invalid } from '../lib/options.mjs';

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

/** 23505 unique_violation: on the fence row's INSERT, another transaction created the key first (a lost race: run it again). */
const UNIQUE_VIOLATION = '23505';

const isObject = (x) => x !== null && (typeof x === 'object' || typeof x === 'function');

/** The isolation levels of the `isolation` option, as BEGIN takes them. */
const ISOLATION = { 'read committed': 'READ COMMITTED', 'repeatable read': 'REPEATABLE READ', serializable: 'SERIALIZABLE' };

/** Thrown inside postgres.js's `sql.begin` to roll a refused fence step back; never leaves the store. */
const REFUSED = Symbol('refused');

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
function queryOf(client, prepare = true) {
  if (typeof client === 'function' && typeof client.unsafe === 'function') {
    // postgres.js: a tagged-template function; unsafe() takes SQL text and parameters. Its
    // statements are not prepared unless asked ({ prepare: true }): then a statement with
    // parameters is parsed once per connection, instead of a Describe round trip before each
    // run. The instance's own `prepare: false` (a pooler) still wins over this.
    const options = prepare ? { prepare: true } : undefined;
    return async ({ text, values }) => {
      const rows = await client.unsafe(text, values ?? [], options);
      return { rows, rowCount: rows.count };
    };
  }
  if (client !== null && typeof client === 'object' && typeof client.query === 'function') {
    // pg: the statements of the store are prepared once per connection (named), not parsed and planned for each write
    return (q) => client.query(q.prepared === undefined ? q : { name: q.prepared, text: q.text, values: q.values });
  }
  return null;
}

/** How `fencedTransaction` gets a connection of `client`: `'postgres.js'` (sql.begin), `'pool'` (pool.connect), `'one'` (BEGIN on the one connection, one transaction at a time). */
function transactionKind(client) {
  if (typeof client === 'function') return typeof client.begin === 'function' ? 'postgres.js' : 'one';
  return poolKind(client) === 'pg Pool' ? 'pool' : 'one';
}

/** The error of a body that ended the fenced transaction itself (support.mjs `endedItself`). */
const endedItself = (cause) => ended('PostgresStore', 'COMMIT, ROLLBACK or PREPARE TRANSACTION on the handle', cause);

/** Whether a statement's result (its command tag; pg: the protocol status after it) ended the transaction. */
function endsTransaction(result, status, text) {
  const command = isObject(result) ? result.command : undefined;
  if (command === 'COMMIT' || command === 'PREPARE TRANSACTION' || status === 'I') return true;
  // ROLLBACK TO SAVEPOINT has the tag ROLLBACK too, and keeps the transaction
  return command === 'ROLLBACK' && status !== 'T' && status !== 'E' && !(typeof text === 'string' && /^\s*rollback\s+((work|transaction)\s+)?to\b/i.test(text));
}

/**
 * What the body of a fenced transaction gets on pg: `client` with its `query` watched (an
 * object whose prototype is the client). `ended`: a statement ended the transaction.
 */
function watchedClient(client) {
  const out = { handle: Object.create(client), ended: false };
  const note = (result) => {
    const status = typeof client.getTransactionStatus === 'function' ? client.getTransactionStatus() : undefined;
    for (const r of Array.isArray(result) ? result : [result]) if (endsTransaction(r, status, undefined)) out.ended = true;
    return result;
  };
  out.handle.query = (...args) => {
    const last = args[args.length - 1];
    if (typeof last === 'function') {
      // the callback form
      args[args.length - 1] = (e, result) => last(e, e ? result : note(result));
      return client.query(...args);
    }
    const q = client.query(...args);
    return isObject(q) && typeof q.then === 'function' ? q.then(note) : q;
  };
  return out;
}

/**
 * The same for a postgres.js transaction `sql`: a function calling it (tagged templates), its
 * members inherited, `unsafe` watched; a query is still sent only when awaited (its `then`
 * notes the result), so fragments nested in other queries are left as they are.
 */
function watchedSql(tx) {
  const out = { handle: null, ended: false };
  const watch = (q) => {
    if (isObject(q) && typeof q.then === 'function' && typeof q.execute === 'function') {
      const then = q.then;
      q.then = function (ok, fail) {
        return then.call(
          this,
          (result) => {
            const text = isObject(result) && isObject(result.statement) ? result.statement.string : undefined;
            if (endsTransaction(result, undefined, text)) out.ended = true;
            return typeof ok === 'function' ? ok(result) : result;
          },
          fail,
        );
      };
    }
    return q;
  };
  const handle = (...args) => watch(tx(...args));
  Object.setPrototypeOf(handle, tx);
  handle.unsafe = (...args) => watch(tx.unsafe(...args));
  out.handle = handle;
  return out;
}

function notInTransaction() {
  return invalid(
    'PostgresStore.fenceIn: no transaction is open on the handle: call it after BEGIN (or inside sql.begin / your ORM\'s transaction) so the fence and your statements commit together',
    {},
  );
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
  /** The client as passed in (fencedTransaction takes its connections from it). */
  #client;
  /** transactionKind(client) */
  #kind;
  /** The BEGIN statement of fencedTransaction (with the `isolation` option's level). */
  #begin;
  #prepare;
  /** A single connection (`one`) runs one fenced transaction at a time: the tail of that queue. */
  #lane = Promise.resolve();

  constructor(pg, options = {}) {
    const query = queryOf(pg);
    if (query === null) {
      throw invalid('PostgresStore needs a pg Pool or Client, or a postgres.js sql instance', {
        client: pg === null ? 'null' : typeof pg,
      });
    }
    options = storeOptions(options, 'PostgresStore', { table: null, prepare: null, isolation: null, ...CODEC_OPTIONS });
    const table = tableOf(options, IDENT);
    const prepare = options.prepare ?? true;
    if (typeof prepare !== 'boolean') throw invalid('prepare must be true or false', { prepare });
    const isolation = options.isolation ?? null;
    if (isolation !== null && !Object.hasOwn(ISOLATION, isolation)) {
      throw invalid(`isolation must be one of ${Object.keys(ISOLATION).map((x) => JSON.stringify(x)).join(', ')}`, { isolation: String(isolation) });
    }
    this.#begin = isolation === null ? 'BEGIN' : `BEGIN ISOLATION LEVEL ${ISOLATION[isolation]}`;
    this.#client = pg;
    this.#kind = transactionKind(pg);
    this.#prepare = prepare;
    this.#pg = queryOf(pg, prepare);
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
      // the fence step of fencedTransaction / fenceIn (the fence row's value column is not touched)
      fenceRead: `SELECT state, version::text AS version FROM ${t} WHERE key = $1 FOR UPDATE`,
      fenceInsert: `INSERT INTO ${t} (key, state, value, version) VALUES ($1, $2, NULL, 1)`,
      fenceUpdate: `UPDATE ${t} SET state = $2, version = version + 1 WHERE key = $1`,
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

  /**
   * The caller's own statements in one transaction with the fence step
   * (Gate.transaction; docs/stores.md "Your own data"): on one connection —
   * a pg Pool's checked-out client (released after), the pg Client itself, or
   * postgres.js's `sql.begin` — BEGIN, the fence row conditionally updated
   * from `step.cached` or read `FOR UPDATE` and written, then
   * `step.run(handle)` (the pg client / the postgres.js transaction `sql`),
   * then COMMIT. A refusal rolls back before the statements run. Retry
   * classes (40001, 40P01, 55P03, and 23505 on the fence row's INSERT) are
   * thrown with `conflict: true`; a COMMIT whose outcome is unknown (a lost
   * connection) with `commitUnknown: true`. Answers `{ version }` or null.
   */
  fencedTransaction(key, step) {
    if (this.#kind === 'postgres.js') return this.#viaBegin(key, step);
    if (this.#kind === 'pool') return this.#viaPool(key, step);
    // one connection: one transaction at a time on it (statements of two would interleave)
    const run = this.#lane.then(() => this.#onClient(this.#client, key, step));
    this.#lane = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  /**
   * The fence step inside the caller's open transaction: `handle` is a pg
   * Client or PoolClient after BEGIN, a postgres.js transaction `sql` (inside
   * `sql.begin`) or reserved connection, or an ORM transaction
   * (adapters/orm-handles.mjs). Whether a transaction block is open comes from
   * the handle (pg's protocol status; a postgres.js transaction is one), else
   * from a SAVEPOINT (refused outside one); then the fence row is read `FOR
   * UPDATE` and written on the same handle. INVALID_ARGUMENT for a pool (pg Pool, the top-level
   * postgres.js `sql`: no transaction of their own), a handle it cannot run
   * statements on, or no open transaction (nothing written then).
   */
  async fenceIn(handle, key, step) {
    try {
      return await this.#fenceIn(handle, key, step);
    } catch (e) {
      if (isObject(e) && retryable(e)) e.conflict = true; // 40001, 40P01, 55P03: the caller runs its transaction again
      throw e;
    }
  }

  async #fenceIn(handle, key, step) {
    const pool = poolKind(handle);
    if (pool !== null) {
      throw invalid(
        `PostgresStore.fenceIn: a ${pool} has no transaction of its own; pass the client you ran BEGIN on (await pool.connect()), or the sql that sql.begin(…) gives its callback`,
        {},
      );
    }
    const run = sqlRunner(handle, 'postgres');
    if (run === null) {
      throw invalid('PostgresStore.fenceIn: the handle is not a pg client, a postgres.js transaction sql, nor an ORM transaction fencegate knows', {});
    }
    const status = run.inTransaction === true ? true : pgInTransaction(handle);
    if (status === false) throw notInTransaction();
    if (status === undefined) {
      // the handle cannot tell (a reserved postgres.js connection, an older pg, an ORM): SAVEPOINT is
      // refused outside a transaction block (25P01), at the cost of two statements
      try {
        await run('SAVEPOINT fencegate_in_transaction', []);
      } catch (e) {
        if (isObject(e) && e.code === '25P01') throw notInTransaction();
        throw e;
      }
      await run('RELEASE SAVEPOINT fencegate_in_transaction', []);
    }
    const s = this.#sql;
    const rows = await run(s.fenceRead.text, [key]);
    const row = rows[0];
    const plan = step.decide(row === undefined ? null : row.state);
    if (plan === null) return;
    if (row === undefined) {
      try {
        await run(s.fenceInsert.text, [key, plan.nextStateText]);
      } catch (e) {
        if (isObject(e) && e.code === UNIQUE_VIOLATION) e.conflict = true;
        throw e;
      }
    } else {
      await run(s.fenceUpdate.text, [key, plan.nextStateText]);
    }
  }

  /**
   * The fence step on an open transaction, `q(statement, values)` → `{ rows, rowCount }`:
   * the version written (decimal text), or null (refused: nothing written).
   */
  async #fence(q, key, step, cached = step.cached) {
    const s = this.#sql;
    if (cached !== null && cached !== undefined) {
      // the state cache: the decision on the remembered state, its precondition in the first statement's WHERE clause
      const plan = step.decide(cached.state);
      if (plan !== null) {
        const r = await q(s.none, [key, plan.nextStateText, String(cached.version), cached.state]);
        if (r.rowCount === 1) return String(BigInt(cached.version) + 1n);
      }
    }
    const { rows } = await q(s.fenceRead, [key]);
    const row = rows[0];
    const plan = step.decide(row === undefined ? null : row.state);
    if (plan === null) return null;
    if (row === undefined) {
      try {
        await q(s.fenceInsert, [key, plan.nextStateText]);
      } catch (e) {
        if (isObject(e) && e.code === UNIQUE_VIOLATION) e.conflict = true; // a concurrent first writer
        throw e;
      }
      return '1';
    }
    await q(s.fenceUpdate, [key, plan.nextStateText]); // the row is locked: it matches
    return String(BigInt(row.version) + 1n);
  }

  async #viaPool(key, step) {
    const client = await this.#client.connect();
    // A checked-out pg client whose connection dies emits 'error' (the pool listens
    // only while it is idle): without a listener that ends the process. The query
    // in flight rejects with the same error, which is what the caller sees.
    const ignore = () => {};
    client.on('error', ignore);
    let broken;
    try {
      return await this.#onClient(client, key, step, (e) => {
        broken = e;
      });
    } finally {
      client.removeListener('error', ignore);
      client.release(broken);
    }
  }

  /** One fenced transaction on the pg connection `client`; `lost(e)`: ROLLBACK failed, the connection is not to be reused. */
  async #onClient(client, key, step, lost = () => {}) {
    const q = this.#prepare
      ? (st, values) => client.query({ name: st.prepared, text: st.text, values })
      : (st, values) => client.query({ text: st.text, values });
    let committing = false;
    try {
      const version = await this.#openWithFence(client, q, key, step);
      if (version === null) {
        await client.query('ROLLBACK');
        return null;
      }
      const watched = watchedClient(client);
      await runWatched(step, watched, endedItself);
      // The statements must not end the transaction themselves (a COMMIT or ROLLBACK in
      // the body, also when a BEGIN follows): what ran after it ran unfenced, and the fence
      // write may be gone. pg ≥ 8.12 tells the protocol's status for free: 'T' (open) or 'E'
      // (failed) here, and after each of the body's statements.
      const status = typeof client.getTransactionStatus === 'function' ? client.getTransactionStatus() : undefined;
      if (status === 'I') throw endedItself();
      committing = true;
      const r = await client.query('COMMIT');
      if (r !== null && typeof r === 'object' && r.command === 'ROLLBACK') {
        // COMMIT of an aborted transaction answers ROLLBACK: a statement failed and the caller's code caught its error
        throw new Error('PostgresStore: COMMIT rolled back: a statement of the transaction failed (its error was caught inside the statements function); nothing was written');
      }
      return { version };
    } catch (e) {
      if (!committing) {
        try {
          await client.query('ROLLBACK');
        } catch (r) {
          lost(r);
        }
      }
      if (isObject(e)) {
        if (retryable(e)) e.conflict = true;
        else if (committing && !definitelyFailed(e) && !(e instanceof Error && e.message.startsWith('PostgresStore: COMMIT rolled back'))) {
          e.commitUnknown = true;
          lost(e);
        }
      }
      throw e;
    }
  }

  /**
   * BEGIN and the fence step on the pg connection `client`: the version written, or null (refused).
   * For a cached key whose remembered state the decision applies to, BEGIN and the conditional
   * UPDATE go in one round trip — one simple query of two statements, the values as literals
   * (pg's `escapeLiteral`) — so a fenced transaction costs the caller's statements and COMMIT
   * plus that one round trip, as an unfenced one costs BEGIN (docs/stores.md "Your own data").
   * A lost compare-and-set leaves the transaction open and goes on with the locked read.
   */
  async #openWithFence(client, q, key, step) {
    const cached = step.cached;
    if (cached === null || cached === undefined || typeof client.escapeLiteral !== 'function') {
      await client.query(this.#begin);
      return this.#fence(q, key, step);
    }
    const plan = step.decide(cached.state);
    if (plan === null) {
      // refused on the remembered state: decided again on the row as it is
      await client.query(this.#begin);
      return this.#fence(q, key, step, null);
    }
    const lit = (text) => client.escapeLiteral(text);
    const version = BigInt(cached.version); // the store's own answer: an integer
    const results = await client.query(
      `${this.#begin}; UPDATE ${this.#table} SET state = ${lit(plan.nextStateText)}, version = version + 1 WHERE key = ${lit(key)} AND version = ${version} AND state = ${lit(cached.state)}`,
    );
    const updated = Array.isArray(results) ? results[1] : undefined;
    if (updated !== undefined && updated.rowCount === 1) return String(version + 1n);
    return this.#fence(q, key, step, null);
  }

  async #viaBegin(key, step) {
    const options = { prepare: this.#prepare };
    let out = null;
    let committing = false;
    try {
      await this.#client.begin(this.#begin.slice('BEGIN'.length).toLowerCase(), async (tx) => {
        const q = async (st, values) => {
          const rows = await tx.unsafe(st.text, values, options);
          return { rows, rowCount: rows.count };
        };
        const version = await this.#fence(q, key, step);
        if (version === null) throw REFUSED;
        const watched = watchedSql(tx);
        await runWatched(step, watched, endedItself);
        committing = true; // what fails from here on failed in (or around) COMMIT
        out = { version };
      });
      return out;
    } catch (e) {
      if (e === REFUSED) return null;
      if (isObject(e)) {
        if (retryable(e)) e.conflict = true;
        else if (committing && !definitelyFailed(e)) e.commitUnknown = true;
      }
      throw e;
    }
  }

  /** The stored text of `value` (the codec's `encode`); INVALID_ARGUMENT when the codec refuses it. */
  encodeValue(value) {
    return encodeWith(this.#encode, value);
  }
}
