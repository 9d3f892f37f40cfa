// The lease-bound epoch issuer over a host store.
//
// One issuer operation runs through the store driver (driver.mjs): load the
// scope's issuer record → compute the transition in Wasm (`__issuerStep`:
// decode strictly, decide, next state) → when the state changes, have the host
// commit it (compare-and-set or inside its transaction) → only then return the
// result. THE RULE: no epoch, lease or
// renewal leaves this module before the state that records it is committed
// (DESIGN R8). A failed or unknown commit throws; the caller never sees an
// epoch that is not durable, and the next acquisition after a failed commit
// computes the same next number from the unchanged stored state.
//
// Host store shapes (the same as the gate's, see driver.mjs):
//
//   compare-and-set   load(key) → { state, version } | null
//                     commit(key, expectedVersion, nextState, change) → true | false
//   transaction       transaction(key, fn): run `fn(state)` inside the host's own
//                     atomic boundary; apply `{ nextState, change }` or nothing (null)
//
// The issuer's change is always `{ kind: 'none' }`: only the state is written,
// as the JSON text Rust's encoder wrote (a store that takes the object form
// gets it parsed from that text, as the gate's stores do).
// Its records live under their own keys, `issuer:<scope>` by default
// (`keyPrefix`), so one store can hold gate records and issuer records.
import * as wasm from '../dist/fencegate_issuer.js';
import { FencegateError } from './errors.mjs';
import { randomBytes, TABLES, loadIssuerSide } from './runtime.mjs';
import { invalid, checkReady, checkOptions, messageOf, wellFormed, describe, stateTextOf, checkStateText, MAX_KEY_BYTES, utf8Length, cut } from './common.mjs';
import { StoreDriver, driverOptions, checkStore, stepOf } from './driver.mjs';
import { MemoryHostStore } from './memory.mjs';

const NONE = Object.freeze({ kind: 'none' });

/**
 * What the caller of each operation can do after a commit whose outcome is
 * unknown: each names only what that operation takes (renew and release have
 * no requestId). `acquire` has two: with and without a requestId.
 */
const RETRY_HINTS = {
  acquire: 'retry acquire with the same requestId: it returns the lease if it was committed, or grants the same next epoch if not',
  acquireNoId: 'no requestId was given, so a retry cannot tell a committed acquire from a new one: read current(scope) (a lease naming your holder was committed), and pass a requestId to acquire so a retry is safe',
  renew: 'retry renew with the same leaseId, holder, ttlMs and now: a renewal that landed renews to the same expiry again',
  release: 'retry release with the same leaseId and holder: if the first attempt landed, the retry answers released: false; the lease is over once one answers ok',
  raise: 'retry raise with the same atLeast: a raise never lowers an epoch, so one that landed answers the same epoch again',
};

function retryHint(op) {
  return RETRY_HINTS[op] ?? 'read current(scope) to see whether it was committed, then retry';
}

function storeError(scope, key, callback, cause, op) {
  const hint = callback === 'load' ? 'nothing was written' : `it may or may not have written; ${retryHint(op)}`;
  return new FencegateError('STORE_ERROR', `host store ${callback}(${JSON.stringify(key)}) failed (${hint}): ${messageOf(cause)}`, {
    scope,
    key,
    callback,
    cause,
    // a store that refuses to run (the Redis eviction check) says why
    ...(cause instanceof FencegateError && cause.code === 'STORE_ERROR' && cause.reason !== undefined ? { reason: cause.reason } : {}),
  });
}

function unknownError(scope, key, callback, cause, why, op) {
  return new FencegateError(
    'COMMIT_UNKNOWN',
    `host store ${callback}(${JSON.stringify(key)}) may or may not have committed (${why}); no result was returned; ${retryHint(op)}`,
    { scope, key, callback, cause },
  );
}

/** The stored issuer state of a loaded record: null = no record. */
function stateOf({ scope, key }, record) {
  if (record === null || record === undefined) return null;
  if (typeof record !== 'object') {
    throw storeError(scope, key, 'load', new TypeError('load must return null or an object { state, version }'));
  }
  let state;
  try {
    state = record.state;
  } catch (cause) {
    throw storeError(scope, key, 'load', cause); // a getter (a lazy column) that threw: nothing decided
  }
  if (state === null || state === undefined) {
    throw new FencegateError(
      'CORRUPT_STATE',
      `the stored issuer record ${JSON.stringify(key)} has no state (load returns null for a key without a record)`,
      { scope, key, state },
    );
  }
  return state;
}

