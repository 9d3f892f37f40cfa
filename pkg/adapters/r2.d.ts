/**
 * fencegate/r2 — a compare-and-set host store on a Cloudflare R2 bucket binding,
 * in a Worker. The same fenced objects as `fencegate/s3`: the object at
 * `prefix + key`, its body one first line, the state text and the value's bytes;
 * the version is the ETag; every commit is one
 * `bucket.put(key, body, { onlyIf: { etagMatches } })` (`{ etagDoesNotMatch: '*' }`
 * for a new key), and a put R2 answers with null is a lost compare-and-set.
 * Errors the binding throws are COMMIT_UNKNOWN, except R2's refusal of the request's
 * metadata (code 10012: STORE_ERROR, nothing written).
 * No CommonJS copy: workerd loads ES modules.
 */
import type { ObjectStoreOptions, FencedObjectBody } from './s3.js';

export type { ObjectStoreOptions, FencedObjectBody } from './s3.js';

/** Structural type of an R2 bucket binding (`env.MY_BUCKET`). */
export interface R2BucketLike {
  get(key: string, options?: object): Promise<{ etag: string; arrayBuffer(): Promise<ArrayBuffer> } | { etag: string } | null>;
  put(key: string, value: Uint8Array, options?: object): Promise<{ etag: string } | null>;
}

/** The parts of a fenced object's body, or null when `bytes` is not one. */
export function decodeObjectBody(bytes: Uint8Array): FencedObjectBody | null;
/** The body of a fenced object (state text, value bytes or null, a commit id). */
export function encodeObjectBody(state: string, value: Uint8Array | null, commitId?: string): Uint8Array;

/** R2's limits the store checks: `{ maxBytes: 5 GiB − 5 MiB, metadataBytes: 2048 }`. */
export const R2_LIMITS: { readonly maxBytes: number; readonly metadataBytes: number };

/**
 * Versions are R2 ETags (unquoted).
 * @throws FencegateError INVALID_ARGUMENT for a `bucket` that is not an R2 binding and for
 * options as `S3Store` refuses them (`metadata` over 2048 bytes: `reason: 'METADATA_TOO_LARGE'`).
 */
export class R2Store<V = Uint8Array> {
  constructor(bucket: R2BucketLike, options?: ObjectStoreOptions<V>);
  /** The object key of `key` (`prefix + key`); INVALID_ARGUMENT with `reason` as `S3Store.objectKey`. */
  objectKey(key: string): string;
  /** As `S3Store.encodeValue` (at most 5 GiB − 5 MiB by default). */
  encodeValue(value: V | string | ArrayBuffer | ArrayBufferView): string;
  /** One `bucket.get`: state, ETag and value, or null when there is no object. */
  load(key: string): Promise<{ state: string | undefined; version: string; value?: V | Uint8Array | string } | null>;
  /** One conditional `bucket.put`; true when it landed, false when the condition failed. */
  commit(key: string, expectedVersion: unknown, nextState: object, change: { kind: string; value?: unknown; encoded?: string }): Promise<boolean>;
  /** The gate's state-cache commit: the same conditional put on `expected.version`; `{ version }` (the new ETag) or false. */
  commitFrom(key: string, expected: { version: unknown; state: string } | null, nextText: string, change: { kind: string; value?: unknown; encoded?: string }): Promise<{ version: string } | false>;
}
