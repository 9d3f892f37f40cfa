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
