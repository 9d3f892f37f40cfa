// Small helpers shared by the JS API modules: argument errors, readiness,
// token canonical form, and the host-callback plumbing (timeouts, unknown commits).
import { FencegateError } from './errors.mjs';
import { ready } from './runtime.mjs';

export const MAX_U64 = 0xffff_ffff_ffff_ffffn;
export const MAX_SAFE = 9007199254740991n;

/** An epoch in canonical form: a bigint ≤ 2^53−1 becomes a number. */
export function canonical(token) {
  return typeof token === 'bigint' && token <= MAX_SAFE ? Number(token) : token;
}

/** A FencegateError INVALID_ARGUMENT. */
export function invalid(message, details) {
  return new FencegateError('INVALID_ARGUMENT', message, details);
}

/** Throws NOT_INITIALIZED. */
export function notReady() {
  throw new FencegateError(
    'NOT_INITIALIZED',
    "fencegate's WebAssembly module is not loaded yet: call `await init()` first (browser and default entries)",
  );
}

/** Throws NOT_INITIALIZED unless the Wasm module is loaded. */
export function checkReady() {
  if (!ready) notReady();
}

/**
 * Whether `s` is a string with no lone UTF-16 surrogates. Text crossing into
 * Wasm (or into a UTF-8 store) is UTF-8: a lone surrogate would be replaced by
 * U+FFFD there, and two different strings would become one.
 */
export function wellFormed(s) {
  return typeof s === 'string' && (typeof s.isWellFormed !== 'function' || s.isWellFormed());
}

/**
 * The longest resource key, in UTF-8 bytes: the longest signed-token scope
 * (a key is its own default scope), and short enough for every shipped
 * store's index (PostgreSQL's btree refuses rows above about 2,700 bytes).
 */
export const MAX_KEY_BYTES = 512;

/** The UTF-8 length of a well-formed string, counted up to `limit + 1`. */
export function utf8Length(s, limit) {
  let n = 0;
  for (let i = 0; i < s.length && n <= limit; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4; // a surrogate pair (well-formed: the low half follows)
      i++;
    } else n += 3;
  }
  return n;
}

/** At most `max` characters of `s` for an error message (never whole long input). */
export function cut(s, max = 40) {
  if (s.length <= max) return s;
  const end = s.charCodeAt(max - 1) >= 0xd800 && s.charCodeAt(max - 1) <= 0xdbff ? max - 1 : max;
  return `${s.slice(0, end)}…`;
}

/**
 * Throws INVALID_ARGUMENT unless `key` is a well-formed string of at most
 * MAX_KEY_BYTES UTF-8 bytes. A long key is not quoted whole: the message and
 * `key` carry its first 40 characters, `keyBytes` its length.
 */
export function checkKey(key) {
  if (!wellFormed(key)) {
    throw invalid('a resource key must be a well-formed string (no lone surrogates)', { key: typeof key === 'string' ? cut(key) : key });
  }
  // ≤ 170 UTF-16 units is ≤ 510 bytes: no need to count.
  if (key.length > MAX_KEY_BYTES / 3) {
    const bytes = key.length > MAX_KEY_BYTES ? key.length : utf8Length(key, MAX_KEY_BYTES);
    if (bytes > MAX_KEY_BYTES) {
      throw invalid(
        `a resource key is at most ${MAX_KEY_BYTES} UTF-8 bytes; ${JSON.stringify(cut(key))} is ${key.length > MAX_KEY_BYTES ? 'longer' : bytes + ' bytes'}`,
        { key: cut(key), keyBytes: utf8Length(key, Infinity) },
      );
    }
  }
}

/** A printable message for any thrown value (its toString may throw too). */
export function messageOf(cause) {
  if (cause instanceof Error) return cause.message;
  try {
    return String(cause);
  } catch {
    return 'a non-printable value';
  }
}

/** Whether a host error says the commit may have landed (`{ commitUnknown: true }`). */
export function marksCommitUnknown(cause) {
  return cause !== null && typeof cause === 'object' && cause.commitUnknown === true;
}

function isThenable(value) {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof value.then === 'function';
}

/** What `withTimeout` resolves to when the host did not answer in time. */
export const TIMED_OUT = Symbol('timed out');

/** Awaits a host callback's result, giving up after `ms` (when set) with TIMED_OUT. */
export function withTimeout(result, ms) {
  if (ms === undefined || !isThenable(result)) return result;
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(resolve, ms, TIMED_OUT);
  });
  return Promise.race([result, timeout]).finally(() => clearTimeout(timer));
}

/** The longest timer Node and browsers honour (2^31−1 ms); longer ones fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Throws INVALID_ARGUMENT for an option name that is not in `known` (a typo must not silently turn a check off). */
export function checkOptions(options, known, what) {
  for (const name of Object.keys(options)) {
    if (!known.includes(name)) {
      throw invalid(`unknown ${what} option ${JSON.stringify(name)} (known: ${known.join(', ')})`, { option: name });
    }
  }
}

/** The options both gates take (`Gate` adds `maxRetries` and `commitTimeoutMs`). */
export const GATE_OPTIONS = ['sameEpoch', 'opWindow', 'onVerdict', 'requireSigned', 'keys', 'retired', 'scope', 'higherEpoch'];
