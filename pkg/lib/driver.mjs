// The host-store protocol, written once: fencegate decides, the host's storage
// commits. `Gate` (write, establish, delete, quarantine), `Issuer` and, through
// them, `reconcile` run every step through a `StoreDriver`:
//
//   compare-and-set   load(key) → record → decide(state) → nothing to write:
//                     done; else commit(key, record.version, nextState, change)
//                     → true: done · false: load and decide again (bounded)
//   transaction       transaction(key, fn): the host runs `fn(state)` inside its
//                     own atomic boundary and applies what it returns
//                     (`{ nextState, change }`, or null: write nothing);
//                     a host error marked `conflict: true` runs it again (bounded).
//                     A store with textTransaction(key, fn) instead gets
//                     `{ nextStateText, change }` and answers `{ version }` of
//                     what it wrote (null: nothing), which the state cache keeps.
//   own data          fencedTransaction(key, step) / fenceIn(handle, key, step):
//                     the fence step and the caller's own statements in one
//                     transaction (`transact`, `fenceIn` below;
//                     docs/decisions/own-data-transactions.md)
//
// The state cache (pkg/lib/state-cache.mjs, docs/decisions/state-cache.md) is a
// strategy around this loop, for a store with `commitFrom`: a cached step decides
// from the last known state and commits with it as the precondition, with no load.
//
// Failures: a callback that throws is STORE_ERROR; one that may have committed
// (`commitUnknown: true`, a timeout, a commit answering neither true nor false)
// is COMMIT_UNKNOWN; `maxRetries + 1` lost rounds are COMMIT_CONFLICT; an error
// of the decision itself (CORRUPT_STATE, …) is thrown as it is, nothing written.
// What each failure says (message, details) is the caller's (`faults`): a gate
// and an issuer describe the same failure to different readers.
import { invalid, isThenable, marksCommitUnknown, TIMED_OUT, withTimeout, describe, messageOf, MAX_TIMER_MS, versionOf, answeredVersion } from './common.mjs';
import { CachedSteps } from './state-cache.mjs';

const DEFAULT_MAX_RETRIES = 8;
/** Default `stateCache`: keys whose last known state a driver keeps (0: none). */
export const DEFAULT_STATE_CACHE = 1024;
/** The largest `stateCache`. */
export const MAX_STATE_CACHE = 2 ** 24;

/** The driver options of `options` (already an object): `{ maxRetries, commitTimeoutMs, loadTimeoutMs, stateCache }`; throws INVALID_ARGUMENT. */
export function driverOptions(options, timeouts) {
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  if (!Number.isSafeInteger(maxRetries) || maxRetries < 0) {
    throw invalid('maxRetries must be a safe integer ≥ 0', { maxRetries });
  }
  for (const name of timeouts) {
    const t = options[name];
    if (t !== undefined && !(typeof t === 'number' && t > 0 && t <= MAX_TIMER_MS)) {
      throw invalid(`${name} must be a positive number of milliseconds, at most ${MAX_TIMER_MS}`, { [name]: t });
    }
  }
  const stateCache = options.stateCache ?? 0;
  if (!Number.isSafeInteger(stateCache) || stateCache < 0 || stateCache > MAX_STATE_CACHE) {
    throw invalid(`stateCache must be an integer from 0 (off) to ${MAX_STATE_CACHE}`, { stateCache });
  }
  return { maxRetries, commitTimeoutMs: options.commitTimeoutMs, loadTimeoutMs: options.loadTimeoutMs, stateCache };
}

/** Whether a host error says the transaction did not commit and may simply be run again (`{ conflict: true }`). */
function marksConflict(cause) {
  if (cause === null || typeof cause !== 'object') return false;
  try {
    return cause.conflict === true;
  } catch {
    return false; // a getter that throws says nothing: a plain STORE_ERROR
  }
}

const idle = () => {};

/**
 * A driver step (`StoreDriver.run`'s `decide` answer) whose next state is the
 * text `nextText` (null: nothing to write): stores that take text (the
 * shipped SQL, Redis and etcd stores, `commitFrom`) get the text as Rust
 * wrote it (the gate's next state, the issuer's next record); the object form `next` (what `commit` and a host transaction's
 * `nextState` hand to user stores) is parsed only when something reads it.
 */
