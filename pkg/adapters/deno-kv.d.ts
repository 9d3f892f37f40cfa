/**
 * fencegate/deno-kv — a compare-and-set host store on Deno KV (`Deno.openKv`).
 * One entry per key, `[...prefix, key]` → `{ state, value }` (fence state as
 * versioned JSON text, value as codec text or null); the entry's versionstamp
 * is the version, and each commit is one `atomic().check({ key, versionstamp }).set(…)`.
 * ES module only (Deno). Use with `new Gate(new DenoKvStore(kv))`.
 */
import type { Change, CasStore, PersistedState } from '../index.js';

/** A Deno KV key part. */
export type DenoKvKeyPart = string | number | bigint | boolean | Uint8Array;

export interface DenoKvStoreOptions<V = unknown> {
  /** Key prefix of the fence entries; default `["fencegate"]`. */
  prefix?: DenoKvKeyPart[];
  /** Value to stored text, with `decode` as a pair; default fencegate's `valueCodec`. A throw refuses the write: INVALID_ARGUMENT. */
  encode?(value: V): string;
  /** Stored text to value; default `valueCodec.decode`. */
  decode?(text: string): V;
}

/** Structural type of the `Deno.Kv` used (get, set, atomic). */
export interface DenoKv {
  get(key: DenoKvKeyPart[], options?: { consistency?: 'strong' | 'eventual' }): Promise<{ value: unknown; versionstamp: string | null }>;
  set(key: DenoKvKeyPart[], value: unknown): Promise<unknown>;
  atomic(): {
    check(...checks: { key: DenoKvKeyPart[]; versionstamp: string | null }[]): any;
  };
}

/**
 * @throws FencegateError INVALID_ARGUMENT when `kv` is not a Deno.Kv, `prefix` is not
 * a non-empty array of key parts, or `encode` comes without `decode` (or the reverse).
 * An unknown option name or an option of the wrong type is INVALID_ARGUMENT too.
 */
export class DenoKvStore<V = unknown> implements CasStore<V> {
  constructor(kv: DenoKv, options?: DenoKvStoreOptions<V>);
  /** The Deno KV key of a resource key: `[...prefix, key]`. */
  kvKey(key: string): DenoKvKeyPart[];
  /** The stored text of `value`; FencegateError INVALID_ARGUMENT (with `path`) when the codec refuses it. */
  encodeValue(value: V): string;
  load(key: string): Promise<{ state: string; version: string; value?: V } | null>;
  /** One atomic operation checked on the versionstamp; false when the entry changed since `load`. */
  commit(key: string, expectedVersion: string | null, nextState: PersistedState, change: Change<V>): Promise<boolean>;
  /**
   * Store verb of `gate.transaction(key, token, body)` (docs/stores.md "Your own data"):
   * reads the fence entry, decides, and when the verdict applies builds one `kv.atomic()`
   * with `check(fence versionstamp)` + `set(fence entry)`; `body(op)` adds the caller's
   * checks and mutations ({@link DenoKvAtomicFacade}), then one `commit()`. A failed check
   * (the fence entry or one of the caller's) is a conflict: the whole step runs again,
   * body included, bounded by `maxRetries`, then COMMIT_CONFLICT. `{ version }` = the
   * commit's versionstamp, or null (refused: body never called, nothing written).
   */
  fencedTransaction(key: string, step: { cached: unknown; decide(state: string | null): { nextStateText: string } | null; run(op: DenoKvAtomicFacade): unknown }): Promise<{ version: string } | null>;
  /**
   * Store verb of `gate.fenceIn(op, key, token)` on an AtomicOperation the caller then
   * commits: adds `check(fence versionstamp)` + `set(next state)` to `op` (the caller's
   * commit answers `ok: false` when the fence changed since: run it again). On a refusal it
   * adds a check no entry passes, so `op.commit()` can only answer `ok: false`.
   * @throws FencegateError INVALID_ARGUMENT when `handle` is not an AtomicOperation.
   */
  fenceIn(handle: { check(...c: { key: DenoKvKeyPart[]; versionstamp: string | null }[]): unknown; set(key: DenoKvKeyPart[], value: unknown): unknown; commit(): Promise<unknown> }, key: string, step: { decide(state: string | null): { nextStateText: string } | null }): Promise<void>;
}

/**
 * What the body of `gate.transaction` on a DenoKvStore gets: the verbs of the fence's
 * `Deno.AtomicOperation`, chainable, without `commit` (calling it throws INVALID_ARGUMENT:
 * the store commits once, after the body). A mutation of a key under the store's prefix
 * throws INVALID_ARGUMENT (the fence entries are fencegate's). The body may be async (read
 * with `kv.get`, then `check` what it read).
 */
export interface DenoKvAtomicFacade {
  check(...checks: { key: DenoKvKeyPart[]; versionstamp: string | null }[]): DenoKvAtomicFacade;
  set(key: DenoKvKeyPart[], value: unknown, options?: { expireIn?: number }): DenoKvAtomicFacade;
  delete(key: DenoKvKeyPart[]): DenoKvAtomicFacade;
  sum(key: DenoKvKeyPart[], n: bigint): DenoKvAtomicFacade;
  min(key: DenoKvKeyPart[], n: bigint): DenoKvAtomicFacade;
  max(key: DenoKvKeyPart[], n: bigint): DenoKvAtomicFacade;
  mutate(...mutations: { key: DenoKvKeyPart[]; type: string; value?: unknown }[]): DenoKvAtomicFacade;
  enqueue(value: unknown, options?: object): DenoKvAtomicFacade;
  commit(): never;
}
