/**
 * fencegate — the resource-side fencing-token check.
 *
 * A fencing token (epoch) is an ownership generation, issued once per lease
 * acquisition. The resource keeps its high-water mark (the largest epoch it has
 * accepted) and decides every operation: advance (token > mark), accept
 * (token == mark, same-epoch policy `allow`) or reject (token < mark, or a
 * missing/malformed token, or `strict` policy on an equal token). A rejection
 * changes nothing. Rules: the seed article (shared/seed), Kleppmann,
 * "How to do distributed locking" (2016).
 */

/**
 * An epoch as returned by fencegate: a `number` when ≤ 2^53−1 and a `bigint`
 * above. The form is canonical, so equal epochs are always `===`.
 * Valid inputs: a safe integer ≥ 1, or a bigint in 1..2^64−1.
 */
export type Epoch = number | bigint;

/**
 * advance: token > mark; accept: token == mark (allowed); reject: nothing
 * changed; duplicate: the operation id was already applied in this epoch
 * (nothing changed now; `verdict.original` says what the original did).
 */
export type Outcome = 'advance' | 'accept' | 'reject' | 'duplicate';

/** Same-epoch policy: `allow` (ownership epochs, default) or `strict` (per-operation sequence numbers). */
export type SameEpochPolicy = 'allow' | 'strict';

/** Every stable code carried by verdicts (`verdict.code`) and errors (`error.code`). */
export type ErrorCode =
  | 'MISSING_TOKEN'
  | 'MALFORMED_TOKEN'
  | 'STALE_TOKEN'
  | 'SAME_EPOCH_REJECTED'
  | 'CORRUPT_STATE'
  | 'STORE_ERROR'
  | 'COMMIT_CONFLICT'
  | 'COMMIT_UNKNOWN'
  | 'LEASE_HELD'
  | 'LEASE_EXPIRED'
  | 'EPOCH_OVERFLOW'
  | 'BAD_SIGNATURE'
  | 'WRONG_SCOPE'
  | 'INVALID_ARGUMENT'
  | 'NOT_INITIALIZED'
  | 'UNKNOWN_KEY'
  | 'KEY_RETIRED'
  | 'UNSIGNED_TOKEN'
  | 'EPOCH_JUMP_TOO_LARGE'
  | 'FUTURE_EPOCH'
  | 'EPOCH_CONFLICT'
  | 'OP_ID_EXPIRED'
  | 'QUARANTINED'
  | 'OP_ID_REUSED'
  | 'LEASE_NOT_HELD'
  | 'REQUEST_ID_REUSED'
  | 'CALLBACK_FAILED'
  | 'DUPLICATE_OPERATION'
  /** A database guard (fencegate/guard, docs/guard.md) refused a statement of a fenced transaction: `cause` is the database's error (SQLSTATE FG001/FG002), `verdict` the decision rolled back. */
  | 'GUARD_REFUSED';

/** Codes a verdict of a fenced operation can carry. */
export type RejectCode =
  | 'MISSING_TOKEN'
  | 'MALFORMED_TOKEN'
  | 'STALE_TOKEN'
  | 'SAME_EPOCH_REJECTED'
  /** Gate policies only (see {@link GateOptions}): */
  | 'UNSIGNED_TOKEN'
  | 'UNKNOWN_KEY'
  | 'KEY_RETIRED'
  | 'BAD_SIGNATURE'
  | 'WRONG_SCOPE'
  | 'EPOCH_JUMP_TOO_LARGE'
  | 'FUTURE_EPOCH'
  /** Same epoch presented by a different holder: one epoch handed to two owners (issuer rollback). */
  | 'EPOCH_CONFLICT'
  /** The operation id fell out of the de-duplication window: it may already have been applied. */
  | 'OP_ID_EXPIRED'
  /** The key is quarantined (after a restore): epochs ≤ its floor are refused until a larger one is established. */
  | 'QUARANTINED'
  /** The operation id was applied in this epoch with a different `fingerprint`: the id was reused for another operation; nothing applied. */
  | 'OP_ID_REUSED';

/** The answer to one fenced operation. `markAfter >= markBefore` always. */
export interface Verdict {
  /** The resource key. */
  key: string;
  /**
   * `true` when the operation's effect is in place: advance and accept (applied
   * now) and duplicate (applied once, by the original; nothing applied now).
   */
  ok: boolean;
  outcome: Outcome;
  /** Duplicates only: what the original operation did. */
  original?: 'advance' | 'accept';
  /** Why it was rejected; `null` when `ok`. */
  code: RejectCode | null;
  /**
   * The validated token (canonical), or `null` when it was missing/malformed or,
   * on a gate with policy options, not authenticated (UNSIGNED_TOKEN,
   * BAD_SIGNATURE, UNKNOWN_KEY, KEY_RETIRED). A WRONG_SCOPE verdict carries the
   * genuine token's epoch.
   */
  token: Epoch | null;
  /** The mark before the operation (0 = never written). */
  markBefore: Epoch;
  /** The mark after: the token on advance, otherwise `markBefore`. */
  markAfter: Epoch;
  /**
   * Gates with policy options only: the verified claims of a signed token, or
   * `null` (a plain number, or a token refused before its signature verified).
   */
  claims?: TokenClaims | null;
}

/**
 * Persisted state of one resource key: JSON-safe, exact for every u64. Format
 * v1 (`{"v":1,"mark":"41"}`) while the key has no holder, no operation ids and
 * no quarantine, v4 otherwise. v2 and v3 were written before v4 and are still
 * read. Each version has exactly its fields, in any order (hosts may reorder
 * object members); anything else decodes as CORRUPT_STATE.
 */
export type PersistedState = PersistedStateV1 | PersistedStateV2 | PersistedStateV3 | PersistedStateV4;

/** Format version 1. */
export interface PersistedStateV1 {
  v: 1;
  /** The high-water mark as canonical decimal text ("0" or `[1-9][0-9]*`, ≤ 2^64−1). */
  mark: string;
}

/** Format version 2 (read only; written before v4): v1 plus holder binding and the per-epoch operation-id window. */
export interface PersistedStateV2 {
  v: 2;
  /** The high-water mark as canonical decimal text. */
  mark: string;
  /** The holder (or signed token's lease id) that established the current epoch, or null. */
  holder: string | null;
  /** Operation ids applied in the current epoch, oldest first → the mark before each (decimal text). */
  ops: Record<string, string>;
  /** Bloom filter of ids pushed out of the window in this epoch: two 1024-bit generations (current first), 512 lowercase hex digits; or null. */
  evicted: string | null;
}

/** Format version 3 (read only; written before v4 while a key was quarantined): v2 plus the quarantine floor. */
export interface PersistedStateV3 extends Omit<PersistedStateV2, 'v'> {
  v: 3;
  /** The quarantine floor as decimal text (≤ mark), or null: epochs ≤ it are refused (QUARANTINED). */
  quarantine: string | null;
}

/**
 * One applied operation in format 4: `[id, markBefore]`, or `[id, markBefore,
 * fingerprint]` with the first 128 bits of the SHA-256 of the operation's
 * `fingerprint` as 32 lowercase hex digits.
 */
export type PersistedOp = [id: string, markBefore: string] | [id: string, markBefore: string, fingerprint: string];

/** Format version 4: written whenever a key has a holder, operation ids or a quarantine. */
export interface PersistedStateV4 {
  v: 4;
  /** The high-water mark as canonical decimal text. */
  mark: string;
  /** The holder (or signed token's lease id) that established the current epoch, or null. */
  holder: string | null;
  /** Operation ids applied in the current epoch, oldest first: an array, so hosts that reorder object members keep the order. */
  ops: PersistedOp[];
  /**
   * Bloom filter of ids pushed out of the window in this epoch: two 1024-bit
   * generations (current first), 512 lowercase hex digits; `"fnv1a:"` + 512
   * hex digits for a filter carried over from a v2/v3 state (its old hash);
   * or null.
   */
  evicted: string | null;
  /** The quarantine floor as decimal text (≤ mark), or null. */
  quarantine: string | null;
}

