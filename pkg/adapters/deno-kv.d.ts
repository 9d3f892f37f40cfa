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
}
