/**
 * fencegate/mysql — a compare-and-set host store on MySQL or MariaDB (mysql2 ≥ 3).
 * One InnoDB table (`k VARBINARY(512) PRIMARY KEY, state TEXT, value LONGTEXT,
 * version BIGINT`, utf8mb4 with a binary collation); commits are one autocommit
 * `UPDATE … WHERE k = ? AND version = ?` (or an `INSERT`, where a duplicate key
 * is a lost compare-and-set). Use with `new Gate(await new MysqlStore(pool).init())`.
 */
export interface MysqlStoreOptions<V = unknown> {
  /** Table name, a plain SQL identifier (1–64 characters); default `"fencegate"`. */
  table?: string;
  /**
   * The MySQL guard's protocol (docs/guard.md): each fenced transaction sets a fresh
   * nonce in `@fencegate_xact` and clears it when it ends; `fenceIn` sets one before its
   * fence write (clear it yourself after your COMMIT). Default false; with the guard
   * installed and this off, the guard refuses the store's transactions (GUARD_REFUSED).
   */
  guard?: boolean;
  /**
   * Value to stored text, with `decode` as a pair (a codec, e.g. `...jsonCodec`);
   * default fencegate's `valueCodec`. A throw refuses the write: INVALID_ARGUMENT.
   */
  encode?(value: V): string;
  /** Stored text to value; default `valueCodec.decode` (reads JSON text and `devalue:` text). */
  decode?(text: string): V;
}

/**
 * Server error numbers read as "did not commit, run it again": 1213
 * ER_LOCK_DEADLOCK, 1205 ER_LOCK_WAIT_TIMEOUT, 1020 ER_CHECKREAD. From `commit`
 * they are a lost compare-and-set (`false`: the gate reloads and retries,
 * COMMIT_CONFLICT after `maxRetries`); `load` runs its SELECT again up to 3 more times.
 */
export const RETRY_ERRNOS: readonly number[];

/**
 * Structural type of the mysql2 client used: a promise `Pool`, `PoolConnection`
 * or `Connection` (`mysql2/promise`), or their callback-API counterparts (`mysql2`,
 * which have `.promise()`).
 */
export interface MysqlClient {
  execute(sql: string, values?: any): unknown;
  query(sql: string, values?: any): unknown;
  promise?(): { execute(sql: string, values?: any): Promise<[any, any]>; query(sql: string, values?: any): Promise<[any, any]> };
}

/**
 * The compare-and-set is in the UPDATE's WHERE clause, which InnoDB checks on
 * the latest committed row under any isolation level.
 * @throws FencegateError INVALID_ARGUMENT for a client that is not mysql2's,
 * a table name that is not a plain identifier, or `encode` without `decode`.
 * An unknown option name or an option of the wrong type is INVALID_ARGUMENT too.
 */
export class MysqlStore<V = unknown> {
  constructor(client: MysqlClient, options?: MysqlStoreOptions<V>);
  /**
   * Gate.transaction's verb: START TRANSACTION on one connection (a Pool's `getConnection()`,
   * released after; a Connection itself, one transaction at a time), the fence row conditionally
   * updated from the cache or read `FOR UPDATE` and written, `step.run(conn)` (the mysql2 promise
   * connection), COMMIT. Isolation: the session's (`SET SESSION TRANSACTION ISOLATION LEVEL …`);
   * every level is correct (InnoDB's locking reads see the latest committed row). 1213/1205/1020,
   * and 1062 on the fence row's INSERT, are thrown with `conflict: true`; a lost COMMIT with `commitUnknown: true`.
   */
  fencedTransaction(key: string, step: { cached: { state: string; version: unknown } | null; decide(state: string | null): { nextStateText: string; change: { kind: 'none' } } | null; run(tx: unknown): unknown; body: unknown }): Promise<{ version: string } | null>;
  /**
   * Gate.fenceIn's verb on the caller's mysql2 Connection / PoolConnection after
   * `beginTransaction()` (or an ORM transaction): locked read and write of the fence row.
   * @throws FencegateError INVALID_ARGUMENT for a Pool, an unknown handle, or no open transaction
   * (`@@in_transaction`, or autocommit off).
   */
  fenceIn(handle: unknown, key: string, step: { decide(state: string | null): { nextStateText: string } | null }): Promise<void>;
  /** The stored text of `value`; FencegateError INVALID_ARGUMENT (with `path`) when the codec refuses it. */
  encodeValue(value: V): string;
  /** Creates the table if needed; run once before concurrent use. */
  init(): Promise<this>;
  load(key: string): Promise<{ state: string; version: string; value?: V } | null>;
  /**
   * `false` when the version moved, the key was created meanwhile (duplicate key),
   * or a {@link RETRY_ERRNOS} error came back. Errors that are not a server
   * error reply (a lost connection, a timeout, a fatal protocol error, SQLSTATE
   * class 08) carry `commitUnknown: true`.
   */
  commit(key: string, expectedVersion: unknown, nextState: object, change: { kind: string; value?: V; encoded?: string }): Promise<boolean>;
  /**
   * The gate's state-cache commit, one statement: `UPDATE … WHERE k AND version AND state` (or an INSERT); the new version is expected + 1. `{ version }` after the write, `false` when the record's version or
   * state text moved. The same error classes as `commit`.
   */
  commitFrom(key: string, expected: { version: unknown; state: string } | null, nextText: string, change: { kind: string; value?: V; encoded?: string }): Promise<{ version: string } | false>;
}
