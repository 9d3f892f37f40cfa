// The lease-bound epoch issuer over a host store.
//
// One issuer operation is: load the scope's issuer record → compute the
// transition in Wasm (`__issuerStep`: decode strictly, decide, next state) →
// when the state changes, have the host commit it (compare-and-set or inside
// its transaction) → only then return the result. THE RULE: no epoch, lease or
// renewal leaves this module before the state that records it is committed
// (DESIGN R8). A failed or unknown commit throws; the caller never sees an
// epoch that is not durable, and the next acquisition after a failed commit
// computes the same next number from the unchanged stored state.
//
// Host store shapes (the same as the gate's, see gate.mjs on the `stores` branch):
//
//   compare-and-set   load(key) → { state, version } | null
//                     commit(key, expectedVersion, nextState, change) → true | false
//   transaction       transaction(key, fn): run `fn(state)` inside the host's own
//                     atomic boundary; apply `{ nextState, change }` or nothing (null)
//
// The issuer's change is always `{ kind: 'none' }`: only the state is written.
// Its records live under their own keys, `issuer:<scope>` by default
// (`keyPrefix`), so one store can hold gate records and issuer records.
import * as wasm from '../dist/fencegate.js';
import { FencegateError } from './errors.mjs';
import { ready, randomBytes } from './runtime.mjs';
import { invalid, checkReady, checkOptions, messageOf, marksCommitUnknown, TIMED_OUT, withTimeout, wellFormed, MAX_TIMER_MS, describe, stateTextOf, checkStateText, MAX_KEY_BYTES, utf8Length, cut } from './common.mjs';

const DEFAULT_MAX_RETRIES = 8;
const NONE = Object.freeze({ kind: 'none' });

const RETRY_HINT = 'retry acquire with the same requestId: it returns the lease if it was committed, or grants the same next epoch if not';

function storeError(scope, key, callback, cause) {
  const hint = callback === 'load' ? 'nothing was written' : `it may or may not have written; ${RETRY_HINT}`;
  return new FencegateError('STORE_ERROR', `host store ${callback}(${JSON.stringify(key)}) failed (${hint}): ${messageOf(cause)}`, {
    scope,
    key,
    callback,
    cause,
    // a store that refuses to run (the Redis eviction check) says why
    ...(cause instanceof FencegateError && cause.code === 'STORE_ERROR' && cause.reason !== undefined ? { reason: cause.reason } : {}),
  });
}

function unknownError(scope, key, callback, cause, why) {
  return new FencegateError(
    'COMMIT_UNKNOWN',
    `host store ${callback}(${JSON.stringify(key)}) may or may not have committed (${why}); no result was returned; ${RETRY_HINT}`,
    { scope, key, callback, cause },
  );
}

/** The stored issuer state of a loaded record: null = no record. */
function stateOf(scope, key, record) {
  if (record === null || record === undefined) return null;
  if (typeof record !== 'object') {
    throw storeError(scope, key, 'load', new TypeError('load must return null or an object { state, version }'));
  }
  if (record.state === null || record.state === undefined) {
    throw new FencegateError(
      'CORRUPT_STATE',
      `the stored issuer record ${JSON.stringify(key)} has no state (load returns null for a key without a record)`,
      { scope, key, state: record.state },
    );
  }
  return record.state;
}

const OPS = { acquire: 0, renew: 1, release: 2, raise: 3, raiseRevoking: 4 };
const KINDS = ['granted', 'held', 'renewed', 'expired', 'released', 'raised', 'not-held', 'request-id-reused'];
const NO_BYTES = new Uint8Array(0);
/** Random bytes in a lease id (128 bits), drawn from the host's CSPRNG per acquire. */
const LEASE_KEY_BYTES = 16;

/**
 * The stored state as the JSON text the Wasm decoder reads (undefined: no
 * record). The object form is read field by field (`stateTextOf`: NaN,
 * undefined members, toJSON and accessors are CORRUPT_STATE, never silently
 * changed by JSON.stringify); which fields it has is for the decoder to check.
 */
function stateText(scope, key, state) {
  if (state === null || state === undefined) return undefined;
  const what = `the stored issuer state of ${JSON.stringify(scope)}`;
  if (typeof state === 'string') return checkStateText(state, what, { scope, key });
  if (typeof state !== 'object') {
    throw new FencegateError('CORRUPT_STATE', `${what} is not a JSON object or its text`, { scope, key, state });
  }
  return stateTextOf(state, what, { scope, key });
}

