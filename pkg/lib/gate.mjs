// The host-store protocol: fencegate decides, the host's storage commits.
//
// A `Gate` runs one fenced operation as: load the key's stored state → decide
// in Wasm (decode, compare, next state) → on reject return at
// once, writing nothing → have the host commit the next state together with
// the data change in one atomic step → on a compare-and-set conflict load and
// decide again (bounded) → a verdict shaped like MemoryGate's.
//
// Host callbacks may be synchronous or return Promises. Two shapes:
//
//   compare-and-set   load(key) → { state, version, value } | null
//                     commit(key, expectedVersion, nextState, change) → true | false
//   transaction       transaction(key, fn): run `fn(state)` inside the host's own
//                     atomic boundary and apply what it returns
//                     (`{ nextState, change }`, or null: write nothing);
//                     `load(key)` is optional, used by `read()`.
//
// A change is `{ kind: 'set', value }`, `{ kind: 'delete' }` (clear the value,
// keep the fence record) or `{ kind: 'none' }` (establish: only the state).
import * as wasm from '../dist/fencegate.js';
import { FencegateError } from './errors.mjs';
import { ready, CODES } from './runtime.mjs';
import { policyFromOptions, claimsOf, ceilingOf, addPolicyKey, retirePolicyKey, bounded } from './signed.mjs';
import { shape, metaOf, windowOf, auditOf, Observer } from './verdict.mjs';
import { MAX_U64, canonical, invalid, checkReady, checkKey, checkOptions, messageOf, marksCommitUnknown, TIMED_OUT, withTimeout, MAX_TIMER_MS, GATE_OPTIONS, describe, listOf, stateTextOf, checkStateText } from './common.mjs';

// Code indexes (status - 2) of the two token codes, whose verdicts carry `token: null`.
const MISSING = 0;
const MALFORMED = 1;

const DEFAULT_MAX_RETRIES = 8;
const NONE = Object.freeze({ kind: 'none' });
const DELETE = Object.freeze({ kind: 'delete' });

function storeError(key, callback, cause) {
  return new FencegateError('STORE_ERROR', `host store ${callback}(${JSON.stringify(key)}) failed: ${messageOf(cause)}`, {
    key,
    callback,
    cause,
  });
}

/**
 * A coded error a store callback threw on purpose, passed on as it is: a value
 * its codec refused (INVALID_ARGUMENT, nothing written) or a store that refuses
 * to run (STORE_ERROR with a `reason`, e.g. a Redis eviction policy).
 */
function ownStoreError(key, callback, cause) {
  if (!(cause instanceof FencegateError) || (cause.code !== 'INVALID_ARGUMENT' && cause.code !== 'STORE_ERROR')) return null;
  if (cause.key === undefined) cause.key = key;
  if (cause.code === 'STORE_ERROR' && cause.callback === undefined) cause.callback = callback;
  return cause;
}

/**
 * The change of a write: `{ kind: 'set', value }`, plus `encoded` (the value's
 * stored text) when the store encodes values itself (`encodeValue`, the
 * shipped adapters). Encoding first refuses a value the codec cannot keep
 * exactly before the store is touched: INVALID_ARGUMENT with a path, nothing written.
 */
function setChange(store, key, value) {
  if (typeof store.encodeValue !== 'function') return { kind: 'set', value };
  let encoded;
  try {
    encoded = store.encodeValue(value);
  } catch (e) {
    if (e instanceof FencegateError) {
      if (e.key === undefined) e.key = key;
      throw e;
    }
    throw invalid(`value: the store's encode refused it: ${messageOf(e)}`, { key, cause: e });
  }
  if (typeof encoded !== 'string') {
    throw invalid(`value: the store's encode must return a string, got ${typeof encoded}`, { key });
  }
  return { kind: 'set', value, encoded };
}

/** Whether a host error says the transaction did not commit and may simply be run again (`{ conflict: true }`). */
function marksConflict(cause) {
  return cause !== null && typeof cause === 'object' && cause.conflict === true;
}