/** How the store driver reports an issuer's failures (see driver.mjs); the context is `{ scope, key }`. */
const FAULTS = {
  store: ({ scope, key, op }, callback, cause) => storeError(scope, key, callback, cause, op),
  unknown: ({ scope, key, op }, callback, cause, why) => unknownError(scope, key, callback, cause, why, op),
  conflict({ scope, key }, callback, attempts, cause) {
    const how = callback === 'commit' ? 'compare-and-set' : 'the host transaction';
    return new FencegateError(
      'COMMIT_CONFLICT',
      `${how} on ${JSON.stringify(key)} conflicted ${attempts} times${cause === undefined ? '' : ` (${messageOf(cause)})`}; nothing was issued by this call`,
      { scope, key, attempts, ...(cause === undefined ? {} : { cause }) },
    );
  },
  record: stateOf,
};

/**
 * The stored state as the JSON text the Wasm decoder reads (null: no record,
 * answered as undefined; a state of undefined is CORRUPT_STATE: a transaction
 * store's misnamed column must not read as a new scope). The object form is read field by field (`stateTextOf`: NaN,
 * undefined members, toJSON and accessors are CORRUPT_STATE, never silently
 * changed by JSON.stringify); which fields it has is for the decoder to check.
 */
function stateText(scope, key, state) {
  if (state === null) return undefined;
  const what = `the stored issuer state of ${JSON.stringify(scope)}`;
  if (state === undefined) {
    throw new FencegateError('CORRUPT_STATE', `${what} is undefined: a store passes null for a scope without a record`, { scope, key });
  }
  if (typeof state === 'string') return checkStateText(state, what, { scope, key });
  if (typeof state !== 'object') {
    throw new FencegateError('CORRUPT_STATE', `${what} is not a JSON object or its text`, { scope, key, state });
  }
  return stateTextOf(state, what, { scope, key });
}

/**
 * One transition on one scope's stored state, decided in Wasm (`__issuerStep`:
 * the stored record, the operation and its options in — typed, in the order
 * of Rust's `StepOptions` — and one object out: the result, `ok`/`code`
 * decided in Rust, and the JSON text of the next record, written by Rust's
 * encoder): the driver step (`stepOf`, the gate's too) whose `nextText` goes
 * to the stores that take text as it is, and whose object form `next` is
 * parsed only when a store reads it (nextText null: write nothing).
 */
function step(scope, key, state, o) {
  const text = stateText(scope, key, state);
  try {
    const { result, next } = wasm.__issuerStep(text, scope, o.op, o.holder, o.leaseId, o.ttlMs ?? 0, o.now ?? 0, o.requestId, o.bigint === true, o.atLeast, o.random);
    return stepOf(result, next, NONE);
  } catch (e) {
    if (e instanceof FencegateError && e.key === undefined) e.key = key;
    throw e;
  }
}

// The random keys of lease ids come from the host's CSPRNG (`randomBytes`:
// crypto.getRandomValues), drawn KEYS_PER_DRAW keys at a time and handed out
// once each, in order: one draw per lease cost about as much as the rest of an
// in-memory acquire (docs/decisions/issuer-step.md). Node's crypto.randomUUID
// pools its randomness the same way.
const KEYS_PER_DRAW = 256;
let keyPool = null;
let keyAt = 0;

/** The next unused `leaseKeyBytes` (16) random bytes of the pool. */
function leaseKey() {
  const n = TABLES.leaseKeyBytes;
  if (keyPool === null || keyAt + n > keyPool.length) {
    keyPool = randomBytes(n * KEYS_PER_DRAW);
    keyAt = 0;
  }
  keyAt += n;
  return keyPool.subarray(keyAt - n, keyAt);
}

// Text limits, all in UTF-8 bytes (what Wasm and the stores see), as Rust
// defines them (`__tables`):
//   scope      maxKeyBytes (512): the resource-key and signed-token scope limit
//   holder     maxHolderBytes (256): the gate's holder limit, so a lease's
//              holder can always be bound at a resource
//              (`establish(key, lease.epoch, { holder: lease.holder })`)
//   requestId  maxRequestIdBytes (256): kept in the issuer record while its lease lives
//   leaseId    maxLeaseIdBytes (128): the signed-token lease-id limit; an
//              issued id is at most 51 bytes, so a longer one names no lease
const LIMIT_NAMES = { scope: 'maxKeyBytes', holder: 'maxHolderBytes', requestId: 'maxRequestIdBytes', leaseId: 'maxLeaseIdBytes' };

/**
 * Throws INVALID_ARGUMENT unless `scope` is a non-empty, well-formed string of
 * at most MAX_KEY_BYTES (512) UTF-8 bytes: the signed-token scope limit, and
 * the resource-key limit (the default scope of a gate is the key). @internal
 */
export function checkScope(scope) {
  return checkText('scope', scope);
}

