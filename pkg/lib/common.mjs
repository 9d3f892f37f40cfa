// Small helpers shared by the JS API modules: argument errors, readiness,
// token canonical form, and the host-callback plumbing (timeouts, unknown commits).
import { FencegateError } from './errors.mjs';
import { ready, MAX_KEY_BYTES } from './runtime.mjs';
import { invalid, describe, describeKind, messageOf, plainObject, unreadable, checkOptions } from './options.mjs';

// The option checks and argument errors live in options.mjs (shared with the adapters and integrations).
export { invalid, describe, describeKind, messageOf, plainObject, unreadable, checkOptions };

export { MAX_U64 } from './exchange.mjs';
export const MAX_SAFE = 9007199254740991n;

/** An epoch in canonical form: a bigint ≤ 2^53−1 becomes a number. */
export function canonical(token) {
  return typeof token === 'bigint' && token <= MAX_SAFE ? Number(token) : token;
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

/** A lone surrogate: a high one not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Whether `s` is a string UTF-8 can carry (no lone surrogates): what
 * `String.prototype.isWellFormed` answers, and the same on runtimes without
 * it (Node 18), where a lone surrogate would otherwise be written as U+FFFD
 * and two different texts would become one.
 */
export function wellFormed(s) {
  if (typeof s !== 'string') return false;
  return typeof s.isWellFormed === 'function' ? s.isWellFormed() : !LONE_SURROGATE.test(s);
}

export { MAX_KEY_BYTES };

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

/** The Issuer's default `keyPrefix`: resource keys never start with it (docs/issuer.md). */
export const ISSUER_PREFIX = 'issuer:';

/**
 * Throws INVALID_ARGUMENT unless `key` is a non-empty well-formed string of at
 * most MAX_KEY_BYTES UTF-8 bytes that does not start with the Issuer's default
 * key prefix `issuer:`. A long key is not quoted whole: the message and
 * `key` carry its first 40 characters, `keyBytes` its length.
 */
export function checkKey(key) {
  if (!wellFormed(key)) {
    throw invalid('a resource key must be a well-formed string (no lone surrogates)', { key: typeof key === 'string' ? cut(key) : key });
  }
  if (key.length === 0) throw invalid('a resource key must not be empty (it is also the default scope of signed tokens, which is never empty)', { key });
  if (key.startsWith(ISSUER_PREFIX)) {
    throw invalid(
      `resource keys starting with ${JSON.stringify(ISSUER_PREFIX)} are reserved for the Issuer's records (a store shared with an Issuer would mix the two); got ${JSON.stringify(cut(key))}`,
      { key: cut(key) },
    );
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

/** Whether a host error says the commit may have landed (`{ commitUnknown: true }`). */
export function marksCommitUnknown(cause) {
  if (cause === null || typeof cause !== 'object') return false;
  try {
    return cause.commitUnknown === true;
  } catch {
    return false; // a getter that throws says nothing: a plain STORE_ERROR
  }
}

export function isThenable(value) {
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

/** The options both gates take (`Gate` adds `maxRetries` and `commitTimeoutMs`). */
export const GATE_OPTIONS = ['sameEpoch', 'opWindow', 'onVerdict', 'requireSigned', 'keys', 'retired', 'scope', 'higherEpoch'];

/**
 * A validated copy of a list argument: `list` must be an array; each element
 * is read exactly once (index by index, so holes of a sparse array are seen as
 * `undefined`, not skipped as `forEach`/`some` would), checked with `check`,
 * and the copy is what the caller then uses. What was validated is what is
 * used: no hole, getter or later change of `list` can slip past the check.
 */
export function listOf(list, what, check) {
  let ok = false;
  try {
    ok = Array.isArray(list);
  } catch {
    // a revoked Proxy
  }
  if (!ok) throw invalid(`${what} must be an array`, { [what]: list });
  const n = list.length;
  const copy = [];
  for (let i = 0; i < n; i++) {
    if (!Object.prototype.hasOwnProperty.call(list, i)) {
      throw invalid(`${what}[${i}] is missing (a sparse array); nothing was done`, { [what]: list, index: i });
    }
    const item = list[i];
    check(item, i);
    copy.push(item);
  }
  return copy;
}

/** How deep an object-form state may nest (the formats need 3; the text decoder is stricter). */
const MAX_STATE_DEPTH = 16;

class NotJson {
  constructor(path, why) {
    this.path = path;
    this.why = why;
  }
}

function isPlainObject(o) {
  const proto = Object.getPrototypeOf(o);
  // null-prototype objects, and Object.prototype of this or another realm (IndexedDB, vm)
  return proto === null || Object.getPrototypeOf(proto) === null;
}

function ownData(o, name, path) {
  const d = Object.getOwnPropertyDescriptor(o, name);
  if (d === undefined) throw new NotJson(path, 'is missing');
  if (!('value' in d)) throw new NotJson(path, 'is an accessor (getter/setter), not a data member');
  if (!d.enumerable) throw new NotJson(path, 'is not enumerable');
  return d.value;
}

function jsonOf(v, path, depth) {
  switch (typeof v) {
    case 'string':
      if (!wellFormed(v)) throw new NotJson(path, 'is a string with a lone surrogate');
      return JSON.stringify(v); // a primitive string: no toJSON is looked up
    case 'number':
      if (!Number.isFinite(v)) throw new NotJson(path, `is ${describe(v)}, not a finite number`);
      return Object.is(v, -0) ? '-0' : JSON.stringify(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'object':
      if (v === null) return 'null';
      break;
    default:
      throw new NotJson(path, `is ${describe(v)}, not a JSON value`);
  }
  if (depth >= MAX_STATE_DEPTH) throw new NotJson(path, `nests deeper than ${MAX_STATE_DEPTH} levels`);
  if (Array.isArray(v)) {
    const n = v.length;
    const names = Reflect.ownKeys(v);
    if (names.length !== n + 1) throw new NotJson(path, 'is an array with holes or extra members');
    const parts = [];
    for (let i = 0; i < n; i++) parts.push(jsonOf(ownData(v, String(i), `${path}[${i}]`), `${path}[${i}]`, depth + 1));
    return `[${parts.join(',')}]`;
  }
  if (!isPlainObject(v)) throw new NotJson(path, 'is not a plain object or array (a class instance, Date, Map…)');
  const parts = [];
  for (const name of Reflect.ownKeys(v)) {
    if (typeof name !== 'string') throw new NotJson(path, 'has a symbol-named member');
    const p = `${path}.${name}`;
    parts.push(`${jsonOf(name, p, depth)}:${jsonOf(ownData(v, name, p), p, depth + 1)}`);
  }
  return `{${parts.join(',')}}`;
}

/**
 * The JSON text of a stored state given in object form (what a `jsonb` column,
 * a Durable Object or IndexedDB hands back), read field by field: only plain
 * objects, arrays, well-formed strings, finite numbers, booleans and null,
 * own enumerable data members only. No `toJSON`, getter or conversion of the
 * value is ever called, and nothing is dropped or replaced (where
 * `JSON.stringify` turns NaN into null and drops undefined members). Which
 * fields a state has is the Rust decoder's business: this only refuses what is
 * not JSON data. Throws CORRUPT_STATE (with `state`, and `key` when given).
 */
export function stateTextOf(state, what, details) {
  try {
    return jsonOf(state, 'state', 0);
  } catch (e) {
    // A getter or Proxy trap of the state that throws is reported as CORRUPT_STATE too, with its error as `cause`.
    const why = e instanceof NotJson ? `${e.path} ${e.why}` : `it could not be read (${messageOf(e)})`;
    throw new FencegateError('CORRUPT_STATE', `${what} is not JSON data: ${why}`, {
      ...details,
      state,
      ...(e instanceof NotJson ? {} : { cause: e }),
    });
  }
}

/** Throws CORRUPT_STATE when a stored state's text has lone surrogates (it would reach Wasm altered). */
export function checkStateText(text, what, details) {
  if (!wellFormed(text)) {
    throw new FencegateError('CORRUPT_STATE', `${what} is text with a lone surrogate`, { ...details, state: text });
  }
  return text;
}

/**
 * The version of a loaded record (null: none); a `version` getter that throws
 * is the store's failure (STORE_ERROR), read once.
 */
export function versionOf(faults, ctx, record) {
  if (record === null || record === undefined) return null;
  try {
    return record.version ?? null;
  } catch (cause) {
    throw faults.store(ctx, 'load', cause);
  }
}

/**
 * `{ version }` of a commit's answer, or null when it names none; a getter
 * that throws reads as "no version" (the caller's COMMIT_UNKNOWN: it may have committed).
 */
export function answeredVersion(answer) {
  if (answer === null || typeof answer !== 'object') return null;
  try {
    const version = answer.version;
    return version === undefined || version === null ? null : { version };
  } catch {
    return null;
  }
}
