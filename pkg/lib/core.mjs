// The public JavaScript API. Thin: it picks the token's JS type before calling
// into Wasm (numbers and bigints never go through serde) and shapes verdicts.
import * as wasm from '../dist/fencegate.js';
import { FencegateError } from './errors.mjs';
import { ready, initAsync, CODES } from './runtime.mjs';
import { policyFromOptions, applyWithPolicy, setPolicyCeiling } from './signed.mjs';

export { FencegateError };
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
  const before = raw.before_n();
  const after = raw.after_n();
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
 */
export class MemoryGate {
  #raw;
  #strict;
  #policy;

  constructor(options) {
    if (!ready) notReady();
    this.#strict = policyFlag(options);
    this.#policy = policyFromOptions(options);
    this.#raw = new wasm.RawMemoryGate(this.#strict);
  }

  /** The same-epoch policy: `'allow'` or `'strict'`. */
  get sameEpoch() {
    return this.#strict ? 'strict' : 'allow';
  }

  /** Fenced write: applies `value` on advance/accept, changes nothing on reject. */
  write(key, token, value) {
    checkKey(key);
    const raw = this.#raw;
    if (this.#policy !== null) return applyWithPolicy(raw, this.#policy, key, token, true, value);
    let status;
    if (typeof token === 'number') status = raw.write_n(key, token, value);
    else if (typeof token === 'bigint' && token >= 0n && token <= MAX_U64) status = raw.write_b(key, token, value);
    else status = raw.write_any(key, token, value);
    return verdictOf(raw, key, status, token);
  }

  /** Raises the mark of `key` to `token` with no data change (the new owner's barrier). */
  establish(key, token) {
    checkKey(key);
    const raw = this.#raw;
    if (this.#policy !== null) return applyWithPolicy(raw, this.#policy, key, token, false);
    let status;
    if (typeof token === 'number') status = raw.establish_n(key, token);
    else if (typeof token === 'bigint' && token >= 0n && token <= MAX_U64) status = raw.establish_b(key, token);
    else status = raw.establish_any(key, token);
    return verdictOf(raw, key, status, token);
  }

  /** The high-water mark of `key` (0 = never written). */
  mark(key) {
    checkKey(key);
    const m = this.#raw.mark_n(key);
    return m >= 0 ? m : this.#raw.mark_b(key);
  }

  /** The protected value of `key`, or `undefined`. */
  value(key) {
    checkKey(key);
    return this.#raw.value(key);
  }

  /** `{ mark, value, hasValue }` for `key`. */
  read(key) {
    return { mark: this.mark(key), value: this.value(key), hasValue: this.#raw.has_value(key) };
  }

  /** The persisted wire form of `key`'s state (`{ v: 1, mark: "…" }`), or `undefined`. */
  state(key) {
    checkKey(key);
    return this.#raw.state(key);
  }

  /** Keys that have state, sorted. */
  keys() {
    return this.#raw.keys();
  }

  /**
   * Sets the ceiling of a `reject-future` gate (the issuer's current epoch, say),
   * or clears it with `null`. Replaces a `higherEpoch.ceiling` function.
   */
  setCeiling(ceiling) {
    setPolicyCeiling(this.#policy, ceiling);
  }

  /** Releases the gate's WebAssembly memory now (also done by `using`). */
  free() {
    this.#raw.free();
    if (this.#policy !== null) this.#policy.raw.free();
  }
}

if (typeof Symbol.dispose === 'symbol') {
  MemoryGate.prototype[Symbol.dispose] = MemoryGate.prototype.free;
}