export function stepOf(result, nextText, change) {
  return new Step(result, nextText, change);
}

/**
 * A driver step: a class with `next` on its prototype, so a step costs one
 * small object per write (an object literal with its own getter costs a
 * closure, its context and an accessor pair each time).
 */
class Step {
  constructor(result, nextText, change) {
    this.result = result;
    this.nextText = nextText;
    this.change = change;
    this.parsed = undefined;
  }

  /** The next state's object form (null: nothing to write), parsed from `nextText` on first read. */
  get next() {
    if (this.nextText === null) return null;
    return (this.parsed ??= JSON.parse(this.nextText));
  }
}

/** Whether a step writes nothing (a refusal, a duplicate, an unchanged state). */
const writesNothing = (d) => d.nextText === null;

/**
 * The `decide(state)` an own-data store step calls: the decision of `state`
 * (undefined/null: no fence row), reported to `seen` (or its error to
 * `failed`, then thrown), answered as the plan to write
 * (`{ nextStateText, change }`) or null (refused: write nothing).
 */
function planner(decide, seen, failed) {
  return (state) => {
    let d;
    try {
      d = decide(state);
    } catch (e) {
      failed(e);
      throw e;
    }
    seen(d);
    return writesNothing(d) ? null : { nextStateText: d.nextText, change: d.change };
  };
}

/** Waits until `p` settles, never throwing (its failure is its own caller's). */
const settled = (p) => p.then(idle, idle);

const noAnswer = (ms) => `no answer within ${ms} ms`;

/** Throws INVALID_ARGUMENT unless `store` has one of the two callback shapes. */
export function checkStore(store) {
  if (typeof store.transaction !== 'function' && typeof store.textTransaction !== 'function' && (typeof store.load !== 'function' || typeof store.commit !== 'function')) {
    throw invalid('a host store has transaction(key, fn), or load(key) and commit(key, expectedVersion, nextState, change)', {
      store,
    });
  }
}

/**
 * Runs decisions against one host store. `faults` builds the errors, each
 * given the caller's context `ctx` (whatever the caller passed to `run`):
 *
 *   store(ctx, callback, cause)            STORE_ERROR (or a coded error the store threw on purpose)
 *   unknown(ctx, callback, cause, why)     COMMIT_UNKNOWN
 *   conflict(ctx, callback, attempts, cause)  COMMIT_CONFLICT
 *   record(ctx, record)                    the stored state of a loaded record (null: none), or throws
 */
export class StoreDriver {
  #store;
  #transactional;
  /** A store with the verb `textTransaction` (its state as text in, `{ version }` out): driven through it. */
  #takesText = false;
  #faults;
  #maxRetries;
  #commitTimeoutMs;
  #loadTimeoutMs;
  /** key → the slot `{ p }` of the newest step on that key (its promise); removed when that step ends last. */
  #queues = new Map();
  /** The state cache strategy (`CachedSteps`); null: no cache. */
  #cached = null;
  /** Its entries (`StateCache`); null: no cache. */
  #cache = null;
  /**
   * `inline` (the Issuer's): a store that answers synchronously is not awaited,
   * so its step runs load → decide → commit in one turn, without promise hops.
   * Off for the Gate: its conformance cases interleave concurrent writers at
   * those awaits even on a synchronous store (a lying host must be caught).
   */
  #inline = false;

