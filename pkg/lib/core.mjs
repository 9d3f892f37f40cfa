// The public JavaScript API. Thin: it picks the token's JS type before calling
// into Wasm (numbers and bigints never go through serde) and shapes verdicts.
import * as wasm from '../dist/fencegate.js';
import { FencegateError } from './errors.mjs';
import { ready, initAsync, CODES, lastMarks } from './runtime.mjs';
import { policyFromOptions, applyWithPolicy, setPolicyCeiling, addPolicyKey, retirePolicyKey } from './signed.mjs';

export { FencegateError };
export { Gate } from './gate.mjs';
export { Issuer, MemoryHostStore } from './issuer.mjs';
export { mintToken, verifyToken, ed25519PublicKey, features } from './signed.mjs';

const MAX_U64 = 0xffff_ffff_ffff_ffffn;
const MAX_SAFE = 9007199254740991n;
const OUTCOMES = ['advance', 'accept'];

function notReady() {
  throw new FencegateError(
    'NOT_INITIALIZED',
    "fencegate's WebAssembly module is not loaded yet: call `await init()` first (browser and default entries)",
  );
}

function invalid(message, details) {
  return new FencegateError('INVALID_ARGUMENT', message, details);
}

function checkKey(key) {
  if (typeof key !== 'string') throw invalid('a resource key must be a string', { key });
}

/**
 * Loads the WebAssembly module. Required once before use on the browser and
 * default entries; a no-op on Node and workerd, which load synchronously.
 */
export async function init(input) {
  await initAsync(input);
}

/** Parses header/JSON text with the canonical decimal grammar; throws MISSING_TOKEN / MALFORMED_TOKEN. */
export function parseToken(text) {
  if (!ready) notReady();
  return wasm.parseToken(text);
}

/** Validates any JS value as an epoch and returns it canonically (number ≤ 2^53−1, bigint above). */
export function toToken(value) {
  if (!ready) notReady();
  return wasm.toToken(value);
}

/** Decodes persisted state (object or JSON text) to `{ mark }`; throws CORRUPT_STATE. */
export function decodeState(state) {
  if (!ready) notReady();
  return wasm.decodeState(state);
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

function policyFlag(options) {
  if (options === undefined || options === null) return false;
  if (typeof options !== 'object') throw invalid('options must be an object', { options });
  const p = options.sameEpoch;
  if (p === undefined || p === 'allow') return false;
  if (p === 'strict') return true;
  throw invalid(`sameEpoch must be 'allow' or 'strict', got ${String(p)}`, { sameEpoch: p });
}

function canonical(token) {
  return typeof token === 'bigint' && token <= MAX_SAFE ? Number(token) : token;
}

function verdictOf(raw, key, status, token) {
  const marks = lastMarks();
  const before = marks[0];
  const after = marks[1];
  const rejected = status >= 2;
  const code = rejected ? CODES[status - 2] : null;
  return {
    key,
    ok: !rejected,
    outcome: rejected ? 'reject' : OUTCOMES[status],
    code,
    token: code === 'MISSING_TOKEN' || code === 'MALFORMED_TOKEN' ? null : canonical(token),
    markBefore: before >= 0 ? before : raw.before_b(),
    markAfter: after >= 0 ? after : raw.after_b(),
  };
}

/**
 * The embedded gate: one high-water mark and one value per resource key, in
 * memory, checked and changed in one step. Rejections return a verdict and
 * change nothing; bad arguments other than the token throw INVALID_ARGUMENT.
 * Keys are interned to integer slots here so the hot path passes no strings.
 */
export class MemoryGate {
  #raw;
  #strict;
  #slots = new Map();
  #names = [];
  #values = [];
  #policy;

  constructor(options) {
    if (!ready) notReady();
    this.#strict = policyFlag(options);
    this.#policy = policyFromOptions(options);
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

  /** The same-epoch policy: `'allow'` or `'strict'`. */
  get sameEpoch() {
    return this.#strict ? 'strict' : 'allow';
  }

  /** Fenced write: applies `value` on advance/accept, changes nothing on reject. */
  write(key, token, value) {
    const slot = this.#slot(key);
    const raw = this.#raw;
    if (this.#policy !== null) {
      const v = applyWithPolicy(raw, this.#policy, slot, key, token, true);
      // Same synchronous step as the decision, as below.
      if (v.ok) this.#values[slot] = value;
      return v;
    }
    let status;
    if (typeof token === 'number') status = raw.write_n(slot, token);
    else if (typeof token === 'bigint' && token >= 0n && token <= MAX_U64) status = raw.write_b(slot, token);
    else status = raw.write_any(slot, token);
    // Same synchronous step as the decision: nothing can run or throw in between.
    if (status < 2) this.#values[slot] = value;
    return verdictOf(raw, key, status, token);
  }

  /** Raises the mark of `key` to `token` with no data change (the new owner's barrier). */
  establish(key, token) {
    const slot = this.#slot(key);
    const raw = this.#raw;
    if (this.#policy !== null) return applyWithPolicy(raw, this.#policy, slot, key, token, false);
    let status;
    if (typeof token === 'number') status = raw.establish_n(slot, token);
    else if (typeof token === 'bigint' && token >= 0n && token <= MAX_U64) status = raw.establish_b(slot, token);
    else status = raw.establish_any(slot, token);
    return verdictOf(raw, key, status, token);
  }

  /** The high-water mark of `key` (0 = never written). */
  mark(key) {
    const slot = this.#find(key);
    if (slot < 0) return 0;
    const m = this.#raw.mark_n(slot);
    return m >= 0 ? m : this.#raw.mark_b(slot);
  }

  /** The protected value of `key`, or `undefined`. */
  value(key) {
    const slot = this.#find(key);
    return slot < 0 ? undefined : this.#values[slot];
  }

  /** `{ mark, value, hasValue }` for `key`. */
  read(key) {
    const slot = this.#find(key);
    return { mark: this.mark(key), value: this.value(key), hasValue: slot >= 0 && this.#raw.has_value(slot) };
  }

  /** The persisted wire form of `key`'s state (`{ v: 1, mark: "…" }`), or `undefined`. */
  state(key) {
    const slot = this.#find(key);
    return slot < 0 ? undefined : this.#raw.state(slot);
  }

  /** Keys that have state, sorted. */
  keys() {
    return this.#names.filter((_, slot) => this.#raw.has_state(slot)).sort();
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
    this.#values = [];
    this.#raw.free();
    if (this.#policy !== null) this.#policy.raw.free();
  }
}

if (typeof Symbol.dispose === 'symbol') {
  MemoryGate.prototype[Symbol.dispose] = MemoryGate.prototype.free;
}
