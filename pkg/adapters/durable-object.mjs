// The host stores of fencegate/durable-object: a transaction host store on
// Cloudflare Durable Object storage (`ctx.storage`), and one on its SQLite
// storage. The ready-made fenced resource behind fetch is the entry's own
// (pkg/durable-object.mjs), which joins these stores with fencegate/http.
//
// One storage entry per resource key, `prefix + key` → `{ state, value }`: the
// fence state as its versioned JSON text and the value as codec text (null = no
// value). Each fenced operation is one `storage.transaction`: read the entry,
// let fencegate decide (`fn`, synchronous), put what it returns, or nothing.
// A Durable Object runs one instance per id, and workerd's input gate holds
// other requests out while a storage.transaction callback runs. Inside one
// request nothing does: a second storage.transaction started while the first
// callback awaits a timer or a fetch reads the first one's uncommitted puts
// (or is held until the object is reset). So the store also runs its own
// transactions on one storage key one after another, whichever Gate calls it:
// two decisions on one key never interleave.
//
// Values go through a codec (default `valueCodec`, docs/stores.md "Values").
import { valueCodec } from '../lib/codec.mjs';
import { codecOf, encodeWith, encodedOf, loadedRecord, nextStateTextOf, storeOptions, CODEC_OPTIONS } from './support.mjs';
import { invalid } from '../lib/options.mjs';

/** storage → storage key → the settled-never-rejects tail of the store's transactions on that key. */
const TAILS = new WeakMap();
const idle = () => {};

/**
 * `run()` (one storage.transaction) after every earlier one on `k` of this
 * storage, from any DurableObjectStore (any Gate): the store's own lock per key.
 */
function inTurn(storage, k, run) {
  let tails = TAILS.get(storage);
  if (tails === undefined) TAILS.set(storage, (tails = new Map()));
  const prev = tails.get(k);
  const p = prev === undefined ? run() : prev.then(run);
  const tail = p.then(idle, idle);
  tails.set(k, tail);
  tail.then(() => {
    if (tails.get(k) === tail) tails.delete(k);
  });
  return p;
}

export class DurableObjectStore {
  #storage;
  #prefix;
  #encode;
  #decode;

  constructor(storage, options = {}) {
    if (storage === null || typeof storage !== 'object' || typeof storage.transaction !== 'function' || typeof storage.get !== 'function') {
      throw invalid('DurableObjectStore needs a Durable Object storage (ctx.storage)');
    }
    options = storeOptions(options, 'DurableObjectStore', { prefix: null, ...CODEC_OPTIONS });
    const prefix = options.prefix ?? 'fencegate:';
    if (typeof prefix !== 'string') throw invalid('prefix must be a string', { option: 'prefix' });
    this.#storage = storage;
    this.#prefix = prefix;
    [this.#encode, this.#decode] = codecOf(options, valueCodec);
  }

  /** The storage key of a resource key: `prefix + key`. */
  storageKey(key) {
    return this.#prefix + key;
  }

  encodeValue(value) {
    return encodeWith(this.#encode, value);
  }

  /** Runs `fn(state)` in one storage transaction and puts what it returns (or nothing). */
  transaction(key, fn) {
    const k = this.storageKey(key);
    return inTurn(this.#storage, k, () => this.#storage.transaction(async (txn) => {
      const entry = (await txn.get(k)) ?? null;
      const out = fn(entry === null ? null : entry.state);
      if (out === null || out === undefined) return false;
      const { change } = out;
      const value = change.kind === 'set' ? encodedOf(this, change) : change.kind === 'delete' ? null : (entry?.value ?? null);
      await txn.put(k, { state: nextStateTextOf(out), value });
      return true;
    }));
  }

