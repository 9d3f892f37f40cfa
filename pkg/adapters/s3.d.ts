/**
 * fencegate/s3 — a compare-and-set host store on an S3-compatible bucket through
 * the AWS SDK for JavaScript v3 (`@aws-sdk/client-s3`, passed in; nothing is
 * imported). The fenced resource is the object at `prefix + key`. Its body is a
 * fenced object: one first line (`fencegate-object:1 <state bytes> <v|-> <commit id>`),
 * the state text, a newline, then the value's bytes ({@link decodeObjectBody} reads it).
 * The version is the object's ETag; every commit is one PutObject with
 * `If-Match: <ETag>` (`If-None-Match: *` for a new key). Use with
 * `new Gate(new S3Store(new S3({ ... }), { bucket }))` (docs/stores.md "Objects: S3 and R2").
 *
 * Answers: 412, 409 ConditionalRequestConflict and 404 on If-Match are a lost
 * compare-and-set (the gate loads and decides again); any other 4xx is STORE_ERROR
 * (nothing written); a 5xx, a timeout or a lost connection is COMMIT_UNKNOWN; a lost
 * precondition after the SDK resent the PUT is true when the object carries this
 * commit's id, else COMMIT_UNKNOWN.
 */
export interface ObjectStoreOptions<V = Uint8Array> {
  /** Prepended to every resource key to form the object key; default `""` (the object is at the key itself). */
  prefix?: string;
  /** Byte values (no codec): `'bytes'` (default) reads a value back as a Uint8Array, `'text'` as a string (UTF-8; invalid UTF-8 is STORE_ERROR on read). */
  readAs?: 'bytes' | 'text';
  /** Content-Type of every object written; default `"application/octet-stream"`. Printable ASCII. */
  contentType?: string;
  /**
   * User metadata written on every PUT: names `[a-z0-9-]`, printable ASCII values;
   * INVALID_ARGUMENT with `reason: 'METADATA_TOO_LARGE'` over the service's limit
   * (S3 and R2: 2048 bytes of names and values). The fence state is never in metadata.
   */
  metadata?: Record<string, string>;
  /** The largest object (fenced body: first line, state and value) in bytes; default and at most the service's largest single PUT (S3: 5 GiB). */
  maxBytes?: number;
  /** With `decode`, a codec (e.g. `...valueCodec`): values are JS values stored as the codec's text (UTF-8). Without: values are bytes. */
  encode?(value: V): string;
  /** Stored text to value (with `encode`). */
  decode?(text: string): V;
}

export interface S3StoreOptions<V = Uint8Array> extends ObjectStoreOptions<V> {
  /** The bucket (required). */
  bucket: string;
  /** With an `S3Client` (not an `S3`): the SDK's command classes, `{ GetObjectCommand, PutObjectCommand }`. */
  commands?: { GetObjectCommand: new (input: any) => unknown; PutObjectCommand: new (input: any) => unknown };
}

/** Structural type of an `S3` (aggregated client) or `S3Client` from `@aws-sdk/client-s3` v3. */
export type S3ClientLike =
  | { putObject(input: object): Promise<{ ETag?: string }>; getObject(input: object): Promise<{ ETag?: string; Body?: { transformToByteArray(): Promise<Uint8Array> } }> }
  | { send(command: unknown): Promise<any> };

/** A fenced object's parts: the state text, the value bytes (null: none, a tombstone) and the commit id. */
export interface FencedObjectBody {
  state: string;
  value: Uint8Array | null;
  commitId: string;
}

/** The parts of a fenced object's body, or null when `bytes` is not one (a plain object, a damaged one). For readers outside the gate. */
export function decodeObjectBody(bytes: Uint8Array): FencedObjectBody | null;
/** The body of a fenced object (state text, value bytes or null, a commit id: default a fresh random one). For tools that restore or migrate objects. */
export function encodeObjectBody(state: string, value: Uint8Array | null, commitId?: string): Uint8Array;

/** S3's limits the store checks: `{ maxBytes: 5 GiB, metadataBytes: 2048 }`. */
export const S3_LIMITS: { readonly maxBytes: number; readonly metadataBytes: number };

/**
 * Versions are ETags (as the service returns them, quoted).
 * @throws FencegateError INVALID_ARGUMENT for a client that is not an `S3` / `S3Client`
 * (an `S3Client` without `commands`), a missing or malformed `bucket`, an unknown option,
 * an option of the wrong type, `encode` without `decode`, `readAs` with a codec,
 * `maxBytes` out of range, or metadata that is malformed or too large.
 */
export class S3Store<V = Uint8Array> {
  constructor(client: S3ClientLike, options: S3StoreOptions<V>);
  /** The bucket. */
  readonly bucket: string;
  /**
   * The object key of resource key `key` (`prefix + key`). FencegateError INVALID_ARGUMENT
   * with `reason` (KEY_EMPTY, KEY_NOT_WELL_FORMED, KEY_CONTROL_CHARACTER, KEY_DOT_SEGMENT,
   * KEY_TOO_LONG: over 1024 UTF-8 bytes) for a key the store refuses; nothing is sent.
   */
  objectKey(key: string): string;
  /**
   * Checks a value before anything is sent. Bytes mode: a string (well-formed), an
   * ArrayBufferView or an ArrayBuffer, at most `maxBytes`; answers `""`. Codec mode: the
   * codec's text. FencegateError INVALID_ARGUMENT with `reason` NOT_BYTES (a stream, a
   * Blob, any other value), NOT_UTF8 (lone surrogates) or OBJECT_TOO_LARGE (`bytes`, `maxBytes`).
   */
  encodeValue(value: V | string | ArrayBuffer | ArrayBufferView): string;
  /** One GetObject: the state, the ETag and the value (bytes, text or the codec's value), or null when there is no object. A body that is not a fenced object has no state: the gate answers CORRUPT_STATE. */
  load(key: string): Promise<{ state: string | undefined; version: string; value?: V | Uint8Array | string } | null>;
  /** One conditional PutObject (establish and quarantine read the value of `expectedVersion` first, with If-Match); true when it landed, false when the precondition failed. */
  commit(key: string, expectedVersion: unknown, nextState: object, change: { kind: string; value?: unknown; encoded?: string }): Promise<boolean>;
  /** The gate's state-cache commit: the same conditional PutObject on `expected.version`; `{ version }` (the new ETag) or false. */
  commitFrom(key: string, expected: { version: unknown; state: string } | null, nextText: string, change: { kind: string; value?: unknown; encoded?: string }): Promise<{ version: string } | false>;
}
