/**
 * fencegate/indexeddb — a transaction host store on IndexedDB (browsers).
 * One record per key, `{ state, value }` (fence state as versioned JSON text,
 * value as codec text or null), read, decided and put in ONE readwrite
 * transaction per decision with nothing awaited in between: IndexedDB runs
 * overlapping readwrite transactions one after another in creation order,
 * across the tabs of an origin, so two deciders never read the same mark.
 * ES module only.
 */
import type { TransactionResult, TransactionStore } from '../index.js';

export interface IndexedDbStoreOptions<V = unknown> {
  /** Object store of the fence records; default `"fence"` (it must exist: see openFenceDatabase). */
  storeName?: string;
  /**
   * The caller's own object stores that `gate.transaction` bodies use: the fence's readwrite
   * transaction is opened over `[storeName, ...dataStores]` (IndexedDB fixes a transaction's
   * scope when it is created). Each must exist and differ from `storeName`: else INVALID_ARGUMENT.
   * Default none. A body touching a store not listed gets NotFoundError: rolled back, CALLBACK_FAILED.
   */
  dataStores?: string[];
  /** Value to stored text, with `decode` as a pair; default fencegate's `valueCodec`. A throw refuses the write: INVALID_ARGUMENT. */
  encode?(value: V): string;
  /** Stored text to value; default `valueCodec.decode`. */
  decode?(text: string): V;
}

export interface OpenFenceDatabaseOptions {
  /** Object store to create; default `"fence"`. */
  storeName?: string;
  /** Database version; default 1. */
  version?: number;
  /** Called in `onupgradeneeded` after the fence store exists: create your own stores. */
  upgrade?(db: IDBDatabase): void;
}

/**
 * Opens (creating if needed) a database with the fence object store.
 * @throws FencegateError INVALID_ARGUMENT for an empty name, storeName or a version below 1, or an unknown option name.
 */
export function openFenceDatabase(name: string, options?: OpenFenceDatabaseOptions): Promise<IDBDatabase>;

/** The record stored per key. */
export interface IndexedDbRecord {
  state: string;
  value: string | null;
}

/**
 * @throws FencegateError INVALID_ARGUMENT when `db` is not an open IDBDatabase, it has no
 * object store `storeName`, or `encode` comes without `decode` (or the reverse).
 */
export class IndexedDbStore<V = unknown> implements TransactionStore<V> {
  constructor(db: IDBDatabase, options?: IndexedDbStoreOptions<V>);
  /** The stored text of `value`; FencegateError INVALID_ARGUMENT (with `path`) when the codec refuses it. */
  encodeValue(value: V): string;
  /**
   * Read–modify–write of one record in one readwrite transaction: `update` runs
   * synchronously in the read's callback; resolves to whether it put a record, once committed.
   */
  update(key: string, update: (record: IndexedDbRecord | null) => IndexedDbRecord | null): Promise<boolean>;
  transaction(key: string, fn: (state: string | null) => TransactionResult<V>): Promise<boolean>;
  load(key: string): Promise<{ state: string; version: null; value?: V } | null>;
  /**
   * Store verb of `gate.transaction(key, token, (tx) => { tx.objectStore('orders').put(…) })`
   * (docs/stores.md "Your own data"): one readwrite transaction over the fence store and
   * `dataStores`; the body gets the IDBTransaction in the fence read's callback, after the
   * fence put. An async body may await requests of `tx`; while its Promise is pending the
   * store keeps the transaction from committing, so it commits after the body settled, or is
   * aborted when the body throws/rejects (CALLBACK_FAILED, nothing written). A body that
   * awaits anything else and then uses `tx` gets TransactionInactiveError: rolled back,
   * CALLBACK_FAILED. A body that calls `tx.commit()` before it settles: STORE_ERROR (what
   * was issued until then is written). `{ version: null }`, or null when refused.
   */
  fencedTransaction(key: string, step: { cached: unknown; decide(state: string | null): { nextStateText: string } | null; run(tx: IDBTransaction): unknown }): Promise<{ version: null } | null>;
  /**
   * Store verb of `await gate.fenceIn(tx, key, token)` inside the caller's readwrite
   * transaction over the fence store: reads and puts the fence record on `tx` (the caller
   * resumes while `tx` is active). On a refusal it aborts `tx`, so nothing of it can commit.
   * @throws FencegateError INVALID_ARGUMENT for another database's transaction, a readonly one, or one without the fence store.
   */
  fenceIn(handle: IDBTransaction, key: string, step: { decide(state: string | null): { nextStateText: string } | null }): Promise<void>;
}