/** `value` when it is a non-empty, well-formed string of at most its limit in UTF-8 bytes; else INVALID_ARGUMENT (a long value cut to 40 characters, its length in `<name>Bytes`). */
function checkText(name, value) {
  const max = name === 'scope' ? MAX_KEY_BYTES : TABLES[LIMIT_NAMES[name]];
  // Well-formed (no lone surrogates: UTF-8 in Wasm would make two strings one) and bounded.
  if (!wellFormed(value) || value === '') {
    throw invalid(`a ${name} is 1 to ${max} UTF-8 bytes of well-formed text, got ${describe(value)}`, { [name]: value });
  }
  if (value.length > max / 3 && utf8Length(value, max) > max) {
    throw invalid(`a ${name} is 1 to ${max} UTF-8 bytes of text; ${JSON.stringify(cut(value))} is ${utf8Length(value, Infinity)} bytes`, {
      [name]: cut(value),
      [`${name}Bytes`]: utf8Length(value, Infinity),
    });
  }
  return value;
}

function checkMs(name, value) {
  // Values are checked exactly (safe integer ≥ 0) in Wasm; here only the type.
  if (typeof value !== 'number') throw invalid(`${name} must be a number of milliseconds`, { [name]: value });
  return value;
}

/** The members each method's argument object may have (any other name is INVALID_ARGUMENT, before anything is read). */
const ARGS = {
  acquire: ['scope', 'holder', 'ttlMs', 'now', 'requestId'],
  renew: ['scope', 'leaseId', 'holder', 'ttlMs', 'now'],
  release: ['scope', 'leaseId', 'holder'],
  raise: ['scope', 'atLeast', 'now', 'revoke'],
};

function argsObject(args, method) {
  if (args === null || typeof args !== 'object') throw invalid(`${method} takes one object argument`, { args });
  return checkOptions(args, ARGS[method], method);
}

function parseOptions(options) {
  if (options === undefined || options === null) options = {};
  if (typeof options !== 'object') throw invalid('options must be an object', { options });
  options = checkOptions(options, ['epochs', 'keyPrefix', 'maxRetries', 'commitTimeoutMs', 'loadTimeoutMs', 'clock'], 'Issuer');
  const epochs = options.epochs ?? 'number';
  if (epochs !== 'number' && epochs !== 'bigint') {
    throw invalid(`epochs must be 'number' or 'bigint', got ${describe(epochs)}`, { epochs });
  }
  const keyPrefix = options.keyPrefix ?? 'issuer:';
  if (typeof keyPrefix !== 'string') throw invalid('keyPrefix must be a string', { keyPrefix });
  const driver = driverOptions(options, ['commitTimeoutMs', 'loadTimeoutMs']);
  const clock = options.clock;
  if (clock !== undefined && typeof clock !== 'function') throw invalid('clock must be a function returning ms', { clock });
  return { epochs, keyPrefix, driver, clock };
}

/**
 * A durable, lease-bound epoch issuer (DESIGN R8). Per scope it hands out
 * epochs 1, 2, 3, … on lease acquisition and persists each one through the
 * host store before returning it. Every method returns a Promise.
 *
 * Results (not thrown): `{ ok: true, … }`, or `{ ok: false, code: 'LEASE_HELD'
 * | 'LEASE_EXPIRED' | 'LEASE_NOT_HELD' | 'REQUEST_ID_REUSED', … }`. Thrown FencegateErrors: INVALID_ARGUMENT,
 * CORRUPT_STATE, EPOCH_OVERFLOW, STORE_ERROR, COMMIT_UNKNOWN, COMMIT_CONFLICT;
 * nothing was handed out when one is thrown.
 */
export class Issuer {
  #driver;
  #o;

  constructor(store, options) {
    checkReady();
    if (store === undefined || store === null) store = new MemoryHostStore();
    if (typeof store !== 'object' && typeof store !== 'function') throw invalid('an Issuer needs a host store object', { store });
    checkStore(store);
    this.#o = parseOptions(options);
    // inline: the steps of a synchronous store (the in-memory one) run without promise hops
    this.#driver = new StoreDriver(store, { ...this.#o.driver, inline: true }, FAULTS);
    // The issuer side's module: loaded here on Node and workerd; in a browser
    // the first operation awaits it (and reports a failure to load).
    loadIssuerSide()?.catch(() => {});
  }

  /** `'transaction'` or `'compare-and-set'`: the callback shape this issuer drives. */
  get shape() {
    return this.#driver.shape;
  }

  /** `'number'` (epochs up to 2^53−1) or `'bigint'` (up to 2^64−1). */
  get epochs() {
    return this.#o.epochs;
  }

  /** The host-store key of `scope`'s issuer record. */
  keyOf(scope) {
    checkScope(scope);
    return this.#o.keyPrefix + scope;
  }