/** What `quarantine(key, floor)` did. */
export interface QuarantineResult {
  key: string;
  ok: true;
  /** `false` when the key was already quarantined at that floor or above (nothing written). */
  changed: boolean;
  /** The floor in force: `max(floor, mark)`; epochs ≤ it are refused until a larger one is established. */
  floor: Epoch;
  markBefore: Epoch;
  /** The mark after: `max(markBefore, floor)`, never lower. */
  markAfter: Epoch;
}

/** A key's fence record as stored (see {@link Gate.inspect}). */
export interface FenceRecord {
  key: string;
  /** `false` when the key has no record (mark 0). */
  exists: boolean;
  mark: Epoch;
  /** The holder bound to the current epoch, or null. */
  holder: string | null;
  /** The quarantine floor, or null when not quarantined. */
  quarantine: Epoch | null;
}

/**
 * Per-operation options of `write` / `establish` / `delete`: a plain object
 * (an array, `Map`, `Date` or other built-in kind is INVALID_ARGUMENT). Any
 * other member name (a typo such as `opid`) is INVALID_ARGUMENT and nothing changes.
 */
export interface OperationOptions {
  /**
   * Operation id (1 to 128 bytes, no control characters). A repeat within the
   * epoch answers `duplicate` and applies nothing; an id pushed out of the
   * window answers OP_ID_EXPIRED. `establish` refuses it (INVALID_ARGUMENT):
   * an establish changes no data, so there is nothing to de-duplicate.
   */
  opId?: string;
  /**
   * What the operation does, as text or bytes (the request body, a canonical
   * serialisation of the value): only with `opId`. Its SHA-256 (first 128
   * bits) is stored with the id; a repeat of the id with a different
   * fingerprint answers OP_ID_REUSED and applies nothing. Compared only when
   * both the first operation and the repeat carry one: without it a repeat is
   * `duplicate` whatever its value.
   */
  fingerprint?: string | Uint8Array | ArrayBuffer;
  /**
   * The holder or lease presenting the token (1 to 256 UTF-8 bytes; the Issuer's holder limit too). The first named
   * holder of an epoch binds it; another holder at the same epoch gets
   * EPOCH_CONFLICT. A signed token's (non-empty) lease id is the holder
   * instead, whatever this says.
   */
  holder?: string;
}

/** One verdict as reported to `onVerdict`. */
export interface AuditRecord {
  key: string;
  /** `transaction` and `fenceIn`: the own-data forms ({@link Gate.transaction}, {@link Gate.fenceIn}, `fenceInSync`). */
  operation: 'write' | 'establish' | 'delete' | 'transaction' | 'fenceIn';
  outcome: Outcome;
  code: RejectCode | null;
  token: Epoch | null;
  markBefore: Epoch;
  markAfter: Epoch;
  holder: string | null;
  opId: string | null;
  /**
   * Milliseconds (fractional, `performance.now()`) from the call to the verdict:
   * loading, deciding and committing.
   */
  durationMs: number;
  /**
   * Milliseconds of `durationMs` spent in the host store's `commit` (all
   * compare-and-set attempts) or `transaction` callback; `null` when no host
   * was asked to commit (a MemoryGate; a compare-and-set rejection decided on load).
   */
  commitMs: number | null;
}

/** Counts since the gate was made. */
export interface GateCounters {
  total: number;
  advance: number;
  accept: number;
  reject: number;
  duplicate: number;
  /** Audit callbacks that threw or rejected (the verdicts were unaffected). */
  auditErrors: number;
  /** Rejections per code. */
  codes: Partial<Record<RejectCode, number>>;
}

/** The one error class fencegate throws; `code` is stable. */
export class FencegateError extends Error {
  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>);
  /**
   * True for an error from any copy of this class in the process (the ESM and
   * the CommonJS bundles are two copies): it tests a brand every instance
   * carries (`Symbol.for('fencegate.FencegateError')`), not the prototype chain.
   */
  static [Symbol.hasInstance](value: unknown): value is FencegateError;
  readonly name: 'FencegateError';
  /** Stable code, see {@link ErrorCode}. */
  readonly code: ErrorCode;
  /** The offending token value, for MISSING_TOKEN / MALFORMED_TOKEN. */
  readonly token?: unknown;
  /** Other details, depending on the code. */
  readonly [detail: string]: unknown;
}

/** Where a WebAssembly module is: a URL, a Response, its bytes or a compiled `WebAssembly.Module`. */
export type WasmInput = string | URL | Request | Response | BufferSource | WebAssembly.Module;

/**
 * Loads the WebAssembly module. Needed once on the browser/default entry
 * (`input`: default: the packaged `dist/fencegate_bg.wasm`). A no-op on Node
 * and workerd. Before it, every call throws NOT_INITIALIZED.
 *
 * `issuer`: the issuer side's module (default: the packaged
 * `dist/fencegate_issuer_bg.wasm`), a second, smaller module that holds the
 * `Issuer` and `reconcile` code. It is fetched and instantiated when an
 * `Issuer` or `reconcile` is first used, never by a resource that only gates.
 * If it cannot be loaded then, that call rejects with NOT_INITIALIZED and the
 * next one tries again. Node and workerd load it from the package by themselves.
 */
export function init(input?: WasmInput, issuer?: WasmInput): Promise<void>;

/**
 * Parses header/JSON text as an epoch with the canonical decimal grammar
 * `[1-9][0-9]*`, ≤ 2^64−1: no sign, leading zero, whitespace, exponent,
 * fraction or hex. `"7"` → `7`; `"18446744073709551615"` → `18446744073709551615n`.
 * @throws FencegateError MISSING_TOKEN (undefined/null), MALFORMED_TOKEN (anything else).
 */
export function parseToken(text: string | null | undefined): Epoch;

/**
 * Validates any JS value as an epoch: a safe integer ≥ 1 or a bigint in
 * 1..2^64−1; returns it in canonical form.
 * @throws FencegateError MISSING_TOKEN (undefined/null), MALFORMED_TOKEN (anything else).
 */
export function toToken(value: unknown): Epoch;

/**
 * Decodes persisted state (the object or its JSON text) to `{ mark }`.
 * @throws FencegateError CORRUPT_STATE for unknown versions or damaged fields.
 */
export function decodeState(state: PersistedState | string | unknown): { mark: Epoch; holder?: string | null; opIds?: string[]; quarantine?: Epoch };

/**
 * Encodes a mark (0, a safe integer or a bigint up to 2^64−1) as {@link PersistedState}.
 * @throws FencegateError INVALID_ARGUMENT.
 */
export function encodeState(mark: Epoch): PersistedStateV1;

/** Every stable code, in a fixed order. */
export function errorCodes(): ErrorCode[];

/** Signature algorithm of a signed token. */
export type TokenAlgorithm = 'hmac-sha256' | 'ed25519';

/**
 * What a signed token says; every field is covered by the signature.
 * Text form: `fg1.<base64url(claims)>.<base64url(signature)>`, at most 1,058
 * characters of `[A-Za-z0-9_.-]` (docs/signed-tokens.md).
 */