/** Shapes the Wasm answer `[kind, epoch, expiresAt, holder, requestId, flag, leaseId|epochBefore, nextState]`. */
function shape(scope, a) {
  const kind = KINDS[a[0]];
  let result;
  switch (kind) {
    case 'granted':
      result = { ok: true, code: null, scope, epoch: a[1], leaseId: a[6], holder: a[3], expiresAt: a[2], requestId: a[4], replayed: a[5] };
      break;
    case 'renewed':
      result = { ok: true, code: null, scope, epoch: a[1], leaseId: a[6], holder: a[3], expiresAt: a[2], requestId: a[4] };
      break;
    case 'held':
      result = { ok: false, code: 'LEASE_HELD', scope, epoch: a[1], holder: a[3], expiresAt: a[2] };
      break;
    case 'expired':
      result = { ok: false, code: 'LEASE_EXPIRED', scope, epoch: a[1] };
      break;
    case 'released':
      result = { ok: true, code: null, scope, released: a[5], epoch: a[1] };
      break;
    case 'not-held':
      // Nothing about the lease: not its holder, id, epoch or expiry.
      result = { ok: false, code: 'LEASE_NOT_HELD', scope };
      break;
    case 'request-id-reused':
      result = { ok: false, code: 'REQUEST_ID_REUSED', scope };
      break;
    default:
      result = { ok: true, code: null, scope, epochBefore: a[6], epoch: a[1], revoked: a[5] };
  }
  return { result, nextState: a[7] === null ? null : JSON.parse(a[7]) };
}

/** One transition on one scope's stored state: `{ result, nextState }` (nextState null: write nothing). */
function step(scope, key, state, op) {
  const text = stateText(scope, key, state);
  try {
    return shape(
      scope,
      wasm.__issuerStep(text, op.code, scope, op.holder ?? '', op.leaseId ?? '', op.ttlMs, op.now, op.requestId, op.bigint, op.atLeast, op.random ?? NO_BYTES),
    );
  } catch (e) {
    if (e instanceof FencegateError && e.key === undefined) e.key = key;
    throw e;
  }
}

/** The longest scope, holder, request id or lease id accepted, in UTF-16 code units. */
const MAX_TEXT = 1024;

/**
 * Throws INVALID_ARGUMENT unless `scope` is a non-empty, well-formed string of
 * at most MAX_KEY_BYTES (512) UTF-8 bytes: the signed-token scope limit, and
 * the resource-key limit (the default scope of a gate is the key). @internal
 */
export function checkScope(scope) {
  if (wellFormed(scope) && scope.length > MAX_KEY_BYTES / 3 && utf8Length(scope, MAX_KEY_BYTES) > MAX_KEY_BYTES) {
    throw invalid(`a scope is at most ${MAX_KEY_BYTES} UTF-8 bytes; ${JSON.stringify(cut(scope))} is longer`, {
      scope: cut(scope),
      scopeBytes: utf8Length(scope, Infinity),
    });
  }
  checkString('scope', scope);
}

function checkString(name, value) {
  // Well-formed (no lone surrogates: UTF-8 in Wasm would make two strings one) and bounded.
  if (!wellFormed(value) || value === '' || value.length > MAX_TEXT) {
    throw invalid(`${name} must be a non-empty, well-formed string of at most ${MAX_TEXT} characters`, { [name]: value });
  }
  return value;
}

function checkMs(name, value) {
  // Values are checked exactly (safe integer ≥ 0) in Wasm; here only the type.
  if (typeof value !== 'number') throw invalid(`${name} must be a number of milliseconds`, { [name]: value });
  return value;
}

function argsObject(args, method) {
  if (args === null || typeof args !== 'object') throw invalid(`${method} takes one object argument`, { args });
  return args;
}

/**
 * An in-memory host store (compare-and-set shape) for one process: the default
 * store of `new Issuer()`, and a store a `Gate` can share with it (the
 * issuer's records are `issuer:<scope>`, the gate's are the resource keys).
 * Not durable: it lives as long as the process. Records keep the state as
 * JSON text and the value by reference (no codec, no copy: a later mutation of
 * the written object is seen; docs/stores.md "Values").
 */
