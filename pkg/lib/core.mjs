// The public JavaScript API and the embedded gate. Thin: every decision is made
// in Wasm; a request and its answer cross through the exchange (exchange.mjs).
import * as wasm from '../dist/fencegate.js';
import { FencegateError } from './errors.mjs';
import { ready, initAsync, CODES, TABLES } from './runtime.mjs';
import { writeRequest, readVerdict, readNumberVerdict, readClaims, readBoundHolder, readMarks } from './exchange.mjs';
import { policyFromOptions, refreshCeiling, setPolicyCeiling, addPolicyKey, retirePolicyKey, freePolicy } from './signed.mjs';
import { metaOf, establishOpId, windowOf, auditOf, Observer, bounded, plainPolicy, bindHolder } from './verdict.mjs';
import { invalid, notReady, checkKey, checkOptions, GATE_OPTIONS, describe, stateTextOf, checkStateText } from './common.mjs';

export { FencegateError };
export { Gate } from './gate.mjs';
export { Issuer } from './issuer.mjs';
export { MemoryHostStore } from './memory.mjs';
export { reconcile } from './reconcile.mjs';
export { valueCodec, jsonCodec } from './codec.mjs';
export { mintToken, verifyToken, ed25519PublicKey, features } from './signed.mjs';


/**
 * Loads the WebAssembly module. Required once before use on the browser and
 * default entries; a no-op on Node and workerd, which load synchronously.
 * `issuer`: where the issuer side's module is, fetched on first use.
 */
export async function init(input, issuer) {
  await initAsync(input, issuer);
}

/** Parses header/JSON text with the canonical decimal grammar; throws MISSING_TOKEN / MALFORMED_TOKEN. */
export function parseToken(text) {
  if (!ready) notReady();
  // The canonical grammar has at most 20 digits: never copy longer text into Wasm memory.
  if (typeof text === 'string' && text.length > 20) {
    try {
      return wasm.parseToken(text.slice(0, 21)); // always MALFORMED_TOKEN
    } catch (e) {
      if (e instanceof FencegateError) e.token = text;
      throw e;
    }
  }
  return wasm.parseToken(text);
}

/**
 * The longest operation id and holder in UTF-8 bytes, `{ maxOpIdBytes,
 * maxHolderBytes }`, as Rust defines them: for the HTTP integration's header
 * checks (fencegate/http), which reach the core only through this module. Not
 * public API (index.d.ts does not declare it).
 */
export function __operationLimits() {
  if (!ready) notReady();
  return { maxOpIdBytes: TABLES.maxOpIdBytes, maxHolderBytes: TABLES.maxHolderBytes };
}

/** Validates any JS value as an epoch and returns it canonically (number ≤ 2^53−1, bigint above). */
export function toToken(value) {
  if (!ready) notReady();
  return wasm.toToken(value);
}

/** Decodes persisted state (object or JSON text) to `{ mark }`; throws CORRUPT_STATE. */
export function decodeState(state) {
  if (!ready) notReady();
  if (typeof state === 'string') return wasm.decodeState(checkStateText(state, 'the state'));
  if (state === null || (typeof state !== 'object' && typeof state !== 'function')) return wasm.decodeState(state);
  // The object form is read field by field (see stateTextOf), then decoded like text.
  try {
    return wasm.decodeState(stateTextOf(state, 'the state'));
  } catch (e) {
    if (e instanceof FencegateError) e.state = state;
    throw e;
  }
}

/** Encodes a mark as the persisted wire object `{ v: 1, mark: "<decimal>" }`. */
export function encodeState(mark) {
  if (!ready) notReady();
  return wasm.encodeState(mark);
}

/** Every stable error/verdict code. */
export function errorCodes() {
  if (!ready) notReady();
  return CODES.slice();
}

/** The same-epoch rule of MemoryGate options: true for `strict`. */
function strictOf(options) {
  if (options === undefined) return false;
  const p = options.sameEpoch;
  if (p === undefined || p === 'allow') return false;
  if (p === 'strict') return true;
  throw invalid(`sameEpoch must be 'allow' or 'strict', got ${describe(p)}`, { sameEpoch: p });
}

/** Stands in for a freed gate's Wasm object: every use throws INVALID_ARGUMENT. */
const FREED = new Proxy({}, {
  get() {
    return () => {
      throw invalid('this gate was freed (free() or the end of its `using` block)');
    };
  },
});

/**
 * The embedded gate: one high-water mark and one value per resource key, in
 * memory, checked and changed in one step. Rejections return a verdict and
 * change nothing; bad arguments other than the token throw INVALID_ARGUMENT.
 * Values are kept by reference: no codec, no copy (docs/stores.md "Values").
 * Keys are interned to integer slots here so the hot path passes no strings.
 */
export class MemoryGate {
  #raw;
  #strict;
  #slots = new Map();
  #names = [];
  #values = [];
  #policy;
  #window;
  #observer;
  /** No policy options: number tokens without options take the numeric lane. */
  #plain;
  /** Someone receives audit records (`onVerdict`): operations are timed and recorded, not only counted. */
  #listening;

  constructor(options) {
    if (!ready) notReady();
    if (options !== undefined && options !== null) {
      if (typeof options !== 'object') throw invalid('options must be an object', { options });
      options = checkOptions(options, GATE_OPTIONS, 'MemoryGate');
    } else {
      options = undefined;
    }
    this.#strict = strictOf(options);
    this.#window = windowOf(options);
    this.#observer = new Observer(auditOf(options));
    this.#policy = policyFromOptions(options);
    this.#plain = this.#policy === null;
    this.#listening = this.#observer.timed;
    this.#raw = new wasm.RawMemoryGate(this.#strict);
  }