export interface TokenClaims {
  alg: TokenAlgorithm;
  /** Key id: 1–64 characters of `[A-Za-z0-9._-]`. */
  kid: string;
  /** What the token is for (lock or resource name): 1–512 UTF-8 bytes. */
  scope: string;
  /** The fencing token (ownership epoch), ≥ 1. */
  epoch: Epoch;
  /** The lease the epoch was issued for: 0–128 UTF-8 bytes. */
  leaseId: string;
  /** Issuer generation (raised when an issuer is restored, R11), ≥ 0. */
  generation: Epoch;
}

/**
 * A key a resource verifies with: an HMAC-SHA256 secret (32–1024 bytes, as a
 * `Uint8Array` or `{ hmac }`), or an Ed25519 public key (32 bytes; Ed25519 build, or a `Gate` on any build through WebCrypto).
 */
export type VerifyKey = Uint8Array | { hmac: Uint8Array } | { ed25519: Uint8Array };

/** A key an issuer mints with: an HMAC secret, or an Ed25519 32-byte seed (Ed25519 build only). */
export type SigningKey = { kid: string; hmac: Uint8Array } | { kid: string; ed25519Seed: Uint8Array };

/**
 * Keys by key id, and retired key ids. A token naming a retired id is refused
 * with KEY_RETIRED; an id not configured at all with UNKNOWN_KEY. An id cannot
 * be both configured and retired (INVALID_ARGUMENT).
 */
export interface KeyringOptions {
  keys: Record<string, VerifyKey>;
  retired?: string[];
}

/**
 * What a gate does with a token above the mark:
 * - `adopt` (default): any higher epoch advances the mark;
 * - `adopt-within`: only if token − mark ≤ `maxJump` epochs (also from mark 0),
 *   else EPOCH_JUMP_TOO_LARGE;
 * - `reject-future`: only if token ≤ the ceiling, else FUTURE_EPOCH. The ceiling
 *   is `ceiling` (an epoch, or a function called before every operation, e.g.
 *   returning the issuer's current epoch; 0 allowed; it may return a Promise on a
 *   host-store {@link Gate}, not on a MemoryGate) or {@link MemoryGate.setCeiling};
 *   without one, writes can never raise the mark (only `establish` can). A
 *   ceiling function that throws (or whose promise rejects) fails the operation
 *   with FencegateError STORE_ERROR (`callback: 'ceiling'`, `cause`: its error)
 *   before the store is touched: nothing changes.
 */
export type HigherEpochPolicy =
  | 'adopt'
  | 'adopt-within'
  | 'reject-future'
  | { mode: 'adopt' }
  | { mode: 'adopt-within'; maxJump: Epoch }
  | { mode: 'reject-future'; ceiling?: Epoch | (() => Epoch | Promise<Epoch>) };

/**
 * Mints a signed fence token's text form (issuer side).
 * `leaseId` defaults to `''`, `generation` to `0`. HMAC tokens are deterministic.
 * @example mintToken({ scope: 'orders', epoch: 42, leaseId: 'L-7', generation: 1 }, { kid: 'k-2026-01', hmac: secret })
 * @throws FencegateError INVALID_ARGUMENT for a claim outside its range, a short secret, a bad key id,
 *   an unknown member name in `claims` or `key`, or an Ed25519 seed in a build without Ed25519.
 */
export function mintToken(
  claims: { scope: string; epoch: Epoch; leaseId?: string; generation?: Epoch },
  key: SigningKey,
): string;

/**
 * Verifies a signed token's text and returns its claims. Checks, in order: the
 * text form (MALFORMED_TOKEN), the key id (KEY_RETIRED / UNKNOWN_KEY), algorithm
 * and signature (BAD_SIGNATURE, constant-time for HMAC), then the scope
 * (WRONG_SCOPE; `scope: null` skips it, for inspection tools only).
 * @throws FencegateError with those codes; MISSING_TOKEN for undefined/null; INVALID_ARGUMENT for bad keys
 *   or an unknown option name.
 */
export function verifyToken(text: string, options: KeyringOptions & { scope: string | null }): TokenClaims;

/** The 32-byte Ed25519 public key of a 32-byte seed. @throws FencegateError INVALID_ARGUMENT without Ed25519. */
export function ed25519PublicKey(seed: Uint8Array): Uint8Array;

/** Optional algorithms in this build: `['ed25519']` in the Ed25519 build, `[]` otherwise. */
export function features(): string[];

/** Options of a gate. */
export interface GateOptions {
  /** Equal-epoch policy; default `'allow'`. */
  sameEpoch?: SameEpochPolicy;
  /**
   * Refuse plain numbers and bigints with UNSIGNED_TOKEN: only signed tokens
   * (text form) verified with `keys` count. Needs at least one key. Default false.
   */
  requireSigned?: boolean;
  /** Keys that signed tokens are verified with, by key id. */
  keys?: Record<string, VerifyKey>;
  /** Retired key ids (KEY_RETIRED). */
  retired?: string[];
  /**
   * The scope a signed token must name (else WRONG_SCOPE): a fixed string for
   * every key of the gate, or a function of the resource key. Default: the
   * resource key itself, so a token for one key is refused at another.
   */
  scope?: string | ((key: string) => string);
  /** Policy for epochs above the mark; default `'adopt'`. */
  higherEpoch?: HigherEpochPolicy;
  /** Operation ids kept per key and epoch for de-duplication: 1..=1024, default 64. */
  opWindow?: number;
  /**
   * Audit callback: every verdict, as an {@link AuditRecord}. Sync or async; a
   * throw or rejection is counted in `counters().auditErrors` and never changes
   * the verdict.
   */
  onVerdict?: (record: AuditRecord) => void | Promise<void>;
}

/** A key's current mark and value. */
export interface Reading<V = unknown> {
  mark: Epoch;
  /** `undefined` when no write was applied. */
  value: V | undefined;
  /** Whether any write was applied (an `establish` alone records only a mark). */
  hasValue: boolean;
}

/**
 * The embedded in-memory gate: one high-water mark and one value per resource
 * key, checked and changed in one step. Values are kept by reference (no copy,
 * no codec): `value(key)` returns the object written, and mutating it later
 * changes what the gate holds. Holds WebAssembly memory: call
 * `free()` (or `using`) when done with a short-lived gate.
 * @throws FencegateError NOT_INITIALIZED before `init()`; INVALID_ARGUMENT for bad options.
 */
export class MemoryGate<V = unknown> {
  constructor(options?: GateOptions);
  /** The same-epoch policy in force. */
  readonly sameEpoch: SameEpochPolicy;
  /**
   * Fenced write: `value` is stored on advance/accept; nothing changes on reject.
   * @param token a safe integer ≥ 1 or a bigint in 1..2^64−1; anything else is rejected with a code.
   * @throws FencegateError INVALID_ARGUMENT when `key` is not a non-empty string (or starts with `issuer:`,
   *   the Issuer's records), when `value` is `undefined` (as `Gate.write`), or for bad or unknown `options` members.
   */
  write(key: string, token: unknown, value: V, options?: OperationOptions): Verdict;
  /**
   * Raises the mark to `token` with no data change (a new owner's barrier). Equal → accept.
   * @throws FencegateError INVALID_ARGUMENT for a bad key, an `opId`, or bad or unknown `options` members.
   */
  establish(key: string, token: unknown, options?: OperationOptions): Verdict;
  /** Counters per outcome and code. */
  counters(): GateCounters;
  /** The high-water mark (0 = never written). */
  mark(key: string): Epoch;
  /** The protected value, or `undefined`. */
  value(key: string): V | undefined;
  /** Mark and value together. */
  read(key: string): Reading<V>;
  /** The persisted state of `key`, or `undefined` when it has none. */
  state(key: string): PersistedState | undefined;
  /** Keys that have state, sorted. */
  keys(): string[];
  /**
   * Key rotation on a live gate: adds a verification key under `kid`.
   * @throws FencegateError INVALID_ARGUMENT for a bad, duplicate or retired id, a bad key,
   *   or a gate created without policy options.
   */
  addKey(kid: string, key: VerifyKey): void;
  /** Key rotation on a live gate: retires `kid`; tokens naming it get KEY_RETIRED. */
  retireKey(kid: string): void;
  /**
   * Sets the ceiling of a `reject-future` gate (an epoch ≥ 0, e.g. the issuer's
   * current epoch), or clears it with `null`; replaces a `ceiling` function.
   * @throws FencegateError INVALID_ARGUMENT on other gates or for a bad value.
   */
  setCeiling(ceiling: Epoch | null): void;
  /**
   * Quarantine (after a restore, R11): raises the mark to `max(mark, floor)`
   * (never lowers it) and refuses every write and establish with an epoch ≤
   * that floor with QUARANTINED, until one above it advances the mark and
   * lifts the quarantine. `floor`: 0 or an epoch.
   * @throws FencegateError INVALID_ARGUMENT for a bad key or floor.
   */
  quarantine(key: string, floor: Epoch | 0): QuarantineResult;
  /** Releases the WebAssembly memory. The gate is unusable afterwards. */
  free(): void;
  [Symbol.dispose](): void;
}