  async load(key) {
    const entry = await this.#storage.get(this.storageKey(key));
    if (entry === undefined) return null;
    return loadedRecord(entry.state, null, entry.value, this.#decode);
  }

  /**
   * The caller's own keys in one `storage.transaction` with the fence step
   * (Gate.transaction; docs/stores.md "Your own data"): the fence entry is read
   * and, when the decision applies, put (its value kept) before
   * `step.run(txn)` runs the caller's statements on the same `txn`; the
   * transaction commits both, or neither (a refusal puts nothing and never
   * runs them; a throw rolls back and is rethrown). It starts after the
   * store's earlier transactions on the key have ended (see the top of this
   * file), so a body may await a timer or a fetch. Answers `{ version: null }`
   * (the KV API has no version) or null (refused).
   */
  fencedTransaction(key, step) {
    const k = this.storageKey(key);
    return inTurn(this.#storage, k, () => this.#storage.transaction(async (txn) => {
      const entry = (await txn.get(k)) ?? null;
      const plan = step.decide(entry === null ? null : entry.state);
      if (plan === null) return null;
      await txn.put(k, { state: plan.nextStateText, value: entry === null ? null : (entry.value ?? null) });
      await step.run(txn);
      return { version: null };
    }));
  }

  /**
   * The fence step inside the caller's `storage.transaction(async (txn) => …)`:
   * `handle` is that `txn`. Reads the fence entry on it, decides, and puts the
   * next state on it when the decision applies. On a refusal it calls
   * `txn.rollback()` before the gate throws, so nothing the caller put in this
   * transaction can commit, even if the caller catches the error.
   * INVALID_ARGUMENT for a handle that is not a storage transaction (the
   * storage itself included: its puts would not be atomic with the check).
   */
  async fenceIn(handle, key, step) {
    if (handle === this.#storage || handle === null || typeof handle !== 'object' || typeof handle.get !== 'function' || typeof handle.put !== 'function' || typeof handle.rollback !== 'function') {
      throw invalid('DurableObjectStore.fenceIn: the handle must be the txn of storage.transaction(async (txn) => …), so the fence and your puts commit together');
    }
    const k = this.storageKey(key);
    const entry = (await handle.get(k)) ?? null;
    const plan = step.decide(entry === null ? null : entry.state);
    if (plan === null) {
      handle.rollback();
      return;
    }
    await handle.put(k, { state: plan.nextStateText, value: entry === null ? null : (entry.value ?? null) });
  }
}

const SQL_IDENT = /^[A-Za-z][A-Za-z0-9_]{0,62}$/;

/**
 * A transaction host store on a SQLite-backed Durable Object's storage
 * (`ctx.storage.sql`, the default for new Durable Object classes): one table
 * (default `fencegate`: key, state text, value codec text or NULL, version),
 * every decision one `ctx.storage.transactionSync`. The state cache works as
 * for SqliteStore: `commitFrom` is one conditional UPDATE … RETURNING version.
 * The caller's own tables join the fence with `fencedTransaction` (the body
 * gets `ctx.storage.sql` and runs synchronously) or `fenceIn(sql, …)` inside
 * the caller's own `transactionSync`.
 */
export class DurableObjectSqlStore {
  #storage;
  #sql;
  #table;
  #encode;
  #decode;

  constructor(storage, options = {}) {
    if (storage === null || typeof storage !== 'object' || typeof storage.transactionSync !== 'function' || storage.sql === null || typeof storage.sql !== 'object' || typeof storage.sql.exec !== 'function') {
      throw invalid('DurableObjectSqlStore needs the storage of a SQLite-backed Durable Object (ctx.storage with sql and transactionSync)');
    }
    options = storeOptions(options, 'DurableObjectSqlStore', { table: null, ...CODEC_OPTIONS });
    const table = options.table ?? 'fencegate';
    if (typeof table !== 'string' || !SQL_IDENT.test(table) || /^_cf_/i.test(table)) {
      throw invalid('table must be a SQL identifier (letters, digits, _; not starting with _cf_)', { option: 'table' });
    }
    this.#storage = storage;
    this.#sql = storage.sql;
    this.#table = table;
    [this.#encode, this.#decode] = codecOf(options, valueCodec);
    this.#sql.exec(`CREATE TABLE IF NOT EXISTS "${table}" (key TEXT PRIMARY KEY NOT NULL, state TEXT NOT NULL, value TEXT, version INTEGER NOT NULL) WITHOUT ROWID`);
  }

  /** The SQL table of the fence rows. */
  get table() {
    return this.#table;
  }

  encodeValue(value) {
    return encodeWith(this.#encode, value);
  }

  /** One row of `query` (or null). */
  #row(query, ...params) {
    const rows = this.#sql.exec(query, ...params).toArray();
    return rows.length === 0 ? null : rows[0];
  }

  /** `change` applied by one statement: the version written (1 for a new row), or null when `where` did not match. */
  #write(key, existed, stateText, change, value, where = '', params = []) {
    const t = this.#table;
    if (!existed) {
      const r = this.#row(`INSERT INTO "${t}" (key, state, value, version) VALUES (?, ?, ?, 1) ON CONFLICT (key) DO NOTHING RETURNING version`, key, stateText, value);
      return r === null ? null : r.version;
    }
    const set = change.kind === 'set' ? 'value = ?, ' : change.kind === 'delete' ? 'value = NULL, ' : '';
    const args = change.kind === 'set' ? [stateText, value, key, ...params] : [stateText, key, ...params];
    const r = this.#row(`UPDATE "${t}" SET state = ?, ${set}version = version + 1 WHERE key = ?${where} RETURNING version`, ...args);
    return r === null ? null : r.version;
  }