function conflictError(key, attempts, cause) {
  return new FencegateError(
    'COMMIT_CONFLICT',
    `the host transaction on ${JSON.stringify(key)} conflicted ${attempts} times (${messageOf(cause)}); nothing was written by this call`,
    { key, attempts, cause },
  );
}

function unknownError(key, callback, cause, why) {
  return new FencegateError(
    'COMMIT_UNKNOWN',
    `host store ${callback}(${JSON.stringify(key)}) may or may not have committed (${why}); ` +
      'retrying the same operation with the same token is safe',
    { key, callback, cause },
  );
}

function verdictOf(key, d) {
  const v = shape(key, d.status, d.token, d.markBefore, d.markAfter);
  if (d.claims !== undefined) v.claims = d.claims;
  return v;
}

/** The next state to commit after a decision that applies: format v4 text from Wasm when the key has a holder, operation ids or a quarantine, else v1. */
function nextState(status, markAfter) {
  if (status >= 2) return null;
  const text = wasm.__next_text();
  return text === undefined ? { v: 1, mark: String(markAfter) } : JSON.parse(text);
}

/**
 * Decodes stored state in Wasm (null = no record) and remembers its mark there;
 * throws CORRUPT_STATE. Text goes to the decoder as is (lone surrogates
 * refused: Wasm would see them altered); the object form is first read field by
 * field into JSON text by `stateTextOf` (no JSON.stringify: NaN, undefined
 * members and toJSON are refused, not silently changed), so both forms meet the
 * same decoder.
 */
function loadState(key, state) {
  try {
    if (state === null) wasm.__state_none();
    else if (typeof state === 'string') wasm.__state_text(checkStateText(state, `the stored state of ${JSON.stringify(key)}`, { key }));
    else if (typeof state === 'object' || typeof state === 'function') {
      const text = stateTextOf(state, `the stored state of ${JSON.stringify(key)}`, { key });
      try {
        wasm.__state_text(text);
      } catch (e) {
        if (e instanceof FencegateError) e.state = state; // the value the store gave, not our text of it
        throw e;
      }
    } else wasm.__state_any(state);
  } catch (e) {
    if (e instanceof FencegateError && e.key === undefined) e.key = key;
    throw e;
  }
}

/**
 * The decision, in Wasm: decode the stored state, compare, and give the next
 * state to commit (format v1 with the exact `markAfter`), or null when rejected.
 * Numbers and bigints reach Wasm as plain numbers; no strings are built there.
 */
function decide(key, state, token, establish, strict, policy, meta, window) {
  loadState(key, state);
  const flags = (establish ? 1 : 0) | (strict ? 2 : 0);
  if (meta !== null) wasm.__meta(meta.opId, meta.holder, window, meta.fingerprint);
  let status;
  if (policy !== null) {
    try {
      return decidePolicy(token, flags, policy);
    } catch (e) {
      wasm.__meta(undefined, undefined, 64, undefined); // never leave metadata for a later decision
      throw e;
    }
  }
  if (typeof token === 'number') status = wasm.__decide_n(token, flags);
  else if (typeof token === 'bigint' && token >= 0n && token <= MAX_U64) status = wasm.__decide_b(token, flags);
  else status = wasm.__decide_any(token, flags);
  const before = wasm.__last_before_n();
  const after = wasm.__last_after_n();
  const markBefore = before >= 0 ? before : wasm.__last_before_b();
  const markAfter = after >= 0 ? after : wasm.__last_after_b();
  const badToken = status === 2 + MISSING || status === 2 + MALFORMED;
  return {
    status,
    token: badToken ? null : canonical(token),
    markBefore,
    markAfter,
    next: nextState(status, markAfter),
  };
}

/**
 * `decide` under a gate policy (docs/signed-tokens.md): provenance, then the
 * higher-epoch policy, then the fence check, against the state just loaded.
 * `policy` is `{ p, scope, ceiling }` prepared by `Gate.#run`.
 */
