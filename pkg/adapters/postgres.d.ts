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
