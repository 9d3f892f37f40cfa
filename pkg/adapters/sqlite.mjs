// fencegate/sqlite — a host store on SQLite through better-sqlite3 (v12).
//
// One table holds, per resource key, the persisted fence state (JSON text,
// as fencegate encodes it), the protected value (JSON text, NULL = no value) and a version counter.
// Every fenced operation runs as one `BEGIN IMMEDIATE` transaction: read the
// state, let fencegate decide, write state and value together — or nothing.
// IMMEDIATE takes SQLite's write lock up front, so writers in other processes
// wait (better-sqlite3's `timeout`, default 5 s) instead of failing at COMMIT.
// A gate's state cache (docs/decisions/state-cache.md) skips the transaction for a key it remembers:
// `commitFrom` is one UPDATE whose WHERE clause is the precondition (version and
// state text), committed on its own; anything else runs the transaction.
//
// Values go through a codec (default: fencegate's `valueCodec`, docs/stores.md
// "Values"): exact round trip, or INVALID_ARGUMENT before anything is written.
//
// The client is passed in (an open `Database`); this module imports only the codec.
import { valueCodec } from '../lib/codec.mjs';
import { FencegateError } from '../lib/errors.mjs';
import { codecOf, encodeWith, encodedOf, loadedRecord, tableOf, nextStateTextOf, storeOptions, endedItself as ended, CODEC_OPTIONS } from './support.mjs';
import { ormRunner } from './orm-handles.mjs';
import { invalid } from '../lib/options.mjs';

const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * The database guard's pass (fencegate/guard, docs/guard.md): per Database, per
 * fence table, the keys whose fence row the transaction open on that connection
 * wrote, each with the versions its fence steps wrote. The guard's triggers on a
 * protected table call `fencegate_pass(fence table, key, operation, table, version)`,
 * version being the key's fence row's version as the transaction sees it: 1 when the
 * key passed and that version is one this transaction's fence step wrote (a fence
 * write rolled back, to a savepoint too, reverts the row, and the pass no longer
 * holds), else it throws GUARD_REFUSED (the statement fails, better-sqlite3 rethrows
 * that error). Registered on every Database a SqliteStore is made on; a connection
 * without the function (the sqlite3 shell, another program) fails the statement with
 * "no such function: fencegate_pass". The four-argument form (the triggers of an
 * earlier guard) always refuses: install the guard again.
 */
const PASSES = new WeakMap();

function guardPass(db, tables, fence, key, op, table, version) {
  const pass = tables.get(fence);
  if (pass !== undefined && db.inTransaction === true) {
    const written = pass.keys.get(key);
    if (written !== undefined && version !== null && written.includes(version)) return 1;
  }
  throw new FencegateError(
    'GUARD_REFUSED',
    `fencegate guard: ${op} on ${table} refused: this transaction did not pass the fence for key ${key}`,
    { key, table, operation: op, fenceTable: fence },
  );
}

/** The pass record of `table` on `db`, with the function registered (null where the driver cannot register functions: bun:sqlite). */
function passOf(db, table) {
  let tables = PASSES.get(db);
  if (tables === undefined) {
    if (typeof db.function !== 'function') return null;
    tables = new Map();
    PASSES.set(db, tables);
    db.function('fencegate_pass', { varargs: false, deterministic: false }, (fence, key, op, t, version) => guardPass(db, tables, fence, key, op, t, version));
    db.function('fencegate_pass', { varargs: false, deterministic: false }, (fence, key, op, t) => {
      throw new FencegateError('GUARD_REFUSED', `fencegate guard: ${op} on ${t} refused: the guard's triggers are from an earlier fencegate: install the guard again (installGuard)`, { key, table: t, operation: op, fenceTable: fence });
    });
  }
  let pass = tables.get(table);
  if (pass === undefined) {
    pass = { keys: new Map(), ending: false };
    tables.set(table, pass);
  }
  return pass;
}