export class MemoryHostStore {
  #records = new Map();

  load(key) {
    const r = this.#records.get(key);
    return r === undefined ? null : { state: r.state, version: r.version, value: r.value };
  }

  commit(key, expectedVersion, nextState, change) {
    const r = this.#records.get(key);
    if ((r === undefined ? null : r.version) !== expectedVersion) return false;
    const next = { state: JSON.stringify(nextState), version: (r === undefined ? 0 : r.version) + 1, value: r?.value };
    if (change?.kind === 'set') next.value = change.value;
    else if (change?.kind === 'delete') next.value = undefined;
    this.#records.set(key, next);
    return true;
  }

  /** Keys that have a record, sorted. */
  keys() {
    return [...this.#records.keys()].sort();
  }
}

function parseOptions(options) {
  if (options === undefined || options === null) options = {};
  if (typeof options !== 'object') throw invalid('options must be an object', { options });
  checkOptions(options, ['epochs', 'keyPrefix', 'maxRetries', 'commitTimeoutMs', 'loadTimeoutMs', 'clock'], 'Issuer');
  const epochs = options.epochs ?? 'number';
  if (epochs !== 'number' && epochs !== 'bigint') {
    throw invalid(`epochs must be 'number' or 'bigint', got ${describe(epochs)}`, { epochs });
  }
  const keyPrefix = options.keyPrefix ?? 'issuer:';
  if (typeof keyPrefix !== 'string') throw invalid('keyPrefix must be a string', { keyPrefix });
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  if (!Number.isSafeInteger(maxRetries) || maxRetries < 0) {
    throw invalid('maxRetries must be a safe integer ≥ 0', { maxRetries });
  }
  for (const name of ['commitTimeoutMs', 'loadTimeoutMs']) {
    const t = options[name];
    if (t !== undefined && !(typeof t === 'number' && t > 0 && t <= MAX_TIMER_MS)) {
      throw invalid(`${name} must be a positive number of milliseconds, at most ${MAX_TIMER_MS}`, { [name]: t });
    }
  }
  const clock = options.clock;
  if (clock !== undefined && typeof clock !== 'function') throw invalid('clock must be a function returning ms', { clock });
  return { epochs, keyPrefix, maxRetries, commitTimeoutMs: options.commitTimeoutMs, loadTimeoutMs: options.loadTimeoutMs, clock };
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
  #store;
  #transactional;
  #o;

  constructor(store, options) {
    checkReady();
    if (store === undefined || store === null) store = new MemoryHostStore();
    if (typeof store !== 'object' && typeof store !== 'function') throw invalid('an Issuer needs a host store object', { store });
    this.#transactional = typeof store.transaction === 'function';
    if (!this.#transactional && (typeof store.load !== 'function' || typeof store.commit !== 'function')) {
      throw invalid('a host store has transaction(key, fn), or load(key) and commit(key, expectedVersion, nextState, change)', {
        store,
      });
    }
    this.#store = store;
    this.#o = parseOptions(options);
  }

  /** `'transaction'` or `'compare-and-set'`: the callback shape this issuer drives. */
  get shape() {
    return this.#transactional ? 'transaction' : 'compare-and-set';
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
    if (this.#o.clock !== undefined) return this.#o.clock();
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
      code: OPS.acquire,
      holder: checkString('holder', holder),
      ttlMs: checkMs('ttlMs', ttlMs),
      now: checkMs('now', this.#now(now)),
      requestId: requestId === undefined || requestId === null ? undefined : checkString('requestId', requestId),
      bigint: this.#o.epochs === 'bigint',
      random: randomBytes(LEASE_KEY_BYTES),
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
      code: OPS.renew,
      leaseId: checkString('leaseId', leaseId),
      holder: checkString('holder', holder),
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
      code: OPS.release,
      leaseId: checkString('leaseId', leaseId),
      holder: checkString('holder', holder),
      ttlMs: 0,
      now: 0,
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
    const code = revoke === true ? OPS.raiseRevoking : OPS.raise;
    return this.#apply(scope, { code, ttlMs: 0, now: checkMs('now', this.#now(now)), atLeast });
  }

  /** `{ scope, epoch, lease: { leaseId, holder, expiresAt, requestId } | null }` as stored (epoch 0: never acquired). */
  async current(scope) {
    const key = this.keyOf(scope);
    const state = this.#transactional && typeof this.#store.load !== 'function' ? await this.#readViaTransaction(scope, key) : stateOf(scope, key, await this.#load(scope, key));
    let a;
    try {
      a = wasm.__issuerDecode(stateText(scope, key, state), scope);
    } catch (e) {
      if (e instanceof FencegateError && e.key === undefined) e.key = key;
      throw e;
    }
    const lease = a[1] === null ? null : { leaseId: a[4], holder: a[1], expiresAt: a[2], requestId: a[3] };
    return { scope, epoch: a[0], lease };
  }

  async #readViaTransaction(scope, key) {
    let seen = null;
    try {
      await withTimeout(
        this.#store.transaction(key, (state) => {
          seen = state === undefined ? null : state;
          return null;
        }),
        this.#o.loadTimeoutMs,
      );
    } catch (cause) {
      throw storeError(scope, key, 'transaction', cause);
    }
    return seen;
  }