function decidePolicy(token, flags, { p, scope, ceiling }) {
  if (ceiling !== undefined) p.raw.set_ceiling(ceiling);
  const number = typeof token === 'number';
  const status = number ? p.raw.decide_host_n(token, flags) : p.raw.decide_host_any(scope, bounded(token), flags);
  const before = wasm.__last_before_n();
  const after = wasm.__last_after_n();
  const markBefore = before >= 0 ? before : wasm.__last_before_b();
  const markAfter = after >= 0 ? after : wasm.__last_after_b();
  return {
    status,
    token: p.raw.last_token(),
    claims: number ? null : claimsOf(p.raw),
    markBefore,
    markAfter,
    next: nextState(status, markAfter),
  };
}

/** Mark, holder and quarantine floor of the state last decoded by `loadState`. */
function storedFields() {
  const m = wasm.__stored_mark_n();
  const q = wasm.__stored_quarantine_n();
  return {
    mark: m >= 0 ? m : wasm.__stored_mark_b(),
    holder: wasm.__stored_holder() ?? null,
    quarantine: q === -1 ? null : q >= 0 ? q : wasm.__stored_quarantine_b(),
  };
}

/** The stored state of a loaded record: null = no fence record; a record must carry its state. */
function stateOf(key, record) {
  if (record === null || record === undefined) return null;
  if (typeof record !== 'object') {
    throw storeError(key, 'load', new TypeError('load must return null or an object { state, version, value }'));
  }
  if (record.state === null || record.state === undefined) {
    throw new FencegateError(
      'CORRUPT_STATE',
      `the stored record of ${JSON.stringify(key)} has no fence state (load returns null for a key without a record)`,
      { key, state: record.state },
    );
  }
  return record.state;
}

function parseOptions(options) {
  if (options === undefined || options === null) options = {};
  if (typeof options !== 'object') throw invalid('options must be an object', { options });
  checkOptions(options, [...GATE_OPTIONS, 'maxRetries', 'commitTimeoutMs'], 'Gate');
  const p = options.sameEpoch;
  if (p !== undefined && p !== 'allow' && p !== 'strict') {
    throw invalid(`sameEpoch must be 'allow' or 'strict', got ${describe(p)}`, { sameEpoch: p });
  }
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  if (!Number.isSafeInteger(maxRetries) || maxRetries < 0) {
    throw invalid('maxRetries must be a safe integer ≥ 0', { maxRetries });
  }
  const t = options.commitTimeoutMs;
  if (t !== undefined && !(typeof t === 'number' && t > 0 && t <= MAX_TIMER_MS)) {
    throw invalid(`commitTimeoutMs must be a positive number of milliseconds, at most ${MAX_TIMER_MS}`, { commitTimeoutMs: t });
  }
  return { strict: p === 'strict', maxRetries, commitTimeoutMs: t };
}

/**
 * A gate over a host store: the host keeps state and value; fencegate decides.
 * Every method returns a Promise. Rejections resolve to a verdict with
 * `ok: false` and change nothing. Failures reject with a FencegateError:
 * CORRUPT_STATE (nothing written), STORE_ERROR (a callback threw; `cause`),
 * COMMIT_UNKNOWN (the host may have committed; retry the same operation with
 * the same token), COMMIT_CONFLICT (compare-and-set lost `maxRetries + 1` times).
 */
export class Gate {
  #store;
  #strict;
  #maxRetries;
  #commitTimeoutMs;
  #transactional;
  #policy;
  #window;
  #observer;

  constructor(store, options) {
    checkReady();
    if (store === null || typeof store !== 'object') throw invalid('a Gate needs a host store object', { store });
    const o = parseOptions(options);
    this.#policy = policyFromOptions(options);
    this.#window = windowOf(options);
    this.#observer = new Observer(auditOf(options));
    this.#transactional = typeof store.transaction === 'function';
    if (!this.#transactional && (typeof store.load !== 'function' || typeof store.commit !== 'function')) {
      throw invalid('a host store has transaction(key, fn), or load(key) and commit(key, expectedVersion, nextState, change)', {
        store,
      });
    }
    this.#store = store;
    this.#strict = o.strict;
    this.#maxRetries = o.maxRetries;
    this.#commitTimeoutMs = o.commitTimeoutMs;
  }

  /** The same-epoch policy: `'allow'` or `'strict'`. */
  get sameEpoch() {
    return this.#strict ? 'strict' : 'allow';
  }

