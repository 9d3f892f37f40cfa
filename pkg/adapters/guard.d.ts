/**
 * fencegate/guard — the database itself refuses a change to a protected table
 * that did not pass the fence (docs/guard.md). Triggers check only "this
 * transaction wrote the fence row of this row's key" and "fence marks never go
 * down, fence states stay well formed"; the fencing decision stays in fencegate.
 */

/** SQLSTATE of a refused change to a protected row: `'FG001'`. */
export declare const GUARD_SQLSTATE: 'FG001';
/** SQLSTATE of a refused fence row write (mark lowered, state not well formed, version not raised, key changed, row deleted): `'FG002'`. */
export declare const FENCE_SQLSTATE: 'FG002';

/** The engines a guard is written for. */
export type GuardEngine = 'postgres' | 'mysql' | 'sqlite';

export interface GuardOptions {
  /** The protected table: a plain SQL identifier of at most 47 characters. */
  table: string;
  /**
   * The fence key of a row, an SQL expression over its bare column names,
   * e.g. `"'orders/' || id"` (PostgreSQL, SQLite) or `"CONCAT('orders/', id)"`
   * (MySQL). No `;`, comments, `$`, `?`, backslashes or qualified names
   * (INVALID_ARGUMENT).
   */
  key: string;
  /** The store's fence table; default `'fencegate'`. It must exist. */
  fenceTable?: string;
  /** The engine; default: told from the client. */
  engine?: GuardEngine;
  /** The protected table's column names; default: read from the database. */
  columns?: string[];
  /**
   * SQLite: the table's unique keys (`["rowid"]` unless WITHOUT ROWID, and each PRIMARY KEY /
   * UNIQUE index as `"column"` or `"column COLLATE name"` entries); default: read from the database.
   */
  unique?: string[][];
  /** Answer the SQL without running it. */
  dryRun?: boolean;
}

export interface RemoveGuardOptions {
  /** The protected table whose guard goes; may be left out with `fence: true`. */
  table?: string;
  /** The fence table; default `'fencegate'`. */
  fenceTable?: string;
  /** Also remove the fence table's guard (its triggers and the `xact` column). Default false. */
  fence?: boolean;
  engine?: GuardEngine;
  dryRun?: boolean;
}

export interface GuardResult {
  engine: GuardEngine;
  table: string | undefined;
  fenceTable: string;
  /** The SQL run (or, with `dryRun`, that would run), as `guardSql` gives it. */
  sql: string;
}

/**
 * A pg `Pool`/`Client`, a postgres.js `sql`, a mysql2 Pool/Connection (promise or
 * callback API) or a better-sqlite3 `Database`.
 */
export type GuardClient = object | ((...args: any[]) => unknown);

/**
 * Installs the guard: idempotent, in one transaction (PostgreSQL, SQLite; MySQL
 * DDL commits statement by statement, under a named lock). Rejects with
 * INVALID_ARGUMENT (bad options, a missing table or fence table, a key
 * expression the database cannot read) or STORE_ERROR (anything else the
 * database answered; `cause` is its error).
 */
export declare function installGuard(client: GuardClient, options: GuardOptions): Promise<GuardResult>;

/** Removes a table's guard (and with `fence: true` the fence table's); data and fence rows are kept. Idempotent. */
export declare function removeGuard(client: GuardClient, options: RemoveGuardOptions): Promise<GuardResult>;

/**
 * The guard's SQL as text for migration tools (Drizzle Kit, Prisma Migrate,
 * Knex, Flyway): PostgreSQL and SQLite as one BEGIN … COMMIT script, MySQL with
 * DELIMITER lines. `engine` and (to install) `columns` are required; for SQLite
 * `unique` too (the table's unique keys, as in InstallGuardOptions).
 * INVALID_ARGUMENT for anything malformed.
 */
export declare function guardSql(
  options: { engine: GuardEngine; table: string; key: string; columns: string[]; unique?: string[][]; fenceTable?: string; remove?: false } |
    { engine: GuardEngine; table?: string; fenceTable?: string; fence?: boolean; remove: true },
): string;

/** Whether `e` is a guard's refusal: SQLSTATE FG001/FG002, a SQLite RAISE with that prefix, or a FencegateError GUARD_REFUSED. */
export declare function isGuardRefusal(e: unknown): boolean;

/**
 * `key` with its references to `columns` qualified by `row` (`NEW` / `OLD`), as
 * the triggers use it. INVALID_ARGUMENT for what a key expression may not hold.
 */
export declare function qualifyKey(key: string, columns: string[], row: string, engine: GuardEngine): string;