  async #load(scope, key) {
    let record;
    try {
      record = await withTimeout(this.#store.load(key), this.#o.loadTimeoutMs);
    } catch (cause) {
      throw storeError(scope, key, 'load', cause);
    }
    if (record === TIMED_OUT) throw storeError(scope, key, 'load', new Error(`no answer within ${this.#o.loadTimeoutMs} ms`));
    return record;
  }

  #apply(scope, op) {
    const key = this.#o.keyPrefix + scope;
    return this.#transactional ? this.#viaTransaction(scope, key, op) : this.#viaCas(scope, key, op);
  }

  async #viaCas(scope, key, op) {
    const store = this.#store;
    const timeout = this.#o.commitTimeoutMs;
    for (let attempt = 0; attempt <= this.#o.maxRetries; attempt++) {
      const record = await this.#load(scope, key);
      const { result, nextState } = step(scope, key, stateOf(scope, key, record), op);
      if (nextState === null) return result; // nothing changes: nothing to persist
      const expected = record === null || record === undefined ? null : record.version ?? null;
      let committed;
      try {
        committed = await withTimeout(store.commit(key, expected, nextState, NONE), timeout);
      } catch (cause) {
        if (marksCommitUnknown(cause)) throw unknownError(scope, key, 'commit', cause, messageOf(cause));
        throw storeError(scope, key, 'commit', cause);
      }
      if (committed === TIMED_OUT) throw unknownError(scope, key, 'commit', undefined, `no answer within ${timeout} ms`);
      // Committed: only now may the result (an epoch, a lease) leave.
      if (committed === true) return result;
      if (committed !== false) {
        throw unknownError(scope, key, 'commit', undefined, `commit returned ${describe(committed)}, not true or false`);
      }
      // Lost the compare-and-set: load and decide again.
    }
    throw new FencegateError(
      'COMMIT_CONFLICT',
      `compare-and-set on ${JSON.stringify(key)} conflicted ${this.#o.maxRetries + 1} times; nothing was issued by this call`,
      { scope, key, attempts: this.#o.maxRetries + 1 },
    );
  }

  async #viaTransaction(scope, key, op) {
    let outcome = null;
    let ownError = null;
    const fn = (state) => {
      outcome = null;
      ownError = null;
      try {
        const s = step(scope, key, state, op);
        outcome = s;
        return s.nextState === null ? null : { nextState: s.nextState, change: NONE };
      } catch (e) {
        ownError = e;
        throw e;
      }
    };
    const timeout = this.#o.commitTimeoutMs;
    let answer;
    try {
      answer = await withTimeout(this.#store.transaction(key, fn), timeout);
    } catch (cause) {
      if (ownError !== null) throw ownError; // our own error inside: the host rolled back
      if (marksCommitUnknown(cause)) throw unknownError(scope, key, 'transaction', cause, messageOf(cause));
      throw storeError(scope, key, 'transaction', cause);
    }
    if (answer === TIMED_OUT) throw unknownError(scope, key, 'transaction', undefined, `no answer within ${timeout} ms`);
    if (ownError !== null) throw ownError;
    if (outcome === null) throw storeError(scope, key, 'transaction', new Error('the host transaction returned without calling fn'));
    // The transaction has returned, so its write (if any) is committed: only now may the result leave.
    return outcome.result;
  }
}
