/**
 * fencegate/durable-object — for Cloudflare Workers (workerd): a transaction
 * host store on Durable Object storage, the fenced HTTP protocol, a ready-made
 * Durable Object class and a Worker that routes keys to objects.
 * ES module only (workerd). One entry per key, `prefix + key` → `{ state, value }`
 * (fence state as versioned JSON text, value as codec text or null), read and
 * put in one `storage.transaction` per decision.
 */
import type { Gate, GateOptions, TransactionResult, TransactionStore } from '../index.js';
import type { FenceOptions } from '../integrations/http.js';

export interface DurableObjectStoreOptions<V = unknown> {
  /** Storage key prefix of the fence entries; default `"fencegate:"`. */
  prefix?: string;
  /** Value to stored text, with `decode` as a pair; default fencegate's `valueCodec`. A throw refuses the write: INVALID_ARGUMENT. */
  encode?(value: V): string;
  /** Stored text to value; default `valueCodec.decode`. */
  decode?(text: string): V;
}

/** Structural type of the Durable Object storage used (`ctx.storage`). */
export interface DurableObjectStorageLike {
  get(key: string): Promise<unknown>;
  put(key: string, value: unknown): Promise<void>;
  transaction<T>(closure: (txn: { get(key: string): Promise<unknown>; put(key: string, value: unknown): Promise<void> }) => Promise<T>): Promise<T>;
}

/**
 * @throws FencegateError INVALID_ARGUMENT when `storage` is not a Durable Object storage,
 * `prefix` is not a string, or `encode` comes without `decode` (or the reverse).
 * An unknown option name or an option of the wrong type is INVALID_ARGUMENT too.
 */
export class DurableObjectStore<V = unknown> implements TransactionStore<V> {
  constructor(storage: DurableObjectStorageLike, options?: DurableObjectStoreOptions<V>);
  /** The storage key of a resource key: `prefix + key`. */
  storageKey(key: string): string;
  /** The stored text of `value`; FencegateError INVALID_ARGUMENT (with `path`) when the codec refuses it. */
  encodeValue(value: V): string;
  transaction(key: string, fn: (state: string | null) => TransactionResult<V>): Promise<boolean>;
  load(key: string): Promise<{ state: string; version: null; value?: V } | null>;
  /**
   * Store verb of `gate.transaction(key, token, body)` (docs/stores.md "Your own data"):
   * one `storage.transaction`; the fence entry is read and, when the verdict applies,
   * put (its value kept), then `step.run(txn)` runs the caller's body on the same
   * `txn` (`async (txn) => { await txn.put('order:42', 'paid') }`); both commit, or
   * neither. A refusal never runs the body. `{ version: null }`, or null when refused.
   */
  fencedTransaction(key: string, step: FencedTransactionStep<DurableObjectTransactionLike>): Promise<{ version: null } | null>;
  /**
   * Store verb of `gate.fenceIn(txn, key, token)` inside the caller's
   * `storage.transaction(async (txn) => …)`: reads and puts the fence entry on `txn`.
   * On a refusal it calls `txn.rollback()` (the gate then throws the verdict's code),
   * so nothing the caller put in that transaction can commit.
   * @throws FencegateError INVALID_ARGUMENT when `handle` is not a storage transaction (the storage itself included).
   */
  fenceIn(handle: DurableObjectTransactionLike, key: string, step: FenceInStep): Promise<void>;
}

/** The `txn` of `storage.transaction(async (txn) => …)`, as the fence step uses it. */
export interface DurableObjectTransactionLike {
  get(key: string): Promise<unknown>;
  put(key: string, value: unknown): Promise<void>;
  delete(key: string): Promise<boolean>;
  rollback(): void;
}

/** What a store's `fenceIn(handle, key, step)` gets: `decide(state)` → the next state text to write, or null (refused: write nothing). */
export interface FenceInStep {
  decide(state: string | null): { nextStateText: string; change: { kind: 'none' } } | null;
}

/**
 * What a store's `fencedTransaction(key, step)` gets (docs/stores.md "Your own data"):
 * `cached` (the gate's remembered `{ state, version }` or null), `decide(state)`, and
 * `run(handle)`, which runs the caller's body on the engine's transaction handle after the
 * fence write; its value or Promise is awaited inside the transaction.
 */
export interface FencedTransactionStep<H> extends FenceInStep {
  readonly cached: { state: string; version: unknown } | null;
  run(handle: H): unknown;
  readonly body: unknown;
}

/** Options of {@link DurableObjectSqlStore}. */
export interface DurableObjectSqlStoreOptions<V = unknown> {
  /** SQL table of the fence rows (created if missing); default `"fencegate"`. Letters, digits and `_`, not starting with `_cf_`. */
  table?: string;
  /** Value to stored text, with `decode` as a pair; default fencegate's `valueCodec`. A throw refuses the write: INVALID_ARGUMENT. */
  encode?(value: V): string;
  /** Stored text to value; default `valueCodec.decode`. */
  decode?(text: string): V;
}

/** The Durable Object `ctx.storage.sql` (SqlStorage), as the store uses it. */
export interface DurableObjectSqlLike {
  exec(query: string, ...bindings: unknown[]): { toArray(): Record<string, unknown>[]; readonly rowsWritten: number };
}

/** The storage of a SQLite-backed Durable Object (`ctx.storage`), as the store uses it. */
export interface DurableObjectSqlStorageLike {
  readonly sql: DurableObjectSqlLike;
  transactionSync<T>(closure: () => T): T;
}