/**
 * A data change committed together with the next fence state:
 * `set` stores `value`; `delete` clears the value and keeps the fence record;
 * `none` (establish) changes only the state. On a store with
 * {@link CasStore.encodeValue}, a `set` also carries `encoded`: the value's
 * text as `encodeValue` gave it before the store was touched; store that text.
 */
export type Change<V = unknown> = { kind: 'set'; value: V; encoded?: string } | { kind: 'delete' } | { kind: 'none' };

/**
 * A value codec (docs/stores.md "Values"). The contract: `decode(encode(v))`
 * is identical to `v` (same types, prototypes, members and order; `-0`, NaN,
 * holes and `undefined` members included), or `encode` throws: a refusal,
 * which the gate reports as INVALID_ARGUMENT with nothing written. `encode`
 * is synchronous and deterministic, returns a string, and reads `v` without
 * changing it; `decode` never throws for text its `encode` wrote.
 */
export interface ValueCodec<V = unknown> {
  encode(value: V): string;
  decode(text: string): V;
}

/**
 * The default codec of the SQLite, Redis and PostgreSQL stores: plain JSON
 * text for a value JSON keeps exactly (the text the stores wrote before), else
 * `devalue:` + devalue text (Map, Set, Date, BigInt, NaN, ±Infinity, -0,
 * `undefined` members, sparse arrays, RegExp, typed arrays, null-prototype
 * objects, shared references and cycles). Refused, with INVALID_ARGUMENT and
 * `path` (e.g. `value.items[3].run`): functions, symbols, symbol-keyed members,
 * class instances (subclasses of Map, Array… included), Errors, promises,
 * named properties on arrays, own properties on a Map/Set/Date/RegExp.
 * `decode` reads both forms (and all JSON text written before).
 */
export const valueCodec: ValueCodec<any> & { readonly name: 'default codec' };

/**
 * Strict JSON: stores plain JSON text for a value JSON keeps exactly and
 * refuses anything JSON would change (Map, Set, Date, BigInt, NaN, ±Infinity,
 * -0, `undefined` members, sparse arrays, cycles, `toJSON`, …) with
 * INVALID_ARGUMENT and `path`; keeps a queryable JSON column. Shared
 * references are stored as equal copies. `decode` also reads `devalue:` text.
 */
export const jsonCodec: ValueCodec<any> & { readonly name: 'JSON codec' };

/** What a host store's `load` returns for a key that has a record. */
export interface StoredRecord<V = unknown> {
  /**
   * The stored fence state: the {@link PersistedState} object or its JSON text.
   * A record whose state is missing (`undefined`/`null`) is damaged: the gate
   * answers CORRUPT_STATE and writes nothing.
   */
  state: PersistedState | string | null | undefined;
  /** An opaque version the host compares in `commit` (a counter, an ETag, a revision). */
  version: unknown;
  /** The protected value, `undefined` when the key has none. */
  value?: V;
}

type MaybePromise<T> = T | Promise<T>;

/**
 * Compare-and-set host store. `commit` writes `nextState` and `change` in one
 * atomic step only if the key's version is still `expectedVersion` (`null`:
 * the key has no record yet), and answers `true`, or `false` without writing.
 * Throw an error with `commitUnknown: true` when the outcome is unknown.
 */
export interface CasStore<V = unknown> {
  load(key: string): MaybePromise<StoredRecord<V> | null | undefined>;
  commit(key: string, expectedVersion: unknown, nextState: PersistedState, change: Change<V>): MaybePromise<boolean>;
  /**
   * Optional: the commit of a gate's state cache (docs/stores.md "commitFrom").
   * Writes `nextText` (the next state's JSON text, stored as is) and `change`
   * in one atomic step only if the key's record still has `expected.version`
   * AND its state text is exactly `expected.state` (`expected` null: the key
   * has no record yet); answers `{ version }`, the version the record has
   * after this write (what `load` would return), or `false` without writing.
   * Anything else is COMMIT_UNKNOWN. Only a store with this method gets a cache.
   */
  commitFrom?(key: string, expected: CommitPrecondition | null, nextText: string, change: Change<V>): MaybePromise<{ version: unknown } | false>;
  /**
   * Optional, synchronous: the stored text of a value (its codec's `encode`).
   * The gate calls it before touching the store; a throw refuses the write
   * (INVALID_ARGUMENT, nothing written) and the text rides in `change.encoded`.
   */
  encodeValue?(value: V): string;
}

/** The precondition of {@link CasStore.commitFrom}: the version and the exact state text last loaded or written. */
export interface CommitPrecondition {
  version: unknown;
  state: string;
}

/**
 * What the function handed to a transaction store returns: null = rejected, write nothing.
 * `nextStateText` (a gate's answer) is `nextState` as its JSON text, exactly as fencegate
 * writes it: a store that keeps text may store it as it is (no parse, no re-serialisation).
 */
export type TransactionResult<V = unknown> = { nextState: PersistedState; nextStateText?: string; change: Change<V> } | null;

/**
 * Transaction host store. `transaction` runs `fn(state)` (the stored state, or
 * null when the key has no record) inside the host's own atomic boundary and
 * writes what it returns in the same boundary, or nothing when it returns null
 * or throws. `fn` is synchronous and may be called again if the host retries.
 * `load` is optional and used by `read()`.
 */
export interface TransactionStore<V = unknown> {
  /**
   * Throw an error with `conflict: true` when the transaction did not commit
   * and may simply run again (SQLITE_BUSY, a serialization failure): the gate
   * retries it up to `maxRetries` times, then answers COMMIT_CONFLICT.
   */
  transaction(key: string, fn: (state: PersistedState | string | null) => TransactionResult<V>): MaybePromise<unknown>;
  /**
   * Optional, used instead of `transaction` when present: the same, with the state as text both
   * ways — `fn` answers `{ nextStateText, change }` (write the text as it is) or null — and the
   * store answers `{ version }` of the record it wrote (null: nothing written). With
   * {@link CasStore.commitFrom} as well, it gets the gate's state cache (SqliteStore does).
   */
  textTransaction?(key: string, fn: (state: string | null) => { nextStateText: string; change: Change<V> } | null): MaybePromise<{ version: unknown } | null>;
  load?(key: string): MaybePromise<StoredRecord<V> | null | undefined>;
  /** Optional, synchronous: see {@link CasStore.encodeValue}. */
  encodeValue?(value: V): string;
}

