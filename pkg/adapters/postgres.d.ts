/**
 * fencegate/postgres — a compare-and-set host store on PostgreSQL through
 * pg ≥ 8 (a `Pool` or `Client`) or postgres.js ≥ 3 (a `sql` instance). One table (`key text PRIMARY KEY, state text, value text, version bigint`);
 * commits are one conditional `UPDATE … WHERE version = $expected` (or an
 * `INSERT … ON CONFLICT DO NOTHING`). Use with
 * `new Gate(await new PostgresStore(pool).init())`.
 */
export interface PostgresStoreOptions<V = unknown> {
  /** Table name, a plain SQL identifier; default `"fencegate"`. */
  table?: string;
  /**
   * Value to stored text, with `decode` as a pair (a codec, e.g. `...jsonCodec`);
   * default fencegate's `valueCodec`. A throw refuses the write: INVALID_ARGUMENT.
   */
  encode?(value: V): string;
  /** Stored text to value; default `valueCodec.decode` (reads JSON text and `devalue:` text). */
  decode?(text: string): V;
  /**
   * pg only: run `load` and the state-cache commit as named prepared statements (parsed once per
   * connection); default true. `false` behind a pooler that does not keep prepared statements
   * (PgBouncer in transaction mode before 1.21). postgres.js prepares by its own `prepare` option.
   */
  prepare?: boolean;
  /**
   * The isolation level of `Gate.transaction`'s transactions (`BEGIN ISOLATION LEVEL …`);
   * default: the session's (`default_transaction_isolation`). Every level is correct: the
   * fence row's lock orders fenced transactions on a key; under REPEATABLE READ and
   * SERIALIZABLE a concurrent winner is a 40001, and the whole transaction runs again.
   */
  isolation?: 'read committed' | 'repeatable read' | 'serializable';
}

/**
 * SQLSTATEs read as "did not commit, run it again": 40001 serialization_failure,
 * 40P01 deadlock_detected, 55P03 lock_not_available. From `commit` they are a
 * lost compare-and-set (`false`: the gate reloads and retries, COMMIT_CONFLICT
 * after `maxRetries`); `load` runs its SELECT again up to 3 more times.
 */
export const RETRY_SQLSTATES: readonly string[];

/** Structural type of the pg `Pool` or `Client` used. */
export interface PostgresClient {
  query(config: { text: string; values?: unknown[]; name?: string } | string, values?: unknown[]): Promise<{ rows: any[]; rowCount: number | null }>;
}

/**
 * Structural type of a postgres.js `sql` instance (`postgres(url)`): the store
 * runs its statements through `sql.unsafe(text, params)`.
 */
export interface PostgresJsSql {
  (...args: any[]): any;
  unsafe(text: string, params?: any[]): PromiseLike<any[] & { count: number }>;
}

/**
 * Each statement is its own transaction and the compare-and-set is in its
 * WHERE clause, so any isolation level is correct: READ COMMITTED (no row
 * matched) and REPEATABLE READ / SERIALIZABLE (40001) both end as a lost
 * compare-and-set. @throws FencegateError INVALID_ARGUMENT for a client that is
 * neither pg's nor postgres.js's, a table name that is not a plain identifier,
 * or `encode` without `decode`. An unknown option name or an option of the wrong type is INVALID_ARGUMENT too.
 */
export class PostgresStore<V = unknown> {
  constructor(pg: PostgresClient | PostgresJsSql, options?: PostgresStoreOptions<V>);
  /**
   * Gate.transaction's verb: BEGIN on one connection (a Pool's checked-out client, released
   * after; the Client itself, one transaction at a time; postgres.js `sql.begin`), the fence
   * row conditionally updated from the cache or read `FOR UPDATE` and written, `step.run(tx)`
   * (the pg client / the postgres.js transaction `sql`), COMMIT. 40001/40P01/55P03, and 23505
   * on the fence row's INSERT, are thrown with `conflict: true`; a lost COMMIT with `commitUnknown: true`.
   */
  fencedTransaction(key: string, step: { cached: { state: string; version: unknown } | null; decide(state: string | null): { nextStateText: string; change: { kind: 'none' } } | null; run(tx: unknown): unknown; body: unknown }): Promise<{ version: string } | null>;
  /**
   * Gate.fenceIn's verb on the caller's handle (a pg Client/PoolClient after BEGIN, a postgres.js
   * transaction or reserved `sql`, an ORM transaction): locked read and write of the fence row.
   * @throws FencegateError INVALID_ARGUMENT for a pool (pg Pool, top-level postgres.js `sql`), an
   * unknown handle, or no open transaction (pg's protocol status, else a SAVEPOINT tells).
   */
  fenceIn(handle: unknown, key: string, step: { decide(state: string | null): { nextStateText: string } | null }): Promise<void>;
  /** The stored text of `value`; FencegateError INVALID_ARGUMENT (with `path`) when the codec refuses it. */
  encodeValue(value: V): string;
  /** Creates the table if needed; run once before concurrent use. */
  init(): Promise<this>;
  load(key: string): Promise<{ state: string; version: string; value?: V } | null>;
  /**
   * `false` when the version moved or a {@link RETRY_SQLSTATES} error came back.
   * Errors that are not a definite SQL failure (connection classes 08/57, 40003) carry `commitUnknown: true`.
   */
  commit(key: string, expectedVersion: unknown, nextState: object, change: { kind: string; value?: V; encoded?: string }): Promise<boolean>;
  /**
   * The gate's state-cache commit, one statement: `UPDATE … WHERE key AND version AND state … RETURNING version` (or `INSERT … ON CONFLICT DO NOTHING RETURNING version`). `{ version }` after the write, `false` when the record's version or
   * state text moved. The same error classes as `commit`.
   */
  commitFrom(key: string, expected: { version: unknown; state: string } | null, nextText: string, change: { kind: string; value?: V; encoded?: string }): Promise<{ version: string } | false>;
}