  /** `'transaction'` or `'compare-and-set'`: the callback shape this gate drives. */
  get shape() {
    return this.#transactional ? 'transaction' : 'compare-and-set';
  }

  /** Fenced write: the host stores `value` with the next state on advance/accept. */
  async write(key, token, value, options) {
    checkKey(key);
    if (value === undefined) throw invalid('value must not be undefined; use delete() to clear a value', { key });
    const meta = metaOf(options);
    return this.#run(key, token, false, setChange(this.#store, key, value), meta, 'write');
  }

  /** Raises the mark to `token` with no data change (a new owner's barrier). */
  async establish(key, token, options) {
    checkKey(key);
    return this.#run(key, token, true, NONE, metaOf(options), 'establish');
  }

  /**
   * Fenced delete (maintenance): clears the key's value on advance/accept. The
   * fence record stays, so an older epoch cannot write afterwards.
   */
  async delete(key, token, options) {
    checkKey(key);
    return this.#run(key, token, false, DELETE, metaOf(options), 'delete');
  }

  /** Fenced delete of several keys, one after another; each key is fenced on its own. */
  async deleteMany(keys, token) {
    // Every key is checked (holes of a sparse array included) before the first
    // delete, and the checked copy is what is used.
    const list = listOf(keys, 'keys', checkKey);
    const verdicts = [];
    for (const key of list) verdicts.push(await this.#run(key, token, false, DELETE, null, 'delete'));
    return verdicts;
  }

  /**
   * Key rotation on a live gate: adds a verification key (`secret`,
   * `{ hmac }` or `{ ed25519 }`) under `kid`. INVALID_ARGUMENT for a bad,
   * duplicate or retired id, or on a gate created without policy options.
   */
  addKey(kid, key) {
    addPolicyKey(this.#policy, kid, key);
  }

  /** Key rotation on a live gate: retires `kid` (its key is dropped; tokens naming it get KEY_RETIRED). */
  retireKey(kid) {
    retirePolicyKey(this.#policy, kid);
  }

  /** `{ mark, value, hasValue }` of `key` through the host's `load`. Throws CORRUPT_STATE, STORE_ERROR. */
  async read(key) {
    checkKey(key);
    const record = await this.#load(key);
    const state = stateOf(key, record);
    loadState(key, state);
    const m = wasm.__stored_mark_n();
    const mark = m >= 0 ? m : wasm.__stored_mark_b();
    const hasValue = record !== null && record !== undefined && record.value !== undefined;
    return { mark, value: hasValue ? record.value : undefined, hasValue };
  }

  /** The high-water mark of `key` (0 = no fence record). */
  async mark(key) {
    return (await this.read(key)).mark;
  }

  /**
   * The fence record of `key` through the host's `load`: `{ key, exists, mark,
   * holder, quarantine }` (`exists: false` and mark 0 when the key has no
   * record; `holder` the holder bound to the current epoch or null;
   * `quarantine` the floor or null). Throws CORRUPT_STATE, STORE_ERROR.
   */
  async inspect(key) {
    checkKey(key);
    const record = await this.#load(key);
    const state = stateOf(key, record);
    loadState(key, state);
    return { key, exists: state !== null, ...storedFields() };
  }

  /**
   * Quarantine (issue 9, after a restore or a lost state): a fenced
   * maintenance operation that raises the mark to `max(mark, floor)` (never
   * lowers it) and makes the key refuse every write and establish with an
   * epoch ≤ that floor (`QUARANTINED`) until one above it arrives, which
   * advances the mark and lifts the quarantine. `floor` is 0 or an epoch.
   * Resolves to `{ key, ok: true, changed, floor, markBefore, markAfter }`;
   * `changed: false` (nothing written) when already quarantined at that floor
   * or above. Throws CORRUPT_STATE, STORE_ERROR, COMMIT_UNKNOWN,
   * COMMIT_CONFLICT, INVALID_ARGUMENT.
   */
  async quarantine(key, floor) {
    checkKey(key);
    return this.#maintain(key, (state) => {
      loadState(key, state);
      const text = wasm.__quarantine(floor);
      const before = wasm.__last_before_n();
      const after = wasm.__last_after_n();
      const markBefore = before >= 0 ? before : wasm.__last_before_b();
      const markAfter = after >= 0 ? after : wasm.__last_after_b();
      return {
        result: { key, ok: true, changed: text !== undefined, floor: markAfter, markBefore, markAfter },
        next: text === undefined ? null : JSON.parse(text),
      };
    });
  }

  /** Runs a maintenance step `fn(state) → { result, next }` under the store's atomicity (no data change). */
  async #maintain(key, fn) {
    if (this.#transactional) {
      let out = null;
      let ownError = null;
      let answer;
      for (let attempt = 0; ; attempt++) {
        try {
          answer = await withTimeout(
            this.#store.transaction(key, (state) => {
              out = null;
              ownError = null;
              try {
                out = fn(state === undefined ? null : state);
              } catch (e) {
                ownError = e;
                throw e;
              }
              return out.next === null ? null : { nextState: out.next, change: NONE };
            }),
            this.#commitTimeoutMs,
          );
          break;
        } catch (cause) {
          if (ownError !== null) throw ownError;
          if (marksCommitUnknown(cause)) throw unknownError(key, 'transaction', cause, messageOf(cause));
          if (marksConflict(cause)) {
            if (attempt < this.#maxRetries) continue;
            throw conflictError(key, this.#maxRetries + 1, cause);
          }
          throw ownStoreError(key, 'transaction', cause) ?? storeError(key, 'transaction', cause);
        }
      }
      if (answer === TIMED_OUT) throw unknownError(key, 'transaction', undefined, `no answer within ${this.#commitTimeoutMs} ms`);
      if (ownError !== null) throw ownError;
      if (out === null) throw storeError(key, 'transaction', new Error('the host transaction returned without calling fn'));
      return out.result;
    }
    for (let attempt = 0; attempt <= this.#maxRetries; attempt++) {
      const record = await this.#load(key);
      const out = fn(stateOf(key, record));
      if (out.next === null) return out.result;
      const expected = record === null || record === undefined ? null : record.version ?? null;
      let committed;
      try {
        committed = await withTimeout(this.#store.commit(key, expected, out.next, NONE), this.#commitTimeoutMs);
      } catch (cause) {
        if (marksCommitUnknown(cause)) throw unknownError(key, 'commit', cause, messageOf(cause));
        throw ownStoreError(key, 'commit', cause) ?? storeError(key, 'commit', cause);
      }
      if (committed === TIMED_OUT) throw unknownError(key, 'commit', undefined, `no answer within ${this.#commitTimeoutMs} ms`);
      if (committed === true) return out.result;
      if (committed !== false) throw unknownError(key, 'commit', undefined, `commit returned ${describe(committed)}, not true or false`);
    }
    throw new FencegateError(
      'COMMIT_CONFLICT',
      `compare-and-set on ${JSON.stringify(key)} conflicted ${this.#maxRetries + 1} times; nothing was written by this call`,
      { key, attempts: this.#maxRetries + 1 },
    );
  }

  async #load(key) {
    if (typeof this.#store.load !== 'function') {
      throw invalid('this host store has no load(key); reads need one', { key });
    }
    try {
      return await this.#store.load(key);
    } catch (cause) {
      throw ownStoreError(key, 'load', cause) ?? storeError(key, 'load', cause);
    }
  }

  /** Counters per outcome and code since the gate was made: `{ total, advance, accept, reject, duplicate, auditErrors, codes }`. */
  counters() {
    return this.#observer.counters();
  }

  async #run(key, token, establish, change, meta, operation) {
    // time in the host's commit/transaction callbacks, for the audit record (null: none ran)
    const timing = this.#observer.timed ? { started: performance.now(), commitMs: null } : null;
    const v = await this.#decideAndCommit(key, token, establish, change, meta, timing);
    this.#observer.record(v, operation, meta, timing?.started ?? null, timing?.commitMs ?? null);
    return v;
  }