/**
 * `error.reason` of a STORE_ERROR thrown by a store that refuses to run:
 * `EVICTION_POLICY` (Redis `maxmemory-policy` may evict fence records;
 * `error.policy`), `EVICTION_POLICY_UNKNOWN` (the policy cannot be read, e.g.
 * CONFIG GET not permitted). Both are lifted only by the store's explicit
 * opt-in (`allowEviction: true`).
 */
export type StoreErrorReason = 'EVICTION_POLICY' | 'EVICTION_POLICY_UNKNOWN';

/** What {@link Gate.transaction} runs: a function of the engine's transaction handle, or what the store's `checkBody` accepts (Redis: commands). */
export type TransactionBody<R = unknown> = ((tx: any) => R | Promise<R>) | readonly unknown[] | object;

/** The verdict of {@link Gate.transaction}: `result` is what the body returned, present when the verdict applied. */
export type TransactionVerdict<R = unknown> = Verdict & { result?: R };

/** A step the gate hands to {@link OwnDataStore.fencedTransaction} (docs/stores.md "Writing your own adapter"). */
export interface FencedStep {
  /** The gate's last known fence state text and version of the key (its state cache), or null. */
  readonly cached: { state: string; version: unknown } | null;
  /** The decision on the stored state text (null: no fence row): what to write, or null (refused: roll back, never run the body). */
  decide(state: string | null): { nextStateText: string; change: Change<unknown> } | null;
  /**
   * The caller's statements: call it after the fence row is written, inside the transaction, with the engine's handle.
   * For a body that is not a function (what `checkBody` accepted, e.g. Redis commands, which ran inside the engine):
   * call it with the outcome instead, the body's value or a Promise of it (rejected: the body failed, CALLBACK_FAILED).
   */
  run(handle: unknown): unknown;
  /** The body as the caller passed it (for stores whose body is not a function). */
  readonly body: unknown;
}

/**
 * The own-data verbs a host store may have (each one a capability: the gate
 * uses what is there). `fencedTransaction` answers `{ version }` of the fence
 * row written, or null when refused; it throws with `conflict: true` for the
 * engine's "retry the transaction" class and `commitUnknown: true` when it may
 * have committed. `fenceIn` runs the step on the caller's handle.
 */
export interface OwnDataStore {
  fencedTransaction?(key: string, step: FencedStep): MaybePromise<{ version: unknown } | null>;
  fenceIn?(handle: unknown, key: string, step: Pick<FencedStep, 'decide'>): MaybePromise<void>;
  checkBody?(body: unknown): void;
}

/** A host store: either callback shape. */
export type HostStore<V = unknown> = (CasStore<V> | TransactionStore<V>) & OwnDataStore;

/** Options of a host-store-backed {@link Gate}. */
export interface HostGateOptions extends GateOptions {
  /** Compare-and-set attempts after the first before COMMIT_CONFLICT; default 8. */
  maxRetries?: number;
  /** Milliseconds to wait for `commit`/`transaction`; no answer by then is COMMIT_UNKNOWN. Default: wait. */
  commitTimeoutMs?: number;
  /** Milliseconds to wait for `load` (and `read`/`inspect`); no answer by then is STORE_ERROR, nothing written. Default: wait. */
  loadTimeoutMs?: number;
  /**
   * Keys whose last loaded or committed state (and version) the gate keeps, least recently used dropped
   * first: an integer 0..16,777,216; default 1024; 0 turns the cache off. Used only with a compare-and-set
   * store that has {@link CasStore.commitFrom} (the shipped PostgreSQL, Redis, MySQL and etcd stores) and with
   * the shipped SqliteStore: a write on a cached key is one `commitFrom` (precondition: the cached state text, and
   * the version where the store compares it; Redis compares the state text alone) and no `load` (SQLite: no
   * transaction). Verdicts are the same with and without it: a lost precondition, a refusal or a duplicate is decided again on a
   * fresh load. See docs/stores.md "State cache". INVALID_ARGUMENT otherwise.
   */
  stateCache?: number;
}

/**
 * A gate over a host store (SQLite, Redis, PostgreSQL, a Durable Object, your
 * own): fencegate decides, the host commits the next state and the data change
 * together. Callbacks may be synchronous or return Promises; every method
 * returns a Promise. A rejection resolves to a verdict and writes nothing.
 *
 * @throws FencegateError CORRUPT_STATE (stored state does not decode; nothing
 * written), STORE_ERROR (a callback threw; `cause`, `callback`; a store that
 * refuses to run sets `reason`, see {@link StoreErrorReason}), COMMIT_UNKNOWN
 * (the host may have committed; retry the same operation with the same token),
 * COMMIT_CONFLICT (compare-and-set lost, or a transaction conflicted,
 * `maxRetries + 1` times; `attempts`), INVALID_ARGUMENT (also: a value the
 * store's codec refuses, with `path`; nothing written), NOT_INITIALIZED.
 */
