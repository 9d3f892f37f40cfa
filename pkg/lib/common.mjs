// Small helpers shared by the JS API modules: argument errors, readiness,
// token canonical form, and the host-callback plumbing (timeouts, unknown commits).
import { FencegateError } from './errors.mjs';
import { ready, MAX_KEY_BYTES } from './runtime.mjs';
import { plainObject } from '../adapters/support.mjs';

export { plainObject };

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

/** The longest text a description quotes from a user value, in UTF-16 units. */
const DESCRIBE_MAX = 80;

/**
 * A short, printable description of ANY value for error messages. It never
 * calls the value's own conversions (`toString`, `valueOf`,
 * `Symbol.toPrimitive`, `toJSON`), so an object without a prototype, a Proxy,
 * a symbol or an object whose conversion throws are all described, and the
 * library's own error is never replaced by a foreign TypeError. Only the
 * `typeof` of objects and functions is told; strings and big numbers are cut.
 */
export function describe(value) {
  switch (typeof value) {
    case 'string': {
      const cut = value.length > DESCRIBE_MAX;
      return JSON.stringify(cut ? value.slice(0, DESCRIBE_MAX) : value) + (cut ? ` (cut; ${value.length} units)` : '');
    }
    case 'number':
      return Object.is(value, -0) ? '-0' : `${value}`;
    case 'bigint': {
      const text = `${value}`; // a primitive's own ToString: no user code runs
      return text.length > DESCRIBE_MAX ? `a bigint of ${text.length} digits` : `${text}n`;
    }
    case 'boolean':
      return value ? 'true' : 'false';
    case 'undefined':
      return 'undefined';
    case 'symbol':
      return 'a symbol';
    case 'function':
      return 'a function';
    default:
      if (value === null) return 'null';
      try {
        if (Array.isArray(value)) return 'an array';
      } catch {
        // a revoked Proxy
      }
      return 'an object';
  }
}

/**
 * A printable message for any thrown value: an Error's (or error-like
 * object's) string `message`, a thrown string as is, else `describe(cause)`.
 * Never throws, whatever the value's getters or conversions do.
 */
export function messageOf(cause) {
  if (typeof cause === 'string') return cause;
  if (cause !== null && typeof cause === 'object') {
    try {
      const m = cause.message;
      if (typeof m === 'string') return m;
    } catch {
      return 'an error whose message cannot be read';
    }
  }
  return describe(cause);
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

/**
 * Throws INVALID_ARGUMENT for an option name that is not in `known` (a typo
 * must not silently turn a check off). Every enumerable name is checked, own or
 * inherited (`for…in`). Call it before anything is read or written. The
 * message names the unknown member and lists the known ones. Returns a plain
 * copy of the known members (each read once; absent or `undefined` ones left
 * out), which the caller reads instead of `options`; a member or trap that
 * throws is INVALID_ARGUMENT (`unreadable`), with nothing changed.
 */
export function checkOptions(options, known, what, prefix = '') {
  let names;
  try {
    if (!plainObject(options)) {
      throw invalid(`${prefix ? prefix.slice(0, -1) : `${what} options`} must be a plain object { ${known.join(', ')} }, got ${describeKind(options)}`, prefix ? { option: prefix.slice(0, -1), options } : { options });
    }
    names = [];
    for (const name in options) names.push(name);
  } catch (cause) {
    if (cause instanceof FencegateError) throw cause;
    throw unreadable(what, cause);
  }
  for (const name of names) {
    if (!known.includes(name)) {
      throw invalid(`unknown ${what} option ${JSON.stringify(prefix + name)} (known: ${known.join(', ')})`, { option: name, path: prefix + name });
    }
  }
  // What was checked is what is used: each known member read once, here.
  const copy = {};
  for (const name of known) {
    let v;
    try {
      v = options[name];
    } catch (cause) {
      throw unreadable(what, cause, name);
    }
    if (v !== undefined) copy[name] = v;
  }
  return copy;
}

/** `describe(v)`, naming the built-in kind of an object that is not a plain one (a Map, a Date…). */
export function describeKind(v) {
  try {
    if (v !== null && typeof v === 'object' && !Array.isArray(v) && !plainObject(v)) return 'an object of a built-in kind (Map, Set, Date, RegExp, a boxed primitive, bytes)';
  } catch {
    // a revoked Proxy: describe says what it can
  }
  return describe(v);
}

/**
 * INVALID_ARGUMENT for an options object that threw while fencegate read it (a
 * getter, a Proxy trap, a revoked Proxy): never the raw error without a code.
 */
export function unreadable(what, cause, option) {
  const member = option === undefined ? 'its members' : `option ${JSON.stringify(option)}`;
  return invalid(`${what} options: reading ${member} threw: ${messageOf(cause)}`, option === undefined ? { cause } : { option, cause });
}

/** `options` when it is an object whose names are all in `known`; INVALID_ARGUMENT otherwise. `undefined`/`null` give `{}` when `optional`. */
export function optionsOf(options, known, what, optional = true) {
  if ((options === undefined || options === null) && optional) return {};
  if (options === null || typeof options !== 'object') {
    throw invalid(`${what} options must be an object { ${known.join(', ')} }, got ${describe(options)}`, { options });
  }
  checkOptions(options, known, what);
  return options;
}

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