/**
 * A transaction host store on a SQLite-backed Durable Object (`ctx.storage.sql`, the
 * default for new Durable Object classes): one table `table` (key, state text, value codec
 * text or NULL, version integer), each decision one `ctx.storage.transactionSync`. Has the
 * state cache (`commitFrom`: one conditional UPDATE … RETURNING version). The caller's own
 * tables: `gate.transaction(key, token, (sql) => sql.exec('UPDATE orders …').rowsWritten)`
 * (the body gets `ctx.storage.sql` and must be synchronous), or
 * `gate.fenceInSync(ctx.storage.sql, key, token)` inside the caller's `transactionSync`.
 * @throws FencegateError INVALID_ARGUMENT when `storage` has no `sql` or `transactionSync`,
 * `table` is not an identifier (or starts with `_cf_`), an option is unknown, or `encode`
 * comes without `decode` (or the reverse).
 */
export class DurableObjectSqlStore<V = unknown> implements TransactionStore<V> {
  constructor(storage: DurableObjectSqlStorageLike, options?: DurableObjectSqlStoreOptions<V>);
  /** The SQL table of the fence rows. */
  readonly table: string;
  /** The stored text of `value`; FencegateError INVALID_ARGUMENT (with `path`) when the codec refuses it. */
  encodeValue(value: V): string;
  transaction(key: string, fn: (state: string | null) => TransactionResult<V>): boolean;
  /** The gate's text-answer transaction verb: `fn` gets the state text and returns `{ nextStateText, change }` or null; answers `{ version }` written, or null. */
  textTransaction(key: string, fn: (state: string | null) => { nextStateText: string; change: { kind: string; value?: V; encoded?: string } } | null): { version: number } | null;
  /** The state-cache commit: `{ version }` written, or false when the row no longer has `expected` (nothing written). */
  commitFrom(key: string, expected: { version: unknown; state: string } | null, nextText: string, change: { kind: string; value?: V; encoded?: string }): { version: number } | false;
  load(key: string): { state: string; version: number; value?: V } | null;
  /**
   * Store verb of `gate.transaction`: one `transactionSync`; the fence row first (from the
   * cache: one conditional UPDATE), then `step.run(ctx.storage.sql)`, synchronously.
   * A body that returns a Promise is refused (INVALID_ARGUMENT, rolled back).
   */
  fencedTransaction(key: string, step: FencedTransactionStep<DurableObjectSqlLike>): { version: number } | null;
  /**
   * Store verb of `gate.fenceInSync(ctx.storage.sql, key, token)` inside the caller's
   * `ctx.storage.transactionSync(() => …)`: reads and writes the fence row, synchronously.
   * @throws FencegateError INVALID_ARGUMENT when `handle` is not a Durable Object SqlStorage.
   */
  fenceIn(handle: DurableObjectSqlLike, key: string, step: FenceInStep): void;
}

/** The key and action of a request, and fencegate/http's options (header names, `typeBase`, `retryAfter`). */
export interface FencedFetchOptions extends FenceOptions {
  /** The resource key. */
  key: string;
  /** `"establish"` for `POST …/establish`; otherwise undefined. */
  action?: string;
}

/**
 * The fenced HTTP protocol for one key: PUT (body = value, header Fencing-Token) writes,
 * POST with action "establish" establishes, DELETE deletes, GET reads `{ key, mark, value }`.
 * Answers through fencegate/http's `fence` (docs/http.md): 200 `{ key, outcome, code, token,
 * markBefore, mark }` (epochs as decimal text) for advance/accept; refusals with `statusFor(code)`
 * (409 STALE_TOKEN, 428 MISSING_TOKEN, 400 MALFORMED_TOKEN, 403 signed-token refusals, …) and an
 * RFC 9457 problem body; a thrown FencegateError as a problem body (503 with Retry-After for
 * store failures). Fencing-Op-Id / Fencing-Holder go to the gate as opId / holder. 404 for other
 * methods.
 * @throws FencegateError INVALID_ARGUMENT without a gate or a string key.
 */
export function fencedFetch(gate: Gate<any>, request: Request, options: FencedFetchOptions): Promise<Response>;

/**
 * A Durable Object class with one fenced resource per object behind fetch
 * (`/resources/<key>[/establish]`). With the secret FENCE_KEYS (JSON
 * `{ kid: base64url secret }`) only signed `fg1.` tokens are accepted (others: 403).
 */
export class FencedObject {
  constructor(ctx: { storage: DurableObjectStorageLike }, env?: { FENCE_KEYS?: string } & Record<string, unknown>);
  readonly store: DurableObjectStore<string>;
  gate: Gate<string>;
  fetch(request: Request): Promise<Response>;
}

/** A namespace binding as the Worker sees it (`env[binding]`). */
export interface DurableObjectNamespaceLike {
  idFromName(name: string): unknown;
  get(id: any): { fetch(request: Request): Promise<Response> };
}

/**
 * A Worker's default export that sends `/resources/<key>…` to the object
 * `idFromName(key)` of `env[binding]` (default `"FENCED"`); 404 NOT_FOUND / 400 BAD_KEY else.
 * @throws FencegateError INVALID_ARGUMENT when `binding` is not a string.
 */
export function fencedWorker(binding?: string): { fetch(request: Request, env: Record<string, DurableObjectNamespaceLike | unknown>): Promise<Response> | Response };

/** The gate options FencedObject uses, for reference. */
export type FencedObjectGateOptions = GateOptions;