export class Gate<V = unknown> {
  constructor(store: HostStore<V>, options?: HostGateOptions);
  readonly sameEpoch: SameEpochPolicy;
  /** The callback shape in use; a store with `transaction` is driven as a transaction store. */
  readonly shape: 'transaction' | 'compare-and-set';
  /** Fenced write of `value` (not `undefined`; use `delete`). */
  write(key: string, token: unknown, value: V, options?: OperationOptions): Promise<Verdict>;
  /** Raises the mark with no data change (a new owner's barrier); an `opId` is INVALID_ARGUMENT. */
  establish(key: string, token: unknown, options?: OperationOptions): Promise<Verdict>;
  /** Counters per outcome and code. */
  counters(): GateCounters;
  // ── The caller's own data (docs/stores.md "Your own data"): one block for Gate.transaction, fenceIn, fenceInSync ──
  /**
   * One transaction of the store's engine: the fence row of `key` is read (or, for a
   * cached key, conditionally updated) and decided on; only when the verdict applies is
   * the fence row written and `body(tx)` called with the engine's transaction handle (a
   * pg `PoolClient`/`Client`, a postgres.js transaction `sql`, a mysql2 `PoolConnection`,
   * a better-sqlite3 `Database`…), then both commit. A refusal or duplicate never calls
   * `body` and writes nothing: it resolves to that verdict. On an applied verdict,
   * `result` is what `body` returned. `body` may run again after a rolled-back
   * serialization failure, deadlock or busy database (bounded by `maxRetries`): it must
   * only touch `tx`. @throws FencegateError CALLBACK_FAILED (`cause`: the body's error,
   * `verdict`: the decision rolled back; nothing written), COMMIT_UNKNOWN, COMMIT_CONFLICT,
   * STORE_ERROR, INVALID_ARGUMENT (a store without `fencedTransaction`, a body that is not
   * a function).
   */
  transaction<R = unknown, Tx = any>(key: string, token: unknown, body: (tx: Tx) => R | Promise<R>, options?: OperationOptions): Promise<Verdict & { result?: Awaited<R> }>;
  /**
   * The fence step inside a transaction the caller already has on `handle` (a pg client
   * after BEGIN, a postgres.js `sql.begin` transaction, a mysql2 connection after
   * `beginTransaction()`, an ORM transaction): the fence row is read with a row lock and
   * written on that handle. Resolves to the verdict when it applies. @throws FencegateError
   * with the refusal's code (STALE_TOKEN, SAME_EPOCH_REJECTED…) or DUPLICATE_OPERATION,
   * `verdict` attached, so the caller's transaction rolls back; INVALID_ARGUMENT for a pool,
   * an unknown handle or no open transaction (nothing written).
   */
  fenceIn(handle: unknown, key: string, token: unknown, options?: OperationOptions): Promise<Verdict>;
  /** {@link Gate.fenceIn} for synchronous handles (better-sqlite3, bun:sqlite, `ctx.storage.sql`): the verdict, or throws at once. */
  fenceInSync(handle: unknown, key: string, token: unknown, options?: OperationOptions): Verdict;
  /** Fenced maintenance delete: clears the value, keeps the fence record. */
  delete(key: string, token: unknown, options?: OperationOptions): Promise<Verdict>;
  /** Fenced delete of several keys, each fenced on its own (not atomic across keys). */
  deleteMany(keys: string[], token: unknown): Promise<Verdict[]>;
  /**
   * A fenced transaction over your own data (docs/stores.md "Your own data"):
   * one transaction of the store's engine reads the fence row of `key`,
   * decides, and only when the verdict applies writes the next fence state
   * and runs `body(tx)` with the engine's transaction handle (SqliteStore: the
   * `Database`, synchronously; PostgresStore: the pg client or postgres.js
   * `sql`; a Durable Object transaction; Redis: a command list instead of a
   * function), committing both together. A refusal or a duplicate op id never
   * runs `body` and writes nothing. `body` may run again after a rolled-back
   * serialization failure or busy database (bounded by `maxRetries`): it must
   * touch only the handle it is given.
   * Resolves to the verdict, with `result` (what `body` returned) when it applied.
   * @throws FencegateError CALLBACK_FAILED (`cause`: the body's error, `verdict`:
   * the decision that was rolled back; nothing written), COMMIT_UNKNOWN,
   * COMMIT_CONFLICT, STORE_ERROR, INVALID_ARGUMENT (a store without
   * `fencedTransaction`, a body it cannot run).
   */
  transaction<R = unknown>(key: string, token: unknown, body: TransactionBody<R>, options?: OperationOptions): Promise<TransactionVerdict<R>>;
  /**
   * The fence step inside a transaction you already have (an ORM's `tx`, a pg
   * client after BEGIN, a mysql2 connection, a better-sqlite3 `Database` inside
   * `db.transaction`): reads the fence row on `handle` with a row lock, decides,
   * writes the next fence state on the same handle. Resolves to the verdict
   * when it applies.
   * @throws FencegateError with the refusal's code (STALE_TOKEN,
   * SAME_EPOCH_REJECTED, …) or DUPLICATE_OPERATION (an op id already applied),
   * `verdict` attached: throwing is what makes the surrounding transaction roll
   * back. INVALID_ARGUMENT for a handle the store cannot run statements on, or
   * that is not inside a transaction. On a store that decides at once (SqliteStore
   * on its own `Database`, a gate without policy callbacks) a refusal is thrown
   * synchronously, so a synchronous transaction function rolls back even without
   * `await`: catch it with try/await (or use {@link Gate.fenceInSync}), not `.catch()`.
   */
  fenceIn(handle: unknown, key: string, token: unknown, options?: OperationOptions): Promise<Verdict>;
  /**
   * {@link Gate.fenceIn} for a synchronous handle (better-sqlite3, bun:sqlite, a
   * Durable Object's `ctx.storage.sql` inside `transactionSync`): the verdict,
   * or a throw at once. INVALID_ARGUMENT on a gate whose policy answers
   * through a Promise (a `higherEpoch` ceiling function, host-verified Ed25519).
   */
  fenceInSync(handle: unknown, key: string, token: unknown, options?: OperationOptions): Verdict;
  /** Mark and value through the host's `load`. */
  read(key: string): Promise<Reading<V>>;
  /** The high-water mark (0 = no fence record). */
  mark(key: string): Promise<Epoch>;
  /** The stored fence record: mark, bound holder, quarantine floor. Needs `load`. */
  inspect(key: string): Promise<FenceRecord>;
  /**
   * Quarantine, a fenced maintenance operation (see {@link MemoryGate.quarantine});
   * commits only the fence state (no data change).
   * @throws FencegateError CORRUPT_STATE, STORE_ERROR, COMMIT_UNKNOWN, COMMIT_CONFLICT, INVALID_ARGUMENT.
   */
  quarantine(key: string, floor: Epoch | 0): Promise<QuarantineResult>;
  /** Key rotation: adds a verification key under `kid` (see {@link MemoryGate.addKey}). */
  addKey(kid: string, key: VerifyKey): void;
  /** Key rotation: retires `kid`; tokens naming it get KEY_RETIRED. */
  retireKey(kid: string): void;
  /**
   * Drops the gate's cached state of `key` (of every key when omitted), so its next operation starts with a
   * load instead of an optimistic commit (memory; verdicts never depend on it). Writes nothing.
   * INVALID_ARGUMENT for a bad key.
   */
  forget(key?: string): void;
  /**
   * Releases the gate's WebAssembly memory now (its verification keys); every
   * later call throws INVALID_ARGUMENT. A second call does nothing.
   */
  free(): void;
  /** `free()`, for `using gate = new Gate(store, options)`. */
  [Symbol.dispose](): void;
}

// ───────────────────────────── Issuer ─────────────────────────────

/**
 * A host store the issuer (and the gate) drives, compare-and-set shape.
 * `load` returns `null` for a key without a record. `commit` writes
 * `nextState` (and applies `change`; the issuer's change is always
 * `{ kind: 'none' }`) only when the record's version is still
 * `expectedVersion` (`null`: the key has no record yet), and answers `true`
 * when it wrote, `false` when the version had moved. Either may return a Promise.
 * A thrown error with `commitUnknown: true` means "may have committed".
 */
export interface IssuerCasStore {
  load(key: string): IssuerStoredRecord | null | Promise<IssuerStoredRecord | null>;
  commit(
    key: string,
    expectedVersion: unknown,
    nextState: PersistedIssuerState,
    change: { kind: 'none' },
  ): boolean | Promise<boolean>;
}

/** A loaded record: the issuer state (object or its JSON text) and an opaque version. */
export interface IssuerStoredRecord {
  state: PersistedIssuerState | string;
  version: unknown;
}

/**
 * The transaction shape: run `fn(state)` (`state` null for a key without a
 * record) inside the host's atomic boundary and apply what it returns —
 * `{ nextState, change }`, or `null`: write nothing. `load` is optional.
 */
export interface IssuerTransactionStore {
  transaction(
    key: string,
    fn: (state: PersistedIssuerState | string | null) => { nextState: PersistedIssuerState; change: { kind: 'none' } } | null,
  ): unknown;
  load?(key: string): IssuerStoredRecord | null | Promise<IssuerStoredRecord | null>;
}

/**
 * Persisted issuer state of one scope (JSON-safe, exact). Format 2, written for random lease ids:
 * `{"v":2,"epoch":"41","lease":{"id":"41.q83vEjRWeJq83vEjRWeJqw","holder":"a","expiresAt":"1700000030000","ttlMs":"30000","requestId":"r-1"}}`
 * or `{"v":2,"epoch":"41","lease":null}`. Format 1 (lease ids derived as
 * `<scope>#<epoch>`, no `id`, no `ttlMs`) is still read, and written back only
 * when its lease is renewed. Anything else is CORRUPT_STATE.
 */
export type PersistedIssuerState = PersistedIssuerStateV1 | PersistedIssuerStateV2;

/** Issuer state format 2: the lease id (random) and the acquiring ttl are stored. */
export interface PersistedIssuerStateV2 {
  v: 2;
  /** The last epoch issued, canonical decimal text ("0" or `[1-9][0-9]*`, ≤ 2^64−1). */
  epoch: string;
  lease: {
    /** The lease id: `"<epoch>.<22 base64url characters>"` (16 random bytes). */
    id: string;
    /** Non-empty holder id. */
    holder: string;
    /** Expiry in host ms, decimal text (≤ 2^53−1). */
    expiresAt: string;
    /** The acquiring request's ttlMs, decimal text (1..2^53−1); renewals keep it. */
    ttlMs: string;
    /** The acquiring request's id, or null. */
    requestId: string | null;
  } | null;
}