  /** The slot of `key`, made on first use (validates the key once). */
  #slot(key) {
    let slot = this.#slots.get(key);
    if (slot === undefined) {
      checkKey(key);
      slot = this.#names.length;
      this.#names.push(key);
      this.#slots.set(key, slot);
    }
    return slot;
  }

  /** The slot of `key`, or −1 for a key never used (validates the key). */
  #find(key) {
    const slot = this.#slots.get(key);
    if (slot !== undefined) return slot;
    checkKey(key);
    return -1;
  }

  /** The same-epoch rule: `'allow'` or `'strict'`. */
  get sameEpoch() {
    return this.#strict ? 'strict' : 'allow';
  }

  /**
   * Fenced write: applies `value` on advance/accept, changes nothing on reject
   * or duplicate. `options.opId` de-duplicates retries within an epoch;
   * `options.holder` binds the epoch to its holder (EPOCH_CONFLICT otherwise).
   */
  write(key, token, value, options) {
    // As Gate.write: a value is required (there is no "no value" to write).
    if (value === undefined) throw invalid('value must not be undefined; a MemoryGate has no delete: write null or another value', { key });
    return this.#fenced(key, token, options, true, value);
  }

  /** Raises the mark of `key` to `token` with no data change (the new owner's barrier); `options.holder` as for write. */
  establish(key, token, options) {
    return this.#fenced(key, token, options, false, undefined);
  }

  /**
   * One write (`write`: true) or establish: the decision (one Wasm call), then
   * the value on advance/accept, in the same synchronous step (nothing can
   * run or throw in between), then the audit record. A number token with no
   * policy and no operation options takes the numeric lane
   * (`RawMemoryGate.fence`: slot, establish, token; decision record
   * typed-exchange); everything else writes its request to the exchange for
   * `RawMemoryGate.apply`.
   */
  #fenced(key, token, options, write, value) {
    const slot = this.#slot(key);
    const started = this.#listening ? performance.now() : null;
    const meta = options === undefined ? null : metaOf(options);
    if (!write && meta?.opId !== undefined) throw establishOpId(key);
    let v;
    let status;
    if (this.#plain && meta === null && typeof token === 'number') {
      status = this.#raw.fence(slot, !write, token);
      v = readNumberVerdict(key, token, status);
    } else {
      const p = this.#policy;
      let scope = null;
      if (p !== null) {
        // Policy callbacks (ceiling, scope) run before Wasm is entered.
        refreshCeiling(p);
        scope = typeof token === 'number' ? '' : p.scopeOf(key);
      }
      writeRequest(slot, !write, false, scope === null ? token : bounded(token), scope, false, meta, null, undefined, this.#window);
      status = this.#raw.apply(p === null ? plainPolicy() : p.raw);
      v = readVerdict(key, token);
      if (p !== null) {
        v.claims = readClaims();
        bindHolder(v, readBoundHolder());
      }
    }
    if (write && status < 2) this.#values[slot] = value;
    if (this.#listening) this.#observer.record(v, write ? 'write' : 'establish', meta, started, null, status);
    else this.#observer.count(status);
    return v;
  }

  /** Counters per outcome and code since the gate was made: `{ total, advance, accept, reject, duplicate, auditErrors, codes }`. */
  counters() {
    return this.#observer.counters();
  }

  /**
   * Quarantine (docs/decisions/reconcile-planner.md): raises the mark of `key` to `max(mark, floor)` (never
   * lowers it) and refuses every write and establish with an epoch ≤ that floor
   * (`QUARANTINED`) until one above it advances the mark and lifts it. `floor`
   * is 0 or an epoch. Returns `{ key, ok: true, changed, floor, markBefore, markAfter }`.
   */
  quarantine(key, floor) {
    const slot = this.#slot(key);
    const raw = this.#raw;
    const changed = raw.quarantine(slot, floor);
    const [markBefore, markAfter] = readMarks();
    return { key, ok: true, changed, floor: markAfter, markBefore, markAfter };
  }

  /** The high-water mark of `key` (0 = never written). */
  mark(key) {
    const slot = this.#find(key);
    return slot < 0 ? 0 : this.#raw.mark(slot);
  }

  /** The protected value of `key`, or `undefined`. */
  value(key) {
    const slot = this.#find(key);
    return slot < 0 ? undefined : this.#values[slot];
  }

  /** `{ mark, value, hasValue }` for `key`. */
  read(key) {
    const slot = this.#find(key);
    return { mark: this.mark(key), value: this.value(key), hasValue: slot >= 0 && this.#raw.hasValue(slot) };
  }

  /** The persisted wire form of `key`'s state (`{ v: 1, mark: "…" }`), or `undefined`. */
  state(key) {
    const slot = this.#find(key);
    return slot < 0 ? undefined : this.#raw.state(slot);
  }

  /** Keys that have state, sorted. */
  keys() {
    return this.#names.filter((_, slot) => this.#raw.hasState(slot)).sort();
  }

  /**
   * Sets the ceiling of a `reject-future` gate (the issuer's current epoch, say),
   * or clears it with `null`. Replaces a `higherEpoch.ceiling` function.
   */
  setCeiling(ceiling) {
    setPolicyCeiling(this.#policy, ceiling);
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

  /** Releases the gate's WebAssembly memory now (also done by `using`). */
  free() {
    if (this.#raw === FREED) return; // a second free (or `using` after free) is a no-op
    this.#values = [];
    this.#raw.free();
    freePolicy(this.#policy);
    this.#raw = FREED;
  }
}

if (typeof Symbol.dispose === 'symbol') {
  MemoryGate.prototype[Symbol.dispose] = MemoryGate.prototype.free;
}
