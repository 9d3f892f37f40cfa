/**
 * fencegate/sqlite — a transaction host store on SQLite (better-sqlite3 ≥ 12).
 * One table (`key TEXT PRIMARY KEY, state TEXT, value TEXT, version INTEGER`)
 * keeps the fence state and the value side by side; every fenced operation is
 * one `BEGIN IMMEDIATE` transaction. Use with `new Gate(new SqliteStore(db))`.
 */
export interface SqliteStoreOptions<V = unknown> {
  /** Table name, a plain SQL identifier; default `"fencegate"`. */
  table?: string;
  /** Value to stored text; default `JSON.stringify`. */
  encode?(value: V): string;
  /** Stored text to value; default `JSON.parse`. */
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

export class SqliteStore<V = unknown> {
  constructor(db: SqliteDatabase, options?: SqliteStoreOptions<V>);
  transaction(key: string, fn: (state: string | null) => { nextState: object; change: { kind: string; value?: V } } | null): boolean;
  load(key: string): { state: string; version: number; value?: V } | null;
}
