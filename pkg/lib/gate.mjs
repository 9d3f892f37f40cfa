// The gate over a host store: fencegate decides, the host's storage commits.
//
// A `Gate` runs one fenced operation through the store driver (driver.mjs):
// load the key's stored state → decide in Wasm (decode, compare, next state) →
// on reject return at once, writing nothing → have the host commit the next
// state together with the data change in one atomic step → on a lost
// compare-and-set load and decide again (bounded) → a verdict shaped like
// MemoryGate's.
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
import { FencegateError, isGuardRefusal } from './errors.mjs';
import { TABLES } from './runtime.mjs';
import { writeRequest, readVerdict, readClaims, readNext, readBoundHolder, readMarks, readHasFloor } from './exchange.mjs';
import { policyFromOptions, ceilingOf, hostVerified, addPolicyKey, retirePolicyKey, freePolicy } from './signed.mjs';
import { metaOf, establishOpId, windowOf, auditOf, Observer, bounded, plainPolicy, bindHolder } from './verdict.mjs';
import { invalid, checkReady, checkKey, checkOptions, messageOf, GATE_OPTIONS, describe, listOf, stateTextOf, checkStateText, wellFormed, isThenable } from './common.mjs';
import { StoreDriver, driverOptions, DEFAULT_STATE_CACHE, stepOf } from './driver.mjs';

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

/** INVALID_ARGUMENT unless `body` is what the store runs in its transaction: a function, or what its `checkBody` accepts (Redis: a command list). */
function checkBody(store, body) {
  if (typeof store.checkBody === 'function') {
    store.checkBody(body);
    return;
  }
  if (typeof body !== 'function') throw invalid(`transaction: the statements must be a function (tx) => …, got ${describe(body)}`, {});
}

/** CALLBACK_FAILED: the caller's statements threw inside the fenced transaction, which was rolled back. */
function bodyFailed(key, verdict, cause) {
  // GUARD_REFUSED: a statement was refused by the database's guard (fencegate/guard): it changed a
  // protected row whose key is not the one this transaction fenced, or wrote the fence table
  if (isGuardRefusal(cause)) {
    return new FencegateError(
      'GUARD_REFUSED',
      `the database's guard refused a statement of the fenced transaction on ${JSON.stringify(key)}, so it was rolled back (the mark and your data are as before): ${messageOf(cause)}`,
      { key, cause, verdict },
    );
  }
  return new FencegateError(
    'CALLBACK_FAILED',
    `the statements of the fenced transaction on ${JSON.stringify(key)} failed, so it was rolled back (the mark and your data are as before): ${messageOf(cause)}`,
    { key, cause, verdict },
  );
}

/** The error `fenceIn` throws for a verdict that does not apply: its code (DUPLICATE_OPERATION for a duplicate), the verdict attached. */
function refusalError(v) {
  const code = v.ok ? 'DUPLICATE_OPERATION' : v.code;
  const why = v.ok
    ? `operation id already applied in epoch ${v.markAfter}`
    : code === 'STALE_TOKEN'
      ? `token ${v.token} is below the mark ${v.markAfter}`
      : `refused (${code})`;
  return new FencegateError(code, `fenceIn ${JSON.stringify(v.key)}: ${why}; the surrounding transaction must not commit (throwing rolls it back)`, {
    key: v.key,
    verdict: v,
    token: v.token,
    mark: v.markAfter,
  });
}

