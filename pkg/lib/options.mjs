// Options and argument errors, one home for lib/, adapters/ and integrations/:
// INVALID_ARGUMENT, the description of any value for a message, and the option
// checks (every options object of the API, the stores' and the integrations').
// It imports only the error class, so the adapters and integrations bundle it
// beside their own code and share the class with the core.
import { FencegateError } from './errors.mjs';

/** A FencegateError INVALID_ARGUMENT. */
export function invalid(message, details) {
  return new FencegateError('INVALID_ARGUMENT', message, details);
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

/**
 * Whether `v` may be an options object: an object that is not an array and
 * not one of the built-in kinds whose contents live in internal slots (Map,
 * Set, Date, RegExp, boxed primitives, typed arrays, ArrayBuffers), whose entries
 * `for…in` cannot see, so a `Map`'s `opId` would be silently ignored.
 * Class instances and null-prototype objects are objects like any other.
 * Never runs user code but a Proxy's traps (`getPrototypeOf`), which may throw.
 */
export function plainObject(v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  if (proto === null || proto === Object.prototype) return true; // the common case: no brand to test
  return !BUILTIN_KINDS.some((is) => is(v));
}

const brand = (f) => (v) => {
  try {
    f(v);
    return true;
  } catch {
    return false;
  }
};

/** Brand checks of the built-in object kinds (internal slots, not `instanceof` or `Symbol.toStringTag`; no user code runs). */
const BUILTIN_KINDS = [
  brand((v) => Map.prototype.has.call(v)),
  brand((v) => Set.prototype.has.call(v)),
  brand((v) => WeakMap.prototype.has.call(v, {})),
  brand((v) => WeakSet.prototype.has.call(v, {})),
  brand((v) => Date.prototype.getTime.call(v)),
  brand((v) => Number.prototype.valueOf.call(v)),
  brand((v) => String.prototype.valueOf.call(v)),
  brand((v) => Boolean.prototype.valueOf.call(v)),
  brand((v) => Symbol.prototype.valueOf.call(v)),
  brand((v) => BigInt.prototype.valueOf.call(v)),
  brand((v) => Object.getOwnPropertyDescriptor(RegExp.prototype, 'source').get.call(v)),
  brand((v) => Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get.call(v)),
  (v) => ArrayBuffer.isView(v),
];

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

/**
 * `options` checked before anything is done with it: anything but a plain
 * object ({@link plainObject}), or a name that is not in `known` (a typo must
 * not silently keep a default or turn a check off), is INVALID_ARGUMENT; the
 * message names the member (`option`) and lists the known ones. Every
 * enumerable name is checked, own or inherited (`for…in`), before any member
 * is read. `known` is a list of names, or an object name → type ('string' |
 * 'number' | 'boolean' | 'function' | 'object' | 'array', null = any): a
 * member of another type is INVALID_ARGUMENT too (an undefined member is not
 * checked). Returns a plain copy of the known members (each read once, here;
 * absent or `undefined` ones left out), which the caller uses instead of
 * `options`; a getter or Proxy trap that throws is INVALID_ARGUMENT
 * ({@link unreadable}) with it as `cause`. `prefix` names a nested object
 * (`'keys.k1.'`) in messages and in `path`.
 */
export function checkOptions(options, known, what, prefix = '') {
  const types = Array.isArray(known) ? null : known;
  const names = types === null ? known : Object.keys(types);
  let listed;
  try {
    if (!plainObject(options)) {
      throw invalid(`${prefix ? prefix.slice(0, -1) : `${what} options`} must be a plain object, got ${describeKind(options)}`, prefix ? { option: prefix.slice(0, -1), options } : { options });
    }
    listed = [];
    for (const name in options) listed.push(name);
  } catch (cause) {
    if (cause instanceof FencegateError) throw cause;
    throw unreadable(what, cause);
  }
  for (const name of listed) {
    if (!names.includes(name)) {
      throw invalid(`unknown ${what} option ${JSON.stringify(prefix + name)} (known: ${names.join(', ')})`, { option: name, path: prefix + name });
    }
  }
  // What was checked is what is used: each known member read once, here.
  const copy = {};
  for (const name of names) {
    let v;
    try {
      v = options[name];
    } catch (cause) {
      throw unreadable(what, cause, name);
    }
    if (v === undefined) continue;
    const want = types === null ? null : types[name];
    if (want !== null && !(want === 'array' ? Array.isArray(v) : want === 'object' ? v !== null && typeof v === 'object' : typeof v === want)) {
      throw invalid(`${what} option ${prefix}${name} must be ${/^[aeiou]/.test(want) ? 'an' : 'a'} ${want}, got ${typeName(v)}`, { option: name, [name]: v });
    }
    copy[name] = v;
  }
  return copy;
}

/** The type of `v` for a type mismatch: `typeof`, with null, arrays and the built-in object kinds named. */
function typeName(v) {
  if (v === null) return 'null';
  if (typeof v === 'object') return Array.isArray(v) || !plainObject(v) ? describeKind(v) : 'object';
  return typeof v;
}

// HTTP reply and middleware options (fencegate/http, /hono, /express).

/** A header field name (RFC 9110 §5.1: a `token`). */
const HEADER_NAME_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * The header names of HTTP options (`{ token, opId, holder }`), checked once
 * when the options are made: each must be a valid header field name (RFC
 * 9110 token characters, not empty), and no two may name the same header
 * (names are case-insensitive). INVALID_ARGUMENT naming `path.member` otherwise.
 */
export function headerNames(names, what) {
  names = checkOptions(names, { token: 'string', opId: 'string', holder: 'string' }, what);
  const seen = new Map();
  for (const [member, name] of Object.entries(names)) {
    if (!HEADER_NAME_RE.test(name)) {
      throw invalid(`${what}.${member} must be an HTTP header name (letters, digits and !#$%&'*+-.^_\`|~), got ${JSON.stringify(name)}`, { option: `headers.${member}`, [member]: name });
    }
    const lower = name.toLowerCase();
    if (seen.has(lower)) throw invalid(`${what}.${member} and .${seen.get(lower)} name the same header ${JSON.stringify(name)}`, { option: `headers.${member}` });
    seen.set(lower, member);
  }
  return names;
}

/** The reply options' members (fence, fenceReply, verdictReply, errorReply, the middleware). */
export const REPLY_OPTIONS = { headers: 'object', typeBase: 'string', retryAfter: 'number' };

/**
 * Reply options checked (INVALID_ARGUMENT otherwise): `headers` as
 * {@link headerNames}; `retryAfter` a whole number of seconds 0..2^31−1 (RFC
 * 9110 §10.2.3 allows only a non-negative integer: a fraction, a negative
 * number, NaN or Infinity is refused here, never sent); `typeBase` a string.
 */
export function replyOptions(options, what, extra = {}) {
  options = checkOptions(options, { ...extra, ...REPLY_OPTIONS }, what);
  if (options.headers !== undefined) options.headers = headerNames(options.headers, `${what} headers`);
  const r = options.retryAfter;
  if (r !== undefined && !(Number.isSafeInteger(r) && r >= 0 && r <= 2 ** 31 - 1)) {
    throw invalid(`${what} option retryAfter must be a whole number of seconds from 0 to 2147483647 (RFC 9110 Retry-After), got ${Number.isNaN(r) ? 'NaN' : String(r)}`, { option: 'retryAfter', retryAfter: r });
  }
  if (r !== undefined) options.retryAfter = r === 0 ? 0 : r; // -0 is sent as 0
  return options;
}

/**
 * The options of the hono/express `fencing()` middleware checked at the call:
 * `{ gate, key, options }` (`options`: the reply options, checked as {@link replyOptions}).
 * `keyOf`: what `key` is a function of, for the message.
 */
export function fencingOptions(fencing, keyOf) {
  const { gate, key, ...options } = replyOptions(fencing, 'fencing', { gate: 'object', key: 'function' });
  if (gate === null || typeof gate !== 'object' || typeof gate.mark !== 'function') {
    throw invalid('fencing({ gate, key }): gate must be a fencegate MemoryGate or Gate', { option: 'gate' });
  }
  if (typeof key !== 'function') throw invalid(`fencing({ gate, key }): key must be a function of ${keyOf}`, { option: 'key' });
  return { gate, key, options };
}
