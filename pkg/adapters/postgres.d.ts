/**
 * fencegate/postgres — a compare-and-set host store on PostgreSQL (pg ≥ 8).
 * One table (`key text PRIMARY KEY, state text, value text, version bigint`);
 * commits are one conditional `UPDATE … WHERE version = $expected` (or an
 * `INSERT … ON CONFLICT DO NOTHING`). Use with
 * `new Gate(await new PostgresStore(pool).init())`.
 */
export interface PostgresStoreOptions<V = unknown> {
  /** Table name, a plain SQL identifier; default `"fencegate"`. */
  table?: string;
  encode?(value: V): string;
  decode?(text: string): V;
}

/** Structural type of the pg `Pool` or `Client` used. */
export interface PostgresClient {
  query(config: { text: string; values?: unknown[] } | string, values?: unknown[]): Promise<{ rows: any[]; rowCount: number | null }>;
}

export class PostgresStore<V = unknown> {
  constructor(pg: PostgresClient, options?: PostgresStoreOptions<V>);
  /** Creates the table if needed; run once before concurrent use. */
  init(): Promise<this>;
  load(key: string): Promise<{ state: string; version: string; value?: V } | null>;
  /** Errors that are not a definite SQL failure carry `commitUnknown: true`. */
  commit(key: string, expectedVersion: unknown, nextState: object, change: { kind: string; value?: V }): Promise<boolean>;
}
