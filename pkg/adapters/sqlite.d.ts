/**
 * fencegate/sqlite — a transaction host store on SQLite (better-sqlite3 ≥ 12).
 * One table (`key TEXT PRIMARY KEY, state TEXT, value TEXT, version INTEGER`)
 * keeps the fence state and the value side by side; every fenced operation is
 * one `BEGIN IMMEDIATE` transaction, or, for a write on a key the gate's state
 * cache remembers, one conditional UPDATE (`commitFrom`). Use with `new Gate(new SqliteStore(db))`.
 */
export interface SqliteStoreOptions<V = unknown> {
  /** Table name, a plain SQL identifier; default `"fencegate"`. */
  table?: string;
  /**
   * Value to stored text, with `decode` as a pair (a codec, e.g. `...jsonCodec`);
   * default fencegate's `valueCodec`. A throw refuses the write: INVALID_ARGUMENT.
   */
  encode?(value: V): string;
  /** Stored text to value; default `valueCodec.decode` (reads JSON text and `devalue:` text). */
  decode?(text: string): V;
  /** Create the table if it does not exist; default true. */
  createTable?: boolean;
}

/** Structural type of the better-sqlite3 `Database` used. */
export interface SqliteDatabase {
  prepare(sql: string): unknown;
  transaction(fn: (...args: any[]) => unknown): unknown;
  exec(sql: string): unknown;
}

/**
 * SQLITE_BUSY* and SQLITE_LOCKED* errors (after better-sqlite3's `timeout`)
 * are thrown with `conflict: true`: the gate runs the transaction again, up to
 * `maxRetries` times, then answers COMMIT_CONFLICT; nothing was written.
 * @throws FencegateError INVALID_ARGUMENT for options that are not an object, an unknown option name,
 *   `createTable` that is not a boolean, or `encode` without `decode` (or the reverse);
 *   STORE_ERROR (`cause`: the driver's error, `table`) when the table or its statements cannot be
 *   set up (SQLITE_BUSY from CREATE TABLE under contention, no such table with `createTable: false`).
 */
export class SqliteStore<V = unknown> {
  constructor(db: SqliteDatabase, options?: SqliteStoreOptions<V>);
  /** The stored text of `value`; FencegateError INVALID_ARGUMENT (with `path`) when the codec refuses it. */
  encodeValue(value: V): string;
  transaction(key: string, fn: (state: string | null) => { nextState: object; change: { kind: string; value?: V; encoded?: string } } | null): boolean;
  /** The gate's verb: `fn` answers the next state as text (written as it is); answers `{ version }` written, or null. */
  textTransaction(key: string, fn: (state: string | null) => { nextStateText: string; change: { kind: string; value?: V; encoded?: string } } | null): { version: number } | null;
  load(key: string): { state: string; version: number; value?: V } | null;
  /**
   * The commit of a gate's state cache: one `UPDATE … WHERE key = ? AND version = ? AND state = ?`
   * (an `INSERT … ON CONFLICT DO NOTHING` when `expected` is null), committed on its own. Answers the
   * version written, or false (precondition not met, or SQLITE_BUSY/LOCKED: nothing written).
   */
  commitFrom(
    key: string,
    expected: { version: number; state: string } | null,
    nextText: string,
    change: { kind: string; value?: V; encoded?: string },
  ): { version: number } | false;
  /**
   * Gate.transaction's verb: one IMMEDIATE transaction that reads (or, from the gate's cache,
   * conditionally updates) the fence row, writes the next fence state, then runs the caller's
   * statements synchronously on this Database (`step.run(db)`); a body that returns a Promise is
   * refused (INVALID_ARGUMENT, rolled back). Answers `{ version }` of the fence row, or null (refused).
   */
  fencedTransaction(key: string, step: import('fencegate').FencedStep): { version: number } | null;
  /**
   * Gate.fenceIn/fenceInSync's verb: the fence step on this store's Database inside the caller's open
   * transaction (`db.transaction(…)`, Drizzle's better-sqlite3 `db.transaction`). INVALID_ARGUMENT when
   * no transaction is open or `handle` is not this Database (nor an ORM transaction over it).
   */
  fenceIn(handle: unknown, key: string, step: Pick<import('fencegate').FencedStep, 'decide'>): void;
}