function conflictError(key, callback, attempts, cause) {
  if (callback === 'commit') {
    return new FencegateError(
      'COMMIT_CONFLICT',
      `compare-and-set on ${JSON.stringify(key)} conflicted ${attempts} times; nothing was written by this call`,
      { key, attempts },
    );
  }
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

/**
 * The stored state as the binding reads it: null (no record) or text. Text goes to the decoder as is (lone surrogates
 * refused: Wasm would see them altered); the object form is first read field
 * by field into JSON text by `stateTextOf` (no JSON.stringify: NaN, undefined
 * members and toJSON are refused, not silently changed), so both forms meet
 * the same decoder. Throws CORRUPT_STATE.
 */
function stateInput(key, state) {
  if (state === null) return null;
  if (state === undefined) {
    // A transaction store's `fn(undefined)`: a misnamed column or a missing field, never "no record" (that is null).
    throw new FencegateError('CORRUPT_STATE', `${storedStateOf(key)} is undefined: a store passes null for a key without a fence record`, { key });
  }
  if (typeof state === 'string' && state.length > TABLES.maxStateText) {
    // No valid state is near this long: refused before it is copied into Wasm memory.
    throw new FencegateError('CORRUPT_STATE', `${storedStateOf(key)} is ${state.length} UTF-16 units long, over the ${TABLES.maxStateText} a state can be`, { key });
  }
  // (well-formed text, the common case, builds no message)
  if (typeof state === 'string') return wellFormed(state) ? state : checkStateText(state, storedStateOf(key), { key });
  if (typeof state === 'object' || typeof state === 'function') return stateTextOf(state, storedStateOf(key), { key });
  throw wasm.__stateError(state); // a number, a boolean…: the decoder's CORRUPT_STATE
}

/** How errors name the stored state of `key`. */
const storedStateOf = (key) => `the stored state of ${JSON.stringify(key)}`;

/** `call(input)` on the stored state's binding input; a CORRUPT_STATE names the key and carries the value the store gave. */
function onState(key, state, call) {
  try {
    return call(stateInput(key, state));
  } catch (e) {
    throw stateError(key, state, e);
  }
}

/** A CORRUPT_STATE names the key and carries the value the store gave (not our text of it); other errors pass as they are. */
function stateError(key, state, e) {
  if (e instanceof FencegateError && e.code === 'CORRUPT_STATE') {
    if (e.key === undefined) e.key = key;
    e.state = state;
  }
  return e;
}

/**
 * The decision, in Wasm, in one call whatever the token kind (`__gateDecide`,
 * the request and answer through the exchange): decode the stored state,
 * check provenance under the gate's policy (the plain policy when it has
 * none), compare, and give the verdict and the next state's JSON text to
 * commit (as Rust writes it), or null when nothing applies (reject,
 * duplicate). Answers the driver step (`stepOf`) with `change`.
 */
function decide(key, state, token, establish, strict, policy, meta, window, change) {
  try {
    const scope = policy === null ? null : policy.scope;
    const presented = scope === null ? token : bounded(token);
    const ceiling = policy === null ? undefined : policy.ceiling;
    writeRequest(0, establish, strict, presented, scope, policy?.verified === true, meta, stateInput(key, state), ceiling, window);
    wasm.__gateDecide(policy === null ? plainPolicy() : policy.p.raw);
  } catch (e) {
    throw stateError(key, state, e);
  }
  const v = readVerdict(key, token);
  if (policy !== null) {
    v.claims = readClaims();
    bindHolder(v, readBoundHolder());
  }
  return stepOf(v, readNext(), change);
}

/** Mark, holder and quarantine floor of a stored state, decoded in Wasm in one call; throws CORRUPT_STATE. */
function fieldsOf(key, state) {
  const holder = onState(key, state, (input) => wasm.__gateInspect(input));
  const [mark, floor] = readMarks();
  return { mark, holder: holder ?? null, quarantine: readHasFloor() ? floor : null };
}

/** The stored state of a loaded record: null = no fence record; a record must carry its state. */
function stateOf(key, record) {
  if (record === null || record === undefined) return null;
  if (typeof record !== 'object') {
    throw storeError(key, 'load', new TypeError('load must return null or an object { state, version, value }'));
  }
  let state;
  try {
    state = record.state;
  } catch (cause) {
    throw storeError(key, 'load', cause); // a getter (a lazy column) that threw: nothing decided
  }
  if (state === null || state === undefined) {
    throw new FencegateError(
      'CORRUPT_STATE',
      `the stored record of ${JSON.stringify(key)} has no fence state (load returns null for a key without a record)`,
      { key, state },
    );
  }
  return state;
}

/**
 * GUARD_REFUSED for a store callback the database's guard refused (fencegate/guard: a
 * change to a protected table without the fence for its key, or a fence row write that
 * lowers a mark or is not a fence state): fencegate's own statement failed, so nothing
 * was written, and the code tells it from a store that is down.
 */
function guardError(key, callback, cause) {
  if (!isGuardRefusal(cause)) return null;
  return new FencegateError('GUARD_REFUSED', `the database's guard refused host store ${callback}(${JSON.stringify(key)}), so nothing was written: ${messageOf(cause)}`, {
    key,
    callback,
    cause,
  });
}

/** How the store driver reports a gate's failures (see driver.mjs); the context is the key. */
const FAULTS = {
  store: (key, callback, cause) => ownStoreError(key, callback, cause) ?? guardError(key, callback, cause) ?? storeError(key, callback, cause),
  unknown: unknownError,
  conflict: conflictError,
  record: stateOf,
};

function parseOptions(options) {
  if (options === undefined || options === null) options = {};
  if (typeof options !== 'object') throw invalid('options must be an object', { options });
  options = checkOptions(options, [...GATE_OPTIONS, 'maxRetries', 'commitTimeoutMs', 'loadTimeoutMs', 'stateCache'], 'Gate');
  const p = options.sameEpoch;
  if (p !== undefined && p !== 'allow' && p !== 'strict') {
    throw invalid(`sameEpoch must be 'allow' or 'strict', got ${describe(p)}`, { sameEpoch: p });
  }
  const driver = driverOptions({ ...options, stateCache: options.stateCache ?? DEFAULT_STATE_CACHE }, ['commitTimeoutMs', 'loadTimeoutMs']);
  return { strict: p === 'strict', driver, options };
}

/** What every call on a freed gate throws. */
function freed() {
  throw invalid('this gate was freed (free() or the end of its `using` block)');
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
  #driver;
  #strict;
  #policy;
  #window;
  #observer;
  #freed = false;

  constructor(store, options) {
    checkReady();
    if (store === null || typeof store !== 'object') throw invalid('a Gate needs a host store object', { store });
    const o = parseOptions(options);
    this.#policy = policyFromOptions(o.options, true);
    this.#window = windowOf(o.options);
    this.#observer = new Observer(auditOf(o.options));
    try {
      this.#driver = new StoreDriver(store, o.driver, FAULTS);
    } catch (e) {
      freePolicy(this.#policy);
      throw e;
    }
    this.#store = store;
    this.#strict = o.strict;
  }

  /** The same-epoch rule: `'allow'` or `'strict'`. */
  get sameEpoch() {
    return this.#strict ? 'strict' : 'allow';
  }

  /** `'transaction'` or `'compare-and-set'`: the callback shape this gate drives. */
  get shape() {
    return this.#driver.shape;
  }

  // write, establish and delete are plain functions returning the Promise of
  // `#run` (an argument error is a rejected Promise, as from an async
  // function): one async layer per operation, not three (docs/decisions/one-store-driver.md).

  /** Fenced write: the host stores `value` with the next state on advance/accept. */
  write(key, token, value, options) {
    let meta;
    let change;
    try {
      meta = this.#checked(key, options);
      if (value === undefined) throw invalid('value must not be undefined; use delete() to clear a value', { key });
      change = setChange(this.#store, key, value);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#run(key, token, false, change, meta, 'write');
  }

  /** Raises the mark to `token` with no data change (a new owner's barrier). */
  establish(key, token, options) {
    return this.#fence(key, token, options, true, NONE, 'establish');
  }

  /**
   * Fenced delete (maintenance): clears the key's value on advance/accept. The
   * fence record stays, so an older epoch cannot write afterwards.
   */
  delete(key, token, options) {
    return this.#fence(key, token, options, false, DELETE, 'delete');
  }

  /** A live gate, a valid key and valid operation options: the operation's metadata (throws otherwise). */
  #checked(key, options) {
    this.#live();
    checkKey(key);
    return metaOf(options);
  }

  /** `establish` / `delete`: checked, then run; an argument error is a rejected promise. */
  #fence(key, token, options, establish, change, kind) {
    let meta;
    try {
      meta = this.#checked(key, options);
      if (establish && meta?.opId !== undefined) throw establishOpId(key);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#run(key, token, establish, change, meta, kind);
  }

  /**
   * A fenced transaction over the caller's own data
   * (docs/decisions/own-data-transactions.md): one transaction of the store's
   * engine reads the fence state of `key`, decides, and only when the verdict
   * applies writes the next fence state and runs `body(tx)` with the engine's
   * transaction handle (a SQLite `Database`, a `pg` client, a Durable Object
   * transaction…; a list of commands for Redis), then commits both together.
   * Resolves to the verdict, with `result` (what `body` returned) when it
   * applied. A refusal or a duplicate never runs `body` and writes nothing.
   * `body` may run more than once (after a rolled-back serialization failure or
   * busy database) and must only touch the handle it is given. Throws
   * CALLBACK_FAILED (`cause`: the body's error; rolled back, nothing written),
   * COMMIT_UNKNOWN, COMMIT_CONFLICT, STORE_ERROR, INVALID_ARGUMENT.
   */
  transaction(key, token, body, options) {
    let meta;
    try {
      meta = this.#checked(key, options);
      this.#ownData('transaction', 'fencedTransaction');
      checkBody(this.#store, body);
    } catch (e) {
      return Promise.reject(e);
    }
    const timing = this.#observer.timed ? { started: performance.now(), commitMs: null } : null;
    return this.#steps(key, token, meta, (step) => this.#driver.transact(key, key, step, body, bodyFailed)).then(({ result: v, ran, value }) => {
      if (ran) v.result = value;
      this.#observer.record(v, 'transaction', meta, timing?.started ?? null, null);
      return v;
    });
  }

  /**
   * The fence step inside a transaction the caller already has (an ORM's
   * `tx`, a `pg` client after BEGIN, a mysql2 connection, a better-sqlite3
   * `Database` inside `db.transaction`): reads the fence state of `key` on
   * `handle` with a row lock, decides, and writes the next fence state on the
   * same handle. Resolves to the verdict when it applies; otherwise throws a
   * FencegateError (the verdict's code — STALE_TOKEN, SAME_EPOCH_REJECTED… —
   * or DUPLICATE_OPERATION for an op id already applied; `verdict` attached),
   * so the caller's transaction helper rolls back and nothing of it commits.
   */
  fenceIn(handle, key, token, options) {
    let meta;
    try {
      meta = this.#checked(key, options);
      this.#ownData('fenceIn', 'fenceIn');
    } catch (e) {
      return Promise.reject(e);
    }
    let answer;
    try {
      answer = this.#steps(key, token, meta, (step) => this.#driver.fenceIn(key, handle, key, step, false));
    } catch (e) {
      // a store that refuses the handle at once (INVALID_ARGUMENT) still answers through the Promise
      return Promise.reject(e);
    }
    if (!isThenable(answer)) {
      // Decided at once (a synchronous store, a gate without policy callbacks): a refusal is
      // thrown right here, so a synchronous transaction function (better-sqlite3's
      // db.transaction) that forgot fenceInSync still rolls back instead of committing
      // while a rejected Promise waits unread. `await` callers see the same error.
      return Promise.resolve(this.#fenced(answer, meta));
    }
    return answer.then((v) => this.#fenced(v, meta));
  }

  /**
   * `fenceIn` for a synchronous handle (better-sqlite3, bun:sqlite, a Durable
   * Object's `ctx.storage.sql` inside `transactionSync`): answers the verdict
   * or throws at once, so a synchronous transaction function rolls back on a
   * refusal. INVALID_ARGUMENT on a gate whose policy needs a Promise (a
   * `higherEpoch` ceiling function, host-verified Ed25519 tokens): use `fenceIn`.
   */
  fenceInSync(handle, key, token, options) {
    const meta = this.#checked(key, options);
    this.#ownData('fenceInSync', 'fenceIn');
    const p = this.#policy;
    let policy = null;
    if (p !== null) {
      if (p.ceilingFn !== null || (p.hostKeys !== null && typeof token === 'string')) {
        throw invalid('fenceInSync: this gate\'s policy answers through a Promise (a ceiling function or host-verified tokens); use fenceIn', { key });
      }
      policy = { p, scope: typeof token === 'number' ? '' : p.scopeOf(key), ceiling: undefined, verified: false };
    }
    const v = this.#driver.fenceIn(key, handle, key, this.#decision(key, token, meta, policy), true);
    return this.#fenced(v, meta);
  }

  /** INVALID_ARGUMENT unless the store has the verb `verb` that the call `call` needs. */
  #ownData(call, verb) {
    if (typeof this.#store[verb] !== 'function') {
      throw invalid(`${call}: this host store has no ${verb}(…), so it cannot fence the caller's own statements (docs/stores.md "Your own data")`, {});
    }
  }

  /** A verdict of `fenceIn` that applies, passed on; a refusal or a duplicate thrown (so the caller's transaction rolls back). */
  #fenced(v, meta) {
    this.#observer.record(v, 'fenceIn', meta, null, null);
    if (v.ok && v.outcome !== 'duplicate') return v;
    throw refusalError(v);
  }

  /** Runs `run(decide)` with the decision of one operation, the gate's policy callbacks awaited first. */
  #steps(key, token, meta, run) {
    if (this.#policy === null) return run(this.#decision(key, token, meta, null));
    return (async () => {
      const p = this.#policy;
      const ceiling = await ceilingOf(p);
      const policy = { p, scope: typeof token === 'number' ? '' : p.scopeOf(key), ceiling, verified: await hostVerified(p, token) };
      return run(this.#decision(key, token, meta, policy));
    })();
  }

  /** The decision of a fence step with no data change of fencegate's own (the caller's statements are the change). */
  #decision(key, token, meta, policy) {
    const strict = this.#strict;
    const window = this.#window;
    return (state) => {
      this.#live();
      return decide(key, state, token, false, strict, policy, meta, window, NONE);
    };
  }

  /** Fenced delete of several keys, one after another; each key is fenced on its own. */
  async deleteMany(keys, token) {
    this.#live();
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
    this.#live();
    addPolicyKey(this.#policy, kid, key);
  }

  /** Key rotation on a live gate: retires `kid` (its key is dropped; tokens naming it get KEY_RETIRED). */
  retireKey(kid) {
    this.#live();
    retirePolicyKey(this.#policy, kid);
  }

  /** `{ mark, value, hasValue }` of `key` through the host's `load`. Throws CORRUPT_STATE, STORE_ERROR. */
  async read(key) {
    const record = await this.#load(key);
    const { mark } = fieldsOf(key, stateOf(key, record));
    let value;
    try {
      // (the store adapters decode a stored value only here: loadedRecord in adapters/support.mjs)
      value = record === null || record === undefined ? undefined : record.value;
    } catch (cause) {
      throw FAULTS.store(key, 'load', cause);
    }
    return { mark, value, hasValue: value !== undefined };
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
    const state = stateOf(key, await this.#load(key));
    const { mark, holder, quarantine } = fieldsOf(key, state);
    return { key, exists: state !== null, mark, holder, quarantine };
  }

  /**
   * Quarantine (after a restore or a lost state; docs/decisions/reconcile-planner.md): a fenced
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
    this.#live();
    checkKey(key);
    return this.#driver.run(key, key, (state) => {
      this.#live();
      const text = onState(key, state, (input) => wasm.__gateQuarantine(input, floor));
      const [markBefore, markAfter] = readMarks();
      return stepOf({ key, ok: true, changed: text !== undefined, floor: markAfter, markBefore, markAfter }, text ?? null, NONE);
    });
  }

  /**
   * Drops what this gate remembers of `key`'s stored state (every key when
   * `key` is omitted): its next operation starts with a load instead of an
   * optimistic commit. Verdicts never depend on the cache (a stale entry only
   * costs a failed precondition); this frees memory. Nothing is written.
   */
  forget(key) {
    this.#live();
    if (key !== undefined) checkKey(key);
    this.#driver.forget(key);
  }

  /** The host's `load(key)` for `read` and `inspect` (a transaction store may have none). */
  #load(key) {
    this.#live();
    checkKey(key);
    if (!this.#driver.canLoad) throw invalid('this host store has no load(key); reads need one', { key });
    return this.#driver.load(key, key);
  }

  /** Counters per outcome and code since the gate was made: `{ total, advance, accept, reject, duplicate, auditErrors, codes }`. */
  counters() {
    return this.#observer.counters();
  }

  /**
   * Releases the gate's WebAssembly memory now (its verification keys; also
   * done by `using`). Every later call throws INVALID_ARGUMENT; a second
   * `free()` does nothing.
   */
  free() {
    if (this.#freed) return;
    this.#freed = true;
    freePolicy(this.#policy);
  }

  #live() {
    if (this.#freed) freed();
  }

  #run(key, token, establish, change, meta, operation) {
    // time in the host's commit/transaction callbacks, for the audit record (null: none ran)
    const timing = this.#observer.timed ? { started: performance.now(), commitMs: null } : null;
    const p = this.#policy === null
      ? this.#driver.run(key, key, this.#plainStep(key, token, establish, change, meta), timing, true)
      : this.#decideAndCommit(key, token, establish, change, meta, timing);
    // (a `then`, not an async function: its frame costs more than the reaction; a failure passes through)
    return p.then((v) => {
      this.#observer.record(v, operation, meta, timing?.started ?? null, timing?.commitMs ?? null);
      return v;
    });
  }

  /** The driver's decision of one operation by a gate without policy options. */
  #plainStep(key, token, establish, change, meta) {
    const strict = this.#strict;
    const window = this.#window;
    return (state) => {
      // A step that waited in the key's queue while the gate was freed writes nothing.
      this.#live();
      return decide(key, state, token, establish, strict, null, meta, window, change);
    };
  }

  /** One operation of a gate with policy options (its callbacks run before the store is touched). */
  async #decideAndCommit(key, token, establish, change, meta, timing) {
    // Callbacks of the policy run before the store is touched; the ceiling is
    // set again right before each (synchronous) decision.
    const p = this.#policy;
    const ceiling = await ceilingOf(p);
    const policy = { p, scope: typeof token === 'number' ? '' : p.scopeOf(key), ceiling, verified: await hostVerified(p, token) };
    const strict = this.#strict;
    const window = this.#window;
    return this.#driver.run(
      key,
      key,
      (state) => {
        // A step that waited in the key's queue while the gate was freed writes nothing (its keys are gone).
        this.#live();
        return decide(key, state, token, establish, strict, policy, meta, window, change);
      },
      timing,
      true,
    );
  }
}

if (typeof Symbol.dispose === 'symbol') {
  Gate.prototype[Symbol.dispose] = Gate.prototype.free;
}