  async #decideAndCommit(key, token, establish, change, meta, timing) {
    let policy = null;
    if (this.#policy !== null) {
      // Callbacks of the policy run before the store is touched; the ceiling is
      // set again right before each (synchronous) decision.
      const p = this.#policy;
      const ceiling = await ceilingOf(p);
      policy = { p, scope: typeof token === 'number' ? '' : p.scopeOf(key), ceiling };
    }
    return this.#transactional
      ? this.#viaTransaction(key, token, establish, change, policy, meta, timing)
      : this.#viaCas(key, token, establish, change, policy, meta, timing);
  }

  async #viaCas(key, token, establish, change, policy, meta, timing) {
    const store = this.#store;
    for (let attempt = 0; attempt <= this.#maxRetries; attempt++) {
      const record = await this.#load(key);
      const d = decide(key, stateOf(key, record), token, establish, this.#strict, policy, meta, this.#window);
      if (d.next === null) return verdictOf(key, d);
      const expected = record === null || record === undefined ? null : record.version ?? null;
      let committed;
      const t0 = timing === null ? 0 : performance.now();
      try {
        committed = await withTimeout(store.commit(key, expected, d.next, change), this.#commitTimeoutMs);
      } catch (cause) {
        if (marksCommitUnknown(cause)) throw unknownError(key, 'commit', cause, messageOf(cause));
        throw ownStoreError(key, 'commit', cause) ?? storeError(key, 'commit', cause);
      }
      if (committed === TIMED_OUT) {
        throw unknownError(key, 'commit', undefined, `no answer within ${this.#commitTimeoutMs} ms`);
      }
      if (timing !== null) timing.commitMs = (timing.commitMs ?? 0) + (performance.now() - t0);
      if (committed === true) return verdictOf(key, d);
      if (committed !== false) {
        // Never treat anything but `true` as success; but a commit that answered
        // something else may have written, so it is not a plain failure either.
        throw unknownError(key, 'commit', undefined, `commit returned ${describe(committed)}, not true or false`);
      }
    }
    throw new FencegateError(
      'COMMIT_CONFLICT',
      `compare-and-set on ${JSON.stringify(key)} conflicted ${this.#maxRetries + 1} times; nothing was written by this call`,
      { key, attempts: this.#maxRetries + 1 },
    );
  }

  async #viaTransaction(key, token, establish, change, policy, meta, timing) {
    const strict = this.#strict;
    const window = this.#window;
    let decision = null;
    let ownError = null;
    const fn = (state) => {
      decision = null;
      ownError = null;
      try {
        // Inside a transaction the host passes only the state: null/undefined = no record.
        const d = decide(key, state === undefined ? null : state, token, establish, strict, policy, meta, window);
        decision = d;
        return d.next === null ? null : { nextState: d.next, change };
      } catch (e) {
        ownError = e;
        throw e;
      }
    };
    let result;
    const t0 = timing === null ? 0 : performance.now();
    for (let attempt = 0; ; attempt++) {
      try {
        result = await withTimeout(this.#store.transaction(key, fn), this.#commitTimeoutMs);
        break;
      } catch (cause) {
        if (ownError !== null) throw ownError; // CORRUPT_STATE from inside: the host rolled back
        if (marksCommitUnknown(cause)) throw unknownError(key, 'transaction', cause, messageOf(cause));
        // `conflict: true`: the host's "retry the transaction" class (SQLITE_BUSY, a
        // serialization failure), nothing committed; retried like a lost compare-and-set.
        if (marksConflict(cause)) {
          if (attempt < this.#maxRetries) continue;
          throw conflictError(key, this.#maxRetries + 1, cause);
        }
        throw ownStoreError(key, 'transaction', cause) ?? storeError(key, 'transaction', cause);
      }
    }
    if (timing !== null) timing.commitMs = performance.now() - t0;
    if (result === TIMED_OUT) {
      throw unknownError(key, 'transaction', undefined, `no answer within ${this.#commitTimeoutMs} ms`);
    }
    if (ownError !== null) throw ownError;
    if (decision === null) {
      throw storeError(key, 'transaction', new Error('the host transaction returned without calling fn'));
    }
    return verdictOf(key, decision);
  }
}