/** Issuer state format 1 (before random lease ids): lease ids are derived, `"<scope>#<epoch>"`. */
export interface PersistedIssuerStateV1 {
  v: 1;
  /** The last epoch issued, canonical decimal text ("0" or `[1-9][0-9]*`, ≤ 2^64−1). */
  epoch: string;
  lease: {
    /** Non-empty holder id. */
    holder: string;
    /** Expiry in host ms, decimal text (≤ 2^53−1). */
    expiresAt: string;
    /** The acquiring request's id, or null. */
    requestId: string | null;
  } | null;
}

/** Options of an {@link Issuer}. */
export interface IssuerOptions {
  /**
   * `'number'` (default): epochs up to 2^53−1, so every epoch is a JS number;
   * `'bigint'`: up to 2^64−1 (epochs above 2^53−1 come back as bigints).
   * The next acquisition past the limit throws EPOCH_OVERFLOW — never wraps or rounds.
   */
  epochs?: 'number' | 'bigint';
  /** Prefix of the issuer's store keys; default `'issuer:'` (key = prefix + scope). */
  keyPrefix?: string;
  /** Compare-and-set retries after a lost race; default 8, then COMMIT_CONFLICT. */
  maxRetries?: number;
  /** Give up on a commit/transaction after this many ms: COMMIT_UNKNOWN. Default: wait. */
  commitTimeoutMs?: number;
  /** Give up on a load after this many ms: STORE_ERROR. Default: wait. */
  loadTimeoutMs?: number;
  /**
   * Host time in ms used when a call omits `now` (e.g. `() => Date.now()`). fencegate reads no clock itself.
   * A clock that throws is STORE_ERROR (`callback: 'clock'`, `cause`: its error), like a failing store callback; nothing is read or written.
   */
  clock?: () => number;
}

/** A lease as granted, replayed or renewed. Times are host milliseconds. */
export interface IssuerGrant {
  ok: true;
  code: null;
  scope: string;
  /** The fencing token of this lease: send it with every write (gate.write / establish). */
  epoch: Epoch;
  /**
   * `"<epoch>.<22 base64url characters>"` (at most 43 characters, URL- and
   * header-safe): 128 random bits from the host's CSPRNG, unique per
   * acquisition even when a restored issuer repeats an epoch. With `holder`
   * it is what renew and release check. (`"<scope>#<epoch>"` for a lease
   * granted before random lease ids, state format 1.)
   */
  leaseId: string;
  holder: string;
  /** The lease is live while `now < expiresAt` (ms). */
  expiresAt: number;
  requestId: string | null;
}

/** `acquire` when the scope is held by a live lease (any holder, including the caller). */
export interface LeaseHeld {
  ok: false;
  code: 'LEASE_HELD';
  scope: string;
  /** The live lease's epoch. */
  epoch: Epoch;
  holder: string;
  /** When the live lease ends (ms); retry at or after it. */
  expiresAt: number;
}

/** `renew` of a lease that expired, was released or superseded; or an acquire retried with a request id whose lease expired. */
export interface LeaseExpired {
  ok: false;
  code: 'LEASE_EXPIRED';
  scope: string;
  /** The scope's current epoch. */
  epoch: Epoch;
}

/**
 * `renew` / `release` whose lease id and holder are not both the scope's
 * current lease. Says nothing about that lease (no holder, id, epoch or
 * expiry). Nothing changed.
 */
export interface LeaseNotHeld {
  ok: false;
  code: 'LEASE_NOT_HELD';
  scope: string;
}

/**
 * `acquire` with the request id of the scope's current lease but another
 * holder or another ttlMs: the id was reused for a different request.
 * Nothing changed; use a new request id per acquisition attempt.
 */
export interface RequestIdReused {
  ok: false;
  code: 'REQUEST_ID_REUSED';
  scope: string;
}

/** Arguments of {@link Issuer.acquire}. */
export interface AcquireArgs {
  /** 1..=512 UTF-8 bytes (the resource-key and signed-token scope limit). */
  scope: string;
  /** 1 to 256 UTF-8 bytes: the gate's holder limit, so `establish(key, lease.epoch, { holder: lease.holder })` always takes it. */
  holder: string;
  /** Lease length in ms, a safe integer ≥ 1; `now + ttlMs` must stay ≤ 2^53−1. */
  ttlMs: number;
  /** Host time in ms (safe integer ≥ 0); optional when the issuer has a `clock`. */
  now?: number;
  /**
   * Makes retries idempotent: the same request id with the same holder and
   * ttlMs returns the same lease while it is live; with another holder or
   * ttlMs it answers REQUEST_ID_REUSED (nothing changes). 1..=256 UTF-8 bytes.
   */
  requestId?: string;
}

/** Arguments of {@link Issuer.renew}. */
export interface RenewArgs {
  scope: string;
  /** The lease id the grant named: 1..=128 UTF-8 bytes (an issued id is at most 51). */
  leaseId: string;
  /** 1..=256 UTF-8 bytes. */
  holder: string;
  /** The new length from `now`, in ms (safe integer ≥ 1). */
  ttlMs: number;
  /** Host time in ms; optional when the issuer has a `clock`. */
  now?: number;
}

/** Arguments of {@link Issuer.release}. */
export interface ReleaseArgs {
  scope: string;
  leaseId: string;
  holder: string;
}

/** Arguments of {@link Issuer.raise}. */
export interface RaiseArgs {
  scope: string;
  /** The floor: number or bigint, at most the issuer's limit (else EPOCH_OVERFLOW). */
  atLeast: Epoch;
  /** Host time in ms; optional when the issuer has a `clock`. */
  now?: number;
  /**
   * Revoke a live lease whose epoch is ≤ `atLeast` instead of answering
   * LEASE_HELD: such a lease was handed out again by a restored issuer or is
   * already stale at a resource (see {@link reconcile}). Default false.
   */
  revoke?: boolean;
}

/** What {@link Issuer.release} did (`released: false`: that lease was over already, nothing changed). */
export interface IssuerReleased {
  ok: true;
  code: null;
  scope: string;
  released: boolean;
  /** The scope's current epoch. */
  epoch: Epoch;
}

/** What {@link Issuer.raise} did (`epochBefore === epoch` and `revoked: false`: nothing changed). */
export interface IssuerRaised {
  ok: true;
  code: null;
  scope: string;
  epochBefore: Epoch;
  epoch: Epoch;
  revoked: boolean;
}

/** A lease as stored (see {@link IssuerRecord}). */
export interface IssuerLeaseRecord {
  leaseId: string;
  holder: string;
  /** Live while `now < expiresAt` (ms). */
  expiresAt: number;
  requestId: string | null;
}

/** A scope's issuer record as {@link Issuer.current} reads it: epoch 0 and `lease: null` for a scope never acquired. */
export interface IssuerRecord {
  scope: string;
  epoch: Epoch;
  lease: IssuerLeaseRecord | null;
}