  /** Runs `fn(state)` in one transactionSync and writes what it returns (or nothing); true when it wrote. */
  transaction(key, fn) {
    return this.textTransaction(key, fn) !== null;
  }

  /**
   * The gate's transaction verb with text answers (lib/driver.mjs): `fn(state text | null)`
   * returns `{ nextStateText, change }` (written as it is, with the change, in one
   * transactionSync) or null (nothing written). Answers `{ version }` of the row
   * written (the state cache keeps it), or null.
   */
  textTransaction(key, fn) {
    return this.#storage.transactionSync(() => {
      const row = this.#row(`SELECT state FROM "${this.#table}" WHERE key = ?`, key);
      const out = fn(row === null ? null : row.state);
      if (out === null || out === undefined) return null;
      const { change } = out;
      const value = change.kind === 'set' ? encodedOf(this, change) : null;
      return { version: this.#write(key, row !== null, nextStateTextOf(out), change, value) };
    });
  }

  /**
   * The gate's state-cache commit (docs/stores.md "commitFrom"): one
   * statement whose WHERE clause is the precondition (version and state text;
   * `expected` null: no row yet). `{ version }` written, or false (nothing written).
   */
  commitFrom(key, expected, nextText, change) {
    const value = change.kind === 'set' ? encodedOf(this, change) : null;
    const version = expected === null
      ? this.#write(key, false, nextText, change, value)
      : this.#write(key, true, nextText, change, value, ' AND version = ? AND state = ?', [expected.version, expected.state]);
    return version === null ? false : { version };
  }

  /** `{ state, version, value }` of `key` (value `undefined` when none), or null. */
  load(key) {
    const row = this.#row(`SELECT state, value, version FROM "${this.#table}" WHERE key = ?`, key);
    if (row === null) return null;
    return loadedRecord(row.state, row.version, row.value, this.#decode);
  }

  /** The fence step on the open transaction: the version written, or null (refused: nothing written). */
  #fence(key, step, cached) {
    const none = { kind: 'none' };
    if (cached !== null) {
      // the state cache: decided from the remembered state, written with it as the precondition
      const plan = step.decide(cached.state);
      if (plan !== null) {
        const version = this.#write(key, true, plan.nextStateText, none, null, ' AND version = ? AND state = ?', [cached.version, cached.state]);
        if (version !== null) return version;
      }
    }
    const row = this.#row(`SELECT state FROM "${this.#table}" WHERE key = ?`, key);
    const plan = step.decide(row === null ? null : row.state);
    if (plan === null) return null;
    return this.#write(key, row !== null, plan.nextStateText, none, null);
  }

  /**
   * The caller's own tables in one `transactionSync` with the fence step
   * (Gate.transaction; docs/stores.md "Your own data"): the fence row is
   * written first, then `step.run(sql)` runs the caller's statements on
   * `ctx.storage.sql`, synchronously (a returned Promise is refused:
   * INVALID_ARGUMENT, rolled back). A refusal writes nothing and never runs
   * them; a throw rolls both back. Answers `{ version }` or null (refused).
   */
  fencedTransaction(key, step) {
    return this.#storage.transactionSync(() => {
      const version = this.#fence(key, step, step.cached);
      if (version === null) return null;
      const out = step.run(this.#sql);
      if (out !== null && (typeof out === 'object' || typeof out === 'function') && typeof out.then === 'function') {
        out.then(undefined, () => {});
        throw invalid('DurableObjectSqlStore: transactionSync is synchronous: the statements function returned a Promise (rolled back; run the statements without await)');
      }
      return { version };
    });
  }

  /**
   * The fence step inside the caller's `ctx.storage.transactionSync(() => …)`:
   * `handle` is `ctx.storage.sql`. Reads and writes the fence row with it,
   * synchronously (use `gate.fenceInSync`). Durable Object SQL cannot tell
   * whether a transactionSync is open: called outside one, the fence row and
   * the caller's following synchronous statements still commit together (a
   * Durable Object commits the writes between two awaits at once), but a
   * later throw does not roll the fence row back. INVALID_ARGUMENT for a
   * handle that is not a Durable Object SqlStorage.
   */
  fenceIn(handle, key, step) {
    // ctx.storage.sql answers a new wrapper object at each read: the handle is
    // recognised by its class (an object has one SQL storage)
    const sql = this.#sql;
    if (handle !== sql && (handle === null || typeof handle !== 'object' || Object.getPrototypeOf(handle) !== Object.getPrototypeOf(sql))) {
      throw invalid('DurableObjectSqlStore.fenceIn: the handle must be this storage\'s ctx.storage.sql (inside ctx.storage.transactionSync)');
    }
    this.#fence(key, step, null);
  }
}