/** Records in `pass` that this transaction's fence step wrote `version` of the fence row of `key`. */
function passed(pass, key, version) {
  const written = pass.keys.get(key);
  if (written === undefined) pass.keys.set(key, [version]);
  else written.push(version);
}

/**
 * Whether `handle` runs its statements on `db`: the Database itself, or an ORM
 * transaction over it (Drizzle's better-sqlite3 session keeps it as `client`).
 */
function sameDatabase(handle, db) {
  if (handle === db) return true;
  try {
    return handle !== null && typeof handle === 'object' && handle.session !== null && typeof handle.session === 'object' && handle.session.client === db;
  } catch {
    return false;
  }
}

// SQLite's "try again" classes: SQLITE_BUSY (and _RECOVERY, _SNAPSHOT, _TIMEOUT)
// and SQLITE_LOCKED (and _SHAREDCACHE, _VTAB). The transaction did not commit
// (better-sqlite3 rolls back), so the gate may run it again.
const RETRY = /^SQLITE_(BUSY|LOCKED)(_[A-Z]+)?$/;

/**
 * `(...params) => value` of a prepared statement that returns one column of
 * at most one row (`RETURNING version`): undefined or null when no row. As a
 * plain value where the driver can pluck (better-sqlite3), else from the row (bun:sqlite).
 */
function one(statement) {
  if (typeof statement.pluck === 'function') {
    const plucked = statement.pluck();
    return plucked.get.bind(plucked);
  }
  return (...params) => {
    const row = statement.get(...params);
    return row == null ? row : row.version;
  };
}

/** The error of a body that ended the fenced transaction itself (support.mjs `endedItself`). */
const endedItself = (cause) => ended('SqliteStore', 'COMMIT, ROLLBACK or END on the Database', cause);

/**
 * A transaction-shaped host store on a better-sqlite3 `Database`.
 * Options: `table` (default `"fencegate"`), `encode`/`decode` for values
 * (default `valueCodec`), `createTable` (default true).
 * A busy or locked database (SQLITE_BUSY*, SQLITE_LOCKED*) after better-sqlite3's
 * `timeout` is thrown with `conflict: true`: the gate runs the transaction again
 * (bounded by `maxRetries`), then answers COMMIT_CONFLICT.
 */
export class SqliteStore {
  #db;
  #select;
  #insert;
  #updateVersion;
  #from;
  #run;
  #fence;
  #fenceVia;
  #fenced;
  #busy = false;
  /** The guard's pass on this Database and table (see PASSES), or null. */
  #pass = null;
  #encode;
  #decode;