  #now(now) {
    if (now !== undefined) return now;
    if (this.#o.clock !== undefined) {
      try {
        return this.#o.clock();
      } catch (e) {
        // A host callback that fails: STORE_ERROR with `cause`, as a failing store callback is; nothing was read or written.
        throw new FencegateError('STORE_ERROR', `the Issuer's clock option threw (nothing was read or written): ${messageOf(e)}`, { callback: 'clock', cause: e });
      }
    }
    throw invalid('now (host time in ms) is required: pass it, or give the Issuer a clock option', { now });
  }

  /**
   * Acquires `scope` for `holder` for `ttlMs` from `now`: a new epoch (the
   * previous + 1) and a new lease id (`<epoch>.<128 random bits>`) when no
   * lease is live, committed before they are returned. Retrying with the same
   * `requestId` and the same holder and ttlMs (after a lost reply,
   * STORE_ERROR or COMMIT_UNKNOWN) returns the same lease, `replayed: true`,
   * while it is live; the same `requestId` with other arguments answers
   * REQUEST_ID_REUSED and changes nothing.
   */
  async acquire(args) {
    const { scope, holder, ttlMs, now, requestId } = argsObject(args, 'acquire');
    checkScope(scope);
    return this.#apply(scope, {
      op: 'acquire',
      holder: checkText('holder', holder),
      ttlMs: checkMs('ttlMs', ttlMs),
      now: checkMs('now', this.#now(now)),
      requestId: requestId === undefined || requestId === null ? undefined : checkText('requestId', requestId),
      bigint: this.#o.epochs === 'bigint',
      random: leaseKey(), // the random part of a lease id (128 bits)
    });
  }

  /**
   * Extends the live lease `leaseId` held by `holder` to `now + ttlMs`; its
   * epoch stays. LEASE_EXPIRED when that lease is over; LEASE_NOT_HELD when
   * the id and holder are not the scope's current lease.
   */
  async renew(args) {
    const { scope, leaseId, holder, ttlMs, now } = argsObject(args, 'renew');
    checkScope(scope);
    return this.#apply(scope, {
      op: 'renew',
      leaseId: checkText('leaseId', leaseId),
      holder: checkText('holder', holder),
      ttlMs: checkMs('ttlMs', ttlMs),
      now: checkMs('now', this.#now(now)),
    });
  }

  /**
   * Frees `scope` when `leaseId` held by `holder` is its current lease;
   * `released: false` when that lease is over already; LEASE_NOT_HELD when
   * the id and holder are not the scope's current lease (nothing changes).
   */
  async release(args) {
    const { scope, leaseId, holder } = argsObject(args, 'release');
    checkScope(scope);
    return this.#apply(scope, {
      op: 'release',
      leaseId: checkText('leaseId', leaseId),
      holder: checkText('holder', holder),
    });
  }

  /**
   * Repair (R11): lifts `scope`'s epoch to at least `atLeast` (e.g. the
   * highest mark its resources accepted) after the issuer state was restored
   * from an older copy. LEASE_HELD while a lease is live at `now` — unless
   * `revoke: true` and that lease's epoch is ≤ `atLeast`: such a lease was
   * handed out again by a restored issuer (or is already stale at a resource),
   * so it is dropped (`revoked: true`) and the next acquisition issues a
   * larger epoch. `reconcile()` decides when to revoke.
   */
  async raise(args) {
    const { scope, atLeast, now, revoke } = argsObject(args, 'raise');
    checkScope(scope);
    if (revoke !== undefined && typeof revoke !== 'boolean') throw invalid('revoke must be a boolean', { revoke });
    const op = revoke === true ? 'raiseRevoking' : 'raise';
    // `bigint`: the issuer's epoch limit, which a raise may not pass (EPOCH_OVERFLOW, nothing changes)
    return this.#apply(scope, { op, now: checkMs('now', this.#now(now)), atLeast, bigint: this.#o.epochs === 'bigint' });
  }

  /** `{ scope, epoch, lease: { leaseId, holder, expiresAt, requestId } | null }` as stored (epoch 0: never acquired). */
  async current(scope) {
    const key = this.keyOf(scope);
    const state = await this.#driver.state({ scope, key }, key);
    const loading = loadIssuerSide();
    if (loading !== null) await loading;
    try {
      return wasm.__issuerDecode(stateText(scope, key, state), scope);
    } catch (e) {
      if (e instanceof FencegateError && e.key === undefined) e.key = key;
      throw e;
    }
  }

  #apply(scope, op) {
    const loading = loadIssuerSide();
    if (loading !== null) return loading.then(() => this.#apply(scope, op));
    const key = this.#o.keyPrefix + scope;
    // `op`: which retry advice a failure gives (RETRY_HINTS).
    const hint = op.op === 'acquire' && op.requestId === undefined ? 'acquireNoId' : op.op === 'raiseRevoking' ? 'raise' : op.op;
    return this.#driver.run({ scope, key, op: hint }, key, (state) => step(scope, key, state, op));
  }
}