  constructor(store, { maxRetries, commitTimeoutMs, loadTimeoutMs, stateCache = 0, inline = false }, faults) {
    checkStore(store);
    this.#inline = inline;
    this.#takesText = typeof store.textTransaction === 'function';
    this.#transactional = this.#takesText || typeof store.transaction === 'function';
    // Only a store that has `commitFrom` (its commit checks version and state
    // text, and answers the new version) gets a cache: a compare-and-set store, or a
    // transaction store that answers the version it wrote (`textTransaction`).
    this.#store = store;
    this.#faults = faults;
    this.#maxRetries = maxRetries;
    this.#commitTimeoutMs = commitTimeoutMs;
    this.#loadTimeoutMs = loadTimeoutMs;
    if (stateCache > 0 && (!this.#transactional || this.#takesText) && typeof store.commitFrom === 'function') {
      this.#cached = new CachedSteps(stateCache, {
        store, faults, maxRetries, commitTimeoutMs, transactional: this.#transactional,
        load: (ctx, key) => this.load(ctx, key),
        release: (key, slot) => this.#release(key, slot),
        plain: (ctx, key, decide, timing) => this.#viaCas(ctx, key, decide, timing),
        transaction: (ctx, key, decide, timing, slot) => this.#viaTransaction(ctx, key, decide, timing, null, slot, this.#cache),
      });
      this.#cache = this.#cached.entries;
    }
  }

  /** `'transaction'` or `'compare-and-set'`: the callback shape this driver runs. */
  get shape() {
    return this.#transactional ? 'transaction' : 'compare-and-set';
  }

  /** Whether this driver keeps a state cache (a `commitFrom` store and `stateCache > 0`). */
  get caching() {
    return this.#cache !== null;
  }

  /** Drops the cached state of `key`, or of every key when `key` is undefined. */
  forget(key) {
    this.#cache?.forget(key);
  }

  /** Whether the store has `load(key)` (a transaction store may not). */
  get canLoad() {
    return typeof this.#store.load === 'function';
  }

  /**
   * The host's `load(key)` under the load timeout; STORE_ERROR when it throws or does not answer.
   * (`pending`: that load's promise, already started by `#loadNow`.)
   */
  async load(ctx, key, pending = undefined) {
    let record;
    try {
      record = await withTimeout(pending ?? this.#store.load(key), this.#loadTimeoutMs);
    } catch (cause) {
      throw this.#faults.store(ctx, 'load', cause);
    }
    if (record === TIMED_OUT) throw this.#faults.store(ctx, 'load', new Error(noAnswer(this.#loadTimeoutMs)));
    return record;
  }

  /**
   * `load` without a promise hop for a store that answers synchronously (the
   * in-memory store), when `inline`: the record itself, or else `load`'s promise of it.
   */
  #loadNow(ctx, key) {
    if (!this.#inline) return this.load(ctx, key);
    let record;
    try {
      record = this.#store.load(key);
    } catch (cause) {
      throw this.#faults.store(ctx, 'load', cause);
    }
    return isThenable(record) ? this.load(ctx, key, record) : record;
  }

  /** The stored state of `key` (null: no record): through `load`, or, without one, a transaction that writes nothing. */
  async state(ctx, key) {
    if (this.canLoad) {
      let record = this.#loadNow(ctx, key);
      if (isThenable(record)) record = await record;
      return this.#faults.record(ctx, record);
    }
    let seen = null;
    let answer;
    try {
      answer = await withTimeout(
        this.#store.transaction(key, (state) => {
          seen = state;
          return null;
        }),
        this.#loadTimeoutMs,
      );
    } catch (cause) {
      throw this.#faults.store(ctx, 'transaction', cause);
    }
    if (answer === TIMED_OUT) throw this.#faults.store(ctx, 'transaction', new Error(noAnswer(this.#loadTimeoutMs)));
    return seen;
  }

  /**
   * One fenced step on `key`: `decide(state)` returns `{ result, next, change }`
   * (`next` null: write nothing); resolves to the `result` of the decision whose
   * next state was committed (or that needed no write). `timing`, when given,
   * gets `commitMs`: the time spent in the host's commit or transaction.
   * `cached`: the step may start from the key's cached state (writes; not
   * quarantine): a decision that writes is committed with that state as its
   * precondition; one that writes nothing is made again on a fresh load.
   */
  run(ctx, key, decide, timing = null, cached = false) {
    // One driver, one key: steps run one after another in arrival order (a
    // promise chain per key), so a driver never loses a compare-and-set or a
    // transaction to itself; other keys stay concurrent, other processes still
    // conflict and retry. A step that fails (throws, rejects) still ends its
    // turn; a step that hangs holds the key until its timeout (commitTimeoutMs,
    // loadTimeoutMs), so set those with a store that can hang.
    const queues = this.#queues;
    const before = queues.get(key);
    // One slot per step; the key's entry is the newest slot, removed by its own
    // step when it ends last (the queues do not outlive their work). An idle key
    // starts at once: the step runs synchronously up to its first await.
    const slot = { p: null };
    queues.set(key, slot);
    const prev = before === undefined ? null : before.p;
    // (each step waits for `prev` and releases `slot` itself: no extra async layer per step)
    slot.p = this.#cached !== null
      ? this.#cached.run(ctx, key, decide, timing, cached, prev, slot)
      : this.#transactional
        ? this.#viaTransaction(ctx, key, decide, timing, prev, slot)
        : this.#viaCas(ctx, key, decide, timing, prev, slot);
    return slot.p;
  }

  /**
   * One fenced transaction with the caller's own statements on `key`
   * (docs/decisions/own-data-transactions.md): the store's
   * `fencedTransaction(key, step)` opens one transaction of its engine, reads
   * (or, from `step.cached`, conditionally updates) the fence state, calls
   * `step.decide(state)` — null: refused, it rolls back and the caller's
   * `body` never runs — writes the next fence state, then `step.run(handle)`
   * with the engine's transaction handle, and commits both together.
   * Resolves to `{ result, ran, value }`: the last decision's result
   * (a verdict), whether the body ran in the committed attempt, and what it
   * returned. A host error marked `conflict: true` (a serialization failure,
   * a deadlock, SQLITE_BUSY) runs the whole transaction again, body included
   * (bounded by `maxRetries`); the body's own error (any other) is `bodyFailed`.
   */
  transact(ctx, key, decide, body, bodyFailed) {
    const queues = this.#queues;
    const before = queues.get(key);
    const slot = { p: null };
    queues.set(key, slot);
    const prev = before === undefined ? null : before.p;
    slot.p = this.#viaFencedTransaction(ctx, key, decide, body, bodyFailed, prev, slot);
    return slot.p;
  }

  async #viaFencedTransaction(ctx, key, decide, body, bodyFailed, before, slot) {
    if (before !== null) await settled(before);
    try {
      const faults = this.#faults;
      const ms = this.#commitTimeoutMs;
      const cache = this.#cache;
      for (let attempt = 0; ; attempt++) {
        let decision = null;
        let ownError = null;
        let bodyError = null;
        let ran = false;
        let value;
        const entry = cache === null || attempt > 0 ? undefined : cache.get(key);
        const step = {
          /** The driver's last known `{ state, version }` of the key, or null: a store may start with a conditional update from it. */
          cached: entry === undefined ? null : { state: entry.state, version: entry.version },
          /** The decision on `state` (null: no record): `{ nextStateText, change }` to write, or null (refused: roll back). */
          decide: planner(decide, (d) => (decision = d), (e) => {
            decision = null;
            ownError = e;
          }),
          /**
           * The caller's statements on the engine's transaction handle; only after a decision that applies and its fence write.
           * A body that is not a function (what the store's checkBody accepts: Redis commands) ran inside the engine
           * already: `handle` is then its outcome, the body's value or a Promise of it (rejected: the body failed).
           */
          run(handle) {
            if (decision === null || writesNothing(decision)) {
              // a lying store: reported as its fault (STORE_ERROR), never as the caller's
              ownError = faults.store(ctx, 'transaction', new Error('the host store ran the caller\'s statements without a decision that applies'));
              throw ownError;
            }
            ran = true;
            const settle = (v) => {
              value = v;
              return v;
            };
            const fail = (e) => {
              bodyError = { error: e };
              throw e;
            };
            let out;
            try {
              out = typeof body === 'function' ? body(handle) : handle;
            } catch (e) {
              fail(e);
            }
            return isThenable(out) ? Promise.resolve(out).then(settle, fail) : settle(out);
          },
          body,
        };
        let answer;
        try {
          answer = this.#store.fencedTransaction(key, step);
          if (isThenable(answer)) answer = await withTimeout(answer, ms);
        } catch (cause) {
          if (cache !== null) cache.forget(key);
          if (ownError !== null) throw ownError; // our own error (a decision error, a lying store): rolled back
          if (marksConflict(cause)) {
            if (attempt < this.#maxRetries) continue;
            throw faults.conflict(ctx, 'transaction', this.#maxRetries + 1, cause);
          }
          if (bodyError !== null && bodyError.error === cause) throw bodyFailed(ctx, decision === null ? null : decision.result, cause);
          if (marksCommitUnknown(cause)) throw faults.unknown(ctx, 'transaction', cause, messageOf(cause));
          throw faults.store(ctx, 'transaction', cause);
        }
        if (answer === TIMED_OUT) {
          if (cache !== null) cache.forget(key);
          throw faults.unknown(ctx, 'transaction', undefined, noAnswer(ms));
        }
        if (ownError !== null) throw ownError;
        if (decision === null) throw faults.store(ctx, 'transaction', new Error('the host transaction returned without deciding'));
        const applies = !writesNothing(decision);
        if (applies && !ran) throw faults.store(ctx, 'transaction', new Error('the host transaction committed without running the caller\'s statements'));
        if (cache !== null) {
          // `{ version }`: the fence row's version this transaction wrote, remembered with the state text written.
          const written = answeredVersion(answer);
          if (applies && written !== null && typeof decision.nextText === 'string') {
            cache.remember(key, decision.nextText, written.version);
          } else cache.forget(key);
        }
        return { result: decision.result, ran: applies, value };
      }
    } finally {
      this.#release(key, slot);
    }
  }

  /**
   * One fence step inside a transaction the caller already has: the store's
   * `fenceIn(handle, key, step)` reads the fence state on `handle` (with a row
   * lock where the engine has one), calls `step.decide(state)` and writes the
   * next state on the same handle when it applies. No retries, no queue, no
   * cache (the caller's transaction owns atomicity). Answers the decision's
   * result synchronously when the store does (`sync`), else a Promise.
   */
  fenceIn(ctx, handle, key, decide, sync) {
    let decision = null;
    let ownError = null;
    const step = { decide: planner(decide, (d) => (decision = d), (e) => (ownError = e)) };
    const done = () => {
      if (ownError !== null) throw ownError;
      if (decision === null) throw this.#faults.store(ctx, 'fenceIn', new Error('the host store returned without deciding'));
      this.#cache?.forget(key); // the caller's transaction may still roll back
      return decision.result;
    };
    const fault = (cause) => {
      if (ownError !== null) throw ownError;
      // the engine's "run the transaction again" class (a concurrent first writer, SQLITE_BUSY…):
      // COMMIT_CONFLICT marked `conflict: true`, for the caller's own retry of its transaction
      if (marksConflict(cause)) {
        const e = this.#faults.conflict(ctx, 'fenceIn', 1, cause);
        e.conflict = true;
        throw e;
      }
      throw this.#faults.store(ctx, 'fenceIn', cause);
    };
    let answer;
    try {
      answer = this.#store.fenceIn(handle, key, step);
    } catch (cause) {
      fault(cause);
    }
    if (isThenable(answer)) {
      if (sync) {
        answer.then(idle, idle);
        throw invalid('fenceInSync: this handle answers asynchronously (its statements return Promises): use fenceIn', { key });
      }
      return Promise.resolve(answer).then(done, fault);
    }
    // A store that answered at once (SqliteStore on its Database): the result itself, so that
    // Gate.fenceIn can throw a refusal synchronously inside a synchronous transaction function
    return done();
  }

  /** Ends a step's turn: the key leaves the queues when this was its newest step. */
  #release(key, slot) {
    if (slot !== null && this.#queues.get(key) === slot) this.#queues.delete(key);
  }

  /** How many keys have steps running or waiting (0 when idle): the queues do not outlive their work. */
  get busyKeys() {
    return this.#queues.size;
  }

  async #viaCas(ctx, key, decide, timing, before = null, slot = null) {
    if (before !== null) await settled(before); // the step before on this key ends its turn first
    try {
      const faults = this.#faults;
      const ms = this.#commitTimeoutMs;
      for (let attempt = 0; attempt <= this.#maxRetries; attempt++) {
        // (`inline`: a store that answers synchronously is not awaited)
        let record = this.#loadNow(ctx, key);
        if (isThenable(record)) record = await record;
        const d = decide(faults.record(ctx, record));
        if (writesNothing(d)) return d.result; // nothing changes: nothing to persist
        const expected = versionOf(faults, ctx, record);
        let committed;
        const t0 = timing === null ? 0 : performance.now();
        try {
          committed = withTimeout(this.#store.commit(key, expected, d.next, d.change), ms);
          if (!this.#inline || isThenable(committed)) committed = await committed;
        } catch (cause) {
          if (marksCommitUnknown(cause)) throw faults.unknown(ctx, 'commit', cause, messageOf(cause));
          throw faults.store(ctx, 'commit', cause);
        }
        if (committed === TIMED_OUT) throw faults.unknown(ctx, 'commit', undefined, noAnswer(ms));
        if (timing !== null) timing.commitMs = (timing.commitMs ?? 0) + (performance.now() - t0);
        // Committed: only now may the result (a verdict, an epoch, a lease) leave.
        if (committed === true) return d.result;
        if (committed !== false) {
          // Never treat anything but `true` as success; but a commit that answered
          // something else may have written, so it is not a plain failure either.
          throw faults.unknown(ctx, 'commit', undefined, `commit returned ${describe(committed)}, not true or false`);
        }
        // Lost the compare-and-set: load and decide again.
      }
      throw faults.conflict(ctx, 'commit', this.#maxRetries + 1, undefined);
    } finally {
      this.#release(key, slot);
    }
  }

  /**
   * The transaction step: the host runs `fn(state)` inside its atomic boundary.
   * `cache`: the state cache of a `textTransaction` store (null: none), which
   * remembers the `{ version }` it answers with the text written.
   */
  async #viaTransaction(ctx, key, decide, timing, before = null, slot = null, cache = null) {
    if (before !== null) await settled(before); // the step before on this key ends its turn first
    try {
      const faults = this.#faults;
      const ms = this.#commitTimeoutMs;
      let decision = null;
      let ownError = null;
      const takesText = this.#takesText;
      const fn = (state) => {
        decision = null;
        ownError = null;
        try {
          // Inside a transaction the host passes only the state: null = no record
          // (undefined is the caller's CORRUPT_STATE: a misnamed column must not read as mark 0).
          const d = decide(state);
          decision = d;
          if (writesNothing(d)) return null;
          // `textTransaction`: the state's text, written as it is (as Rust wrote it)
          if (takesText) return { nextStateText: d.nextText, change: d.change };
          // The state's text beside its object form (parsed only if the host reads it):
          // a store that keeps text may write `nextStateText` as it is.
          return {
            get nextState() {
              return d.next;
            },
            nextStateText: d.nextText,
            change: d.change,
          };
        } catch (e) {
          ownError = e;
          throw e;
        }
      };
      let answer;
      const t0 = timing === null ? 0 : performance.now();
      for (let attempt = 0; ; attempt++) {
        try {
          answer = takesText ? this.#store.textTransaction(key, fn) : this.#store.transaction(key, fn);
          // a synchronous store (SqliteStore) answers at once: no microtask hop
          if (isThenable(answer)) answer = await withTimeout(answer, ms);
          break;
        } catch (cause) {
          if (ownError !== null) throw ownError; // our own error inside: the host rolled back
          if (marksCommitUnknown(cause)) throw faults.unknown(ctx, 'transaction', cause, messageOf(cause));
          // `conflict: true`: the host's "retry the transaction" class (SQLITE_BUSY, a
          // serialization failure), nothing committed; retried like a lost compare-and-set.
          if (marksConflict(cause)) {
            if (attempt < this.#maxRetries) continue;
            throw faults.conflict(ctx, 'transaction', this.#maxRetries + 1, cause);
          }
          throw faults.store(ctx, 'transaction', cause);
        }
      }
      if (timing !== null) timing.commitMs = performance.now() - t0;
      if (answer === TIMED_OUT) throw faults.unknown(ctx, 'transaction', undefined, noAnswer(ms));
      if (ownError !== null) throw ownError;
      if (decision === null) throw faults.store(ctx, 'transaction', new Error('the host transaction returned without calling fn'));
      // The transaction has returned, so its write (if any) is committed: only now may the result leave.
      // `textTransaction` answers `{ version }` of what it wrote (null: nothing written)
      const written = cache === null ? null : answeredVersion(answer);
      if (written !== null && takesText && !writesNothing(decision)) {
        cache.remember(key, decision.nextText, written.version);
      }
      return decision.result;
    } finally {
      this.#release(key, slot);
    }
  }
}