  constructor(db, options = {}) {
    if (db === null || typeof db !== 'object' || typeof db.prepare !== 'function' || typeof db.transaction !== 'function') {
      throw invalid('SqliteStore needs an open better-sqlite3 Database');
    }
    options = storeOptions(options, 'SqliteStore', { table: null, createTable: 'boolean', ...CODEC_OPTIONS });
    const table = tableOf(options, IDENT);
    this.#db = db;
    [this.#encode, this.#decode] = codecOf(options, valueCodec);
    // The table and statements are made here: a failure (SQLITE_BUSY from CREATE TABLE
    // under contention, "no such table" with createTable: false…) is STORE_ERROR with the
    // driver's error as `cause`, not a raw SqliteError.
    const sql = (f) => {
      try {
        return f();
      } catch (e) {
        throw new FencegateError('STORE_ERROR', `SqliteStore: setting up table ${JSON.stringify(table)} failed: ${e instanceof Error ? e.message : String(e)}`, { table, cause: e });
      }
    };
    const prepare = (text) => sql(() => db.prepare(text));
    if (options.createTable !== false) {
      sql(() => db.exec(
        `CREATE TABLE IF NOT EXISTS "${table}" (` +
          'key TEXT PRIMARY KEY NOT NULL, state TEXT NOT NULL, value TEXT, version INTEGER NOT NULL) WITHOUT ROWID',
      ));
    }
    this.#pass = sql(() => passOf(db, table));
    this.#select = prepare(`SELECT state, value, version FROM "${table}" WHERE key = ?`);
    // Inside the transaction only the state is read, not the value: as a plain
    // string where the driver can pluck (better-sqlite3), else from the row (bun:sqlite)
    const stateOnly = prepare(`SELECT state FROM "${table}" WHERE key = ?`);
    let selectState;
    if (typeof stateOnly.pluck === 'function') {
      const plucked = stateOnly.pluck();
      selectState = (key) => plucked.get(key);
    } else {
      selectState = (key) => {
        const row = stateOnly.get(key);
        return row == null ? row : row.state;
      };
    }
    this.#insert = prepare(`INSERT INTO "${table}" (key, state, value, version) VALUES (?, ?, ?, 1)`);
    const updates = {
      set: `UPDATE "${table}" SET state = ?, value = ?, version = version + 1 WHERE key = ?`,
      delete: `UPDATE "${table}" SET state = ?, value = NULL, version = version + 1 WHERE key = ?`,
      none: `UPDATE "${table}" SET state = ?, version = version + 1 WHERE key = ?`,
    };
    // each answering the version written (the gate's state cache remembers it)
    this.#updateVersion = {};
    for (const [kind, text] of Object.entries(updates)) this.#updateVersion[kind] = one(prepare(`${text} RETURNING version`));
    // commitFrom: one conditional statement each (the precondition is the WHERE clause), answering the version written
    this.#from = {
      insert: one(prepare(`INSERT INTO "${table}" (key, state, value, version) VALUES (?, ?, ?, 1) ON CONFLICT (key) DO NOTHING RETURNING version`)),
      set: one(prepare(`UPDATE "${table}" SET state = ?, value = ?, version = version + 1 WHERE key = ? AND version = ? AND state = ? RETURNING version`)),
      delete: one(prepare(`UPDATE "${table}" SET state = ?, value = NULL, version = version + 1 WHERE key = ? AND version = ? AND state = ? RETURNING version`)),
      none: one(prepare(`UPDATE "${table}" SET state = ?, version = version + 1 WHERE key = ? AND version = ? AND state = ? RETURNING version`)),
    };
    /** One transaction's write: the version written, or null when `fn` answers null (rejected: nothing written). */
    const apply = (key, fn) => {
      const stored = selectState(key); // the state text; no row: undefined (better-sqlite3), null (bun:sqlite)
      const out = fn(stored == null ? null : stored);
      if (out === null || out === undefined) return null; // rejected: write nothing
      const state = nextStateTextOf(out);
      const { change } = out;
      const value = change.kind === 'set' ? encodedOf(this, change) : null;
      const update = this.#updateVersion;
      if (stored == null) {
        this.#insert.run(key, state, value);
        return 1;
      }
      if (change.kind === 'set') return update.set(state, value, key);
      if (change.kind === 'delete') return update.delete(state, key);
      return update.none(state, key);
    };
    this.#run = db.transaction(apply);
    // The fence row's state and version, read inside a transaction (fencedTransaction, fenceIn)
    const selectFence = prepare(`SELECT state, version FROM "${table}" WHERE key = ?`);
    const insertFence = one(prepare(`INSERT INTO "${table}" (key, state, value, version) VALUES (?, ?, NULL, 1) RETURNING version`));
    const updateFence = this.#updateVersion.none;
    const fromFence = this.#from.none;
    /** The fence step on the open transaction: the version of the fence row written, or null (refused: nothing written). */
    this.#fence = (key, step, cached) => {
      if (cached !== null) {
        // the state cache: the decision from the remembered state, committed with it as the precondition
        const plan = step.decide(cached.state);
        if (plan !== null) {
          const version = fromFence(plan.nextStateText, key, cached.version, cached.state);
          if (version != null) return version;
        }
      }
      const row = selectFence.get(key);
      const plan = step.decide(row == null ? null : row.state);
      if (plan === null) return null;
      return row == null ? insertFence(key, plan.nextStateText) : updateFence(plan.nextStateText, key);
    };
    // The same fence step through an ORM transaction's runner (Knex, Kysely, Drizzle, Prisma on
    // SQLite): the caller's transaction is on another connection to this database file (or on
    // this Database through an asynchronous wrapper), so the statements go through the ORM.
    // SQLite transactions are serializable: a writer that committed between this read and
    // this write makes the write fail (SQLITE_BUSY*), which rolls the caller's transaction back.
    const mainFile = "SELECT file FROM pragma_database_list WHERE name = 'main'";
    const selectFile = prepare(mainFile);
    this.#fenceVia = async (run, key, step) => {
      const [theirs] = await run(mainFile, []);
      const ours = selectFile.get().file;
      const file = theirs == null ? undefined : theirs.file;
      // an in-memory or temporary database has no file: only this Database's own open transaction can be it
      if (file !== ours || (ours === '' && db.inTransaction !== true)) {
        throw invalid('SqliteStore.fenceIn: the ORM transaction is on another database than this store\'s');
      }
      const [row] = await run(`SELECT state, version FROM "${table}" WHERE key = ?`, [key]);
      const plan = step.decide(row == null ? null : row.state);
      if (plan === null) return;
      if (row == null) await run(`INSERT INTO "${table}" (key, state, value, version) VALUES (?, ?, NULL, 1)`, [key, plan.nextStateText]);
      else await run(`UPDATE "${table}" SET state = ?, version = version + 1 WHERE key = ?`, [plan.nextStateText, key]);
    };
    this.#fenced = db.transaction((key, step) => {
      const version = this.#fence(key, step, step.cached);
      if (version === null) return null; // refused: the statements never run (nothing was written)
      if (this.#pass !== null) passed(this.#pass, key, version); // the guard's pass, until this transaction ends
      let out;
      try {
        out = step.run(db);
      } catch (e) {
        if (db.inTransaction !== true) throw endedItself(e);
        throw e;
      }
      // the statements must not end the transaction themselves (COMMIT, ROLLBACK, END on the Database)
      if (db.inTransaction !== true) throw endedItself();
      if (out !== null && (typeof out === 'object' || typeof out === 'function') && typeof out.then === 'function') {
        out.then(undefined, () => {});
        throw invalid('SqliteStore: a SQLite transaction is synchronous: the statements function returned a Promise (rolled back; run the statements without await)');
      }
      return { version };
    });
  }

  /**
   * The caller's own statements in one IMMEDIATE transaction with the fence
   * step (Gate.transaction; docs/stores.md "Your own data"): the fence row is
   * read (or conditionally updated from `step.cached`) and written first, then
   * `step.run(db)` runs the caller's statements synchronously on this
   * Database; a refusal writes nothing and never runs them. Answers
   * `{ version }` of the fence row written, or null (refused).
   */
  fencedTransaction(key, step) {
    if (this.#busy) throw new Error('SqliteStore: re-entrant fenced write from inside one of its own transactions');
    this.#busy = true;
    try {
      return this.#fenced.immediate(key, step);
    } catch (e) {
      if (e !== null && typeof e === 'object' && typeof e.code === 'string' && RETRY.test(e.code)) e.conflict = true;
      throw e;
    } finally {
      this.#busy = false;
      if (this.#pass !== null) this.#pass.keys.clear();
    }
  }

  /**
   * The fence step inside the caller's open transaction on this store's
   * Database (`db.transaction(…)`, Drizzle's better-sqlite3 `db.transaction`):
   * `handle` is that Database or a Drizzle transaction over it, and the step
   * runs synchronously on the same connection. Or `handle` is another ORM's
   * transaction on this database file (Knex, Kysely: lib/orm-handles'
   * `ormRunner`): the step runs through it and answers a Promise (use
   * `gate.fenceIn`). INVALID_ARGUMENT when no transaction is open (the check
   * and the caller's change would not be atomic) or the handle is another
   * database's.
   */
  fenceIn(handle, key, step) {
    const db = this.#db;
    if (!sameDatabase(handle, db)) {
      const run = ormRunner(handle, 'sqlite');
      if (run !== null) return this.#fenceVia(run, key, step);
      throw invalid('SqliteStore.fenceIn: the handle is not this store\'s Database (nor an ORM transaction over it)');
    }
    if (db.inTransaction !== true) {
      throw invalid('SqliteStore.fenceIn: no transaction is open on the Database: call it inside db.transaction(…) so the fence and your statements commit together');
    }
    let version;
    try {
      version = this.#fence(key, step, null);
    } catch (e) {
      // SQLITE_BUSY / LOCKED (a deferred transaction that could not take the write lock): the caller retries
      if (e !== null && typeof e === 'object' && typeof e.code === 'string' && RETRY.test(e.code)) e.conflict = true;
      throw e;
    }
    if (version !== null && this.#pass !== null) {
      // The guard's pass for the caller's transaction. better-sqlite3 runs a transaction
      // synchronously, so it has ended when the next microtask runs: the pass ends then
      // (and the guard never passes a statement outside a transaction).
      const pass = this.#pass;
      passed(pass, key, version);
      if (!pass.ending) {
        pass.ending = true;
        queueMicrotask(() => {
          pass.ending = false;
          pass.keys.clear();
        });
      }
    }
  }

  /** Runs `fn(state)` in one IMMEDIATE transaction and writes what it returns (or nothing); true when it wrote. */
  transaction(key, fn) {
    return this.#immediate(key, fn) !== null;
  }

  /**
   * The gate's transaction verb (docs/stores.md "Writing your own adapter"):
   * `fn(stateText | null)` answers `{ nextStateText, change }` (written as it
   * is, with the change, in the same IMMEDIATE transaction) or null (nothing
   * written). Answers `{ version }` of the row written, or null.
   */
  textTransaction(key, fn) {
    const version = this.#immediate(key, fn);
    return version === null ? null : { version };
  }

  #immediate(key, fn) {
    // A callback inside our own transaction (encode/decode, an audit hook)
    // that writes through a gate again would commit inside this transaction
    // and then be overwritten by it: refuse it (the gate reports STORE_ERROR).
    if (this.#busy) throw new Error('SqliteStore: re-entrant fenced write from inside one of its own transactions');
    this.#busy = true;
    try {
      return this.#run.immediate(key, fn);
    } catch (e) {
      if (e !== null && typeof e === 'object' && typeof e.code === 'string' && RETRY.test(e.code)) e.conflict = true;
      throw e;
    } finally {
      this.#busy = false;
    }
  }

  /**
   * The gate's state-cache commit (docs/stores.md "commitFrom"): one statement,
   * committed on its own, that writes `nextText` as it is and the change when
   * the row still has `expected.version` AND `expected.state` (null: no row
   * yet). Resolves to `{ version }` (the version it wrote), or false: the
   * precondition did not hold, or the database was busy or locked (nothing
   * written; the gate then runs its transaction).
   */
  commitFrom(key, expected, nextText, change) {
    if (this.#busy) throw new Error('SqliteStore: re-entrant fenced write from inside one of its own transactions');
    const value = change.kind === 'set' ? encodedOf(this, change) : null;
    const from = this.#from;
    let version;
    try {
      if (expected === null) version = from.insert(key, nextText, value);
      else if (change.kind === 'set') version = from.set(nextText, value, key, expected.version, expected.state);
      else if (change.kind === 'delete') version = from.delete(nextText, key, expected.version, expected.state);
      else version = from.none(nextText, key, expected.version, expected.state);
    } catch (e) {
      if (e !== null && typeof e === 'object' && typeof e.code === 'string' && RETRY.test(e.code)) return false;
      throw e;
    }
    return version == null ? false : { version };
  }

  /** The stored text of `value` (the codec's `encode`); INVALID_ARGUMENT when the codec refuses it. */
  encodeValue(value) {
    return encodeWith(this.#encode, value);
  }

  /** `{ state, version, value }` of `key` (value `undefined` when none), or null. */
  load(key) {
    const row = this.#select.get(key);
    if (row == null) return null;
    return loadedRecord(row.state, row.version, row.value, this.#decode);
  }
}