/**
 * A durable, lease-bound epoch issuer (R8) over a host store (default: an
 * in-memory store, not durable). Per scope it hands out epochs 1, 2, 3, … on
 * lease acquisition; each new epoch is committed through the store before it
 * is returned, so after any crash the counter never goes back and never
 * repeats. A holder gets a new epoch only by acquiring again. Issuing does not
 * inform resources: call `gate.establish(key, epoch)` before working.
 *
 * Thrown FencegateError codes (nothing was handed out): INVALID_ARGUMENT (also
 * for an unknown member name in an argument object, e.g. `requestID`),
 * CORRUPT_STATE, EPOCH_OVERFLOW, STORE_ERROR, COMMIT_UNKNOWN, COMMIT_CONFLICT,
 * NOT_INITIALIZED (also: a runtime without `crypto.getRandomValues`, which
 * lease ids are drawn from). After STORE_ERROR or COMMIT_UNKNOWN on acquire,
 * retry with the same `requestId`, holder and ttlMs.
 *
 * Results with `ok: false` (nothing changed): LEASE_HELD, LEASE_EXPIRED,
 * LEASE_NOT_HELD (renew/release), REQUEST_ID_REUSED (acquire).
 */
export class Issuer {
  constructor(store?: IssuerCasStore | IssuerTransactionStore | HostStore<any> | null, options?: IssuerOptions);
  readonly shape: 'compare-and-set' | 'transaction';
  readonly epochs: 'number' | 'bigint';
  /** The store key of `scope`'s record (`keyPrefix + scope`). */
  keyOf(scope: string): string;
  /** A new epoch (previous + 1) and lease when no lease is live at `now`; LEASE_HELD otherwise. */
  acquire(args: AcquireArgs): Promise<(IssuerGrant & { replayed: boolean }) | LeaseHeld | LeaseExpired | RequestIdReused>;
  /**
   * Extends the live lease `leaseId` of `holder` to `now + ttlMs`, same epoch.
   * LEASE_EXPIRED when that lease is over (expired, released, revoked,
   * superseded); LEASE_NOT_HELD when `leaseId` and `holder` are not the
   * scope's current lease. Both change nothing. `leaseId` is 1..=128 UTF-8
   * bytes (an issued id is at most 51), `holder` 1..=256: else INVALID_ARGUMENT.
   */
  renew(args: RenewArgs): Promise<IssuerGrant | LeaseExpired | LeaseNotHeld>;
  /**
   * Frees the scope when `leaseId` and `holder` are its current lease;
   * `released: false` when that lease is over already; LEASE_NOT_HELD when
   * they are not the current lease. Nothing changes unless released.
   */
  release(args: ReleaseArgs): Promise<IssuerReleased | LeaseNotHeld>;
  /**
   * Repair after restoring issuer state from an older copy (R11): lifts the
   * scope's epoch to at least `atLeast` (the highest mark its resources have
   * accepted). LEASE_HELD while a lease is live at `now`. Throws
   * EPOCH_OVERFLOW (`atLeast`, `limit`; nothing changes) when `atLeast` is above
   * the issuer's limit (2^53−1 for `epochs: 'number'`, 2^64−1 for `'bigint'`).
   */
  raise(args: RaiseArgs): Promise<IssuerRaised | LeaseHeld>;
  /** The stored state: epoch 0 and `lease: null` for a scope never acquired. Liveness: compare `expiresAt` with your `now`. */
  current(scope: string): Promise<IssuerRecord>;
}

/**
 * An in-memory host store, compare-and-set shape, for one process (not
 * durable): the default store of `new Issuer()`, and one a {@link Gate} can
 * share with an issuer (issuer records are `issuer:<scope>`, gate records the
 * resource keys). Values are kept by reference, with no codec and no copy:
 * `read()` gives back the very object written, and a later mutation of it by
 * the caller is seen. Fence states are kept as JSON text.
 */
export class MemoryHostStore<V = unknown> implements CasStore<V> {
  load(key: string): StoredRecord<V> | null;
  commit(key: string, expectedVersion: unknown, nextState: PersistedState | PersistedIssuerState, change: Change<V>): boolean;
  /** Keys that have a record, sorted. */
  keys(): string[];
}

// ───────────────────────────── Reconcile ─────────────────────────────

/** Options of {@link reconcile}. */
export interface ReconcileOptions {
  /** The issuer over the issuer's store. */
  issuer: Issuer;
  /** A gate over the resources' store (its store needs `load`). */
  gate: Gate<any>;
  /** The resource keys each scope's tokens are used on: `{ scope: [key, …] }` or `[{ scope, keys }]`. */
  scopes: Record<string, string[]> | { scope: string; keys: string[] }[];
  /** Host time in ms (decides which lease is live); default `Date.now()`. */
  now?: number;
  /** Report what would change, write nothing. Default false. */
  dryRun?: boolean;
}

/** A lease reconcile revoked. */
export interface ReconcileRevoked {
  holder: string;
  epoch: Epoch;
}

/** The issuer's change. */
export interface ReconcileIssuerChange {
  scope: string;
  target: 'issuer';
  /** `raise+revoke`: a live lease that cannot be valid was dropped too. */
  action: 'raise' | 'raise+revoke';
  epochBefore: Epoch;
  epochAfter: Epoch;
  revoked: ReconcileRevoked | null;
}

/** A key raised to the issuer's epoch for the live lease's holder. */
export interface ReconcileEstablish {
  scope: string;
  target: 'resource';
  key: string;
  action: 'establish';
  markBefore: Epoch;
  markAfter: Epoch;
  holder: string;
}

/** A key quarantined at the issuer's epoch (no live lease). */
export interface ReconcileQuarantine {
  scope: string;
  target: 'resource';
  key: string;
  action: 'quarantine';
  markBefore: Epoch;
  markAfter: Epoch;
  floor: Epoch;
}

/** One write reconcile made (or would make, in a dry run). */
export type ReconcileChange = ReconcileIssuerChange | ReconcileEstablish | ReconcileQuarantine;

/** The issuer's lease as reconcile read it (no lease id: it is the lease's credential, and reports get logged). */
export interface ReconcileLease {
  holder: string;
  expiresAt: number;
  /** Live at reconcile's `now`. */
  live: boolean;
}

/** The issuer's record as reconcile read it. */
export interface ReconcileIssuer {
  epoch: Epoch;
  lease: ReconcileLease | null;
}

/**
 * The issuer's current epoch bound to another holder at a resource than its
 * lease names: one epoch handed to two owners. `live`: the lease was live (and was revoked).
 */
export interface ReconcileConflict {
  key: string;
  epoch: Epoch;
  resourceHolder: string;
  leaseHolder: string;
  live: boolean;
}

/** A key reconcile left untouched: its record could not be decoded (CORRUPT_STATE), its mark is above the issuer's limit (EPOCH_OVERFLOW) or its establish was refused. Repair by hand. */
export interface ReconcileError {
  key: string;
  code: ErrorCode;
  message: string;
}

/** What reconcile read and found in one scope. */
export interface ReconcileScope {
  scope: string;
  issuer: ReconcileIssuer;
  keys: FenceRecord[];
  conflicts: ReconcileConflict[];
  errors: ReconcileError[];
}

/** The report of {@link reconcile}. */
export interface ReconcileReport {
  dryRun: boolean;
  /** `changes.length > 0`. */
  changed: boolean;
  changes: ReconcileChange[];
  scopes: ReconcileScope[];
  /** How many keys, over all scopes, could not be read or repaired (`scopes[i].errors`). */
  errors: number;
}

/**
 * Repairs issuer and resource state after a restore (R11, docs/restore.md),
 * only ever raising: the issuer's epoch is raised to the largest mark of the
 * scope's keys (a live lease that cannot be valid is revoked); a key whose
 * mark is below the issuer's epoch E is established at E for the live lease's
 * holder, or quarantined at E when no lease is live. Idempotent: a second run
 * reports no changes.
 * @throws FencegateError INVALID_ARGUMENT (also an unknown option name such as `dryrun`: nothing is read or
 *   written), STORE_ERROR, COMMIT_UNKNOWN, COMMIT_CONFLICT, CORRUPT_STATE (issuer record).
 */
export function reconcile(options: ReconcileOptions): Promise<ReconcileReport>;
