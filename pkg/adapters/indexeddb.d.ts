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
}
