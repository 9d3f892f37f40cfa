// Shared by the shipped store adapters (sqlite, redis, postgres, mysql): the value
// codec options and the refusal of a value the codec cannot keep (issue 21).
import { FencegateError } from '../lib/errors.mjs';

function invalid(message, details) {
  return new FencegateError('INVALID_ARGUMENT', message, details);
}

function kindOf(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object' && !plainObject(v)) return 'an object of a built-in kind (Map, Date, a boxed primitive…)';
  return typeof v;
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

/**
 * `options` checked before anything is done with it (shared by the store
 * adapters and the integrations): anything but an object, an unknown name (a
 * typo must not silently keep a default or turn a check off) or a member of
 * the wrong type (`types`: name → 'string' | 'number' | 'boolean' | 'function'
 * | 'object' | 'array', null = any; an undefined member is not checked) is
 * INVALID_ARGUMENT naming the member (`option`) and listing the known ones.
 * Every enumerable name is checked, own or inherited (`for…in`). Returns a
 * plain copy of the members (each read once, here), which the caller uses
 * instead of `options`; a getter or Proxy trap that throws is INVALID_ARGUMENT
 * with it as `cause`.
 */
export function checkMembers(options, what, types, prefix = '') {
  const known = Object.keys(types).join(', ');
  const copy = {};
  let name;
  try {
    if (!plainObject(options)) {
      throw invalid(`${what} options${prefix ? ` ${prefix.slice(0, -1)}` : ''} must be a plain object, got ${kindOf(options)}`, { options });
    }
    const names = [];
    for (const n in options) names.push(n);
    for (name of names) {
      if (!Object.prototype.hasOwnProperty.call(types, name)) {
        throw invalid(`unknown ${what} option ${JSON.stringify(prefix + name)} (known: ${known})`, { option: name, path: prefix + name });
      }
      const want = types[name];
      const v = options[name];
      if (v === undefined) continue;
      copy[name] = v;
      if (want === null) continue;
      const ok = want === 'array' ? Array.isArray(v) : want === 'object' ? v !== null && typeof v === 'object' : typeof v === want;
      if (!ok) throw invalid(`${what} option ${prefix}${name} must be ${/^[aeiou]/.test(want) ? 'an' : 'a'} ${want}, got ${kindOf(v)}`, { option: name, [name]: v });
    }
  } catch (e) {
    if (e instanceof FencegateError) throw e;
    const member = name === undefined ? 'its members' : `option ${JSON.stringify(name)}`;
    throw invalid(`${what} options: reading ${member} threw: ${e instanceof Error ? e.message : String(e)}`, name === undefined ? { cause: e } : { option: name, cause: e });
  }
  return copy;
}

/** A store's constructor options: `undefined` gives `{}`; else {@link checkMembers}. */
export function storeOptions(options, what, types) {
  return options === undefined ? {} : checkMembers(options, what, types);
}

/** A header field name (RFC 9110 §5.1: a `token`). */
const HEADER_NAME_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * The header names of HTTP options (`{ token, opId, holder }`), checked once
 * when the options are made: each must be a valid header field name (RFC
 * 9110 token characters, not empty), and no two may name the same header
 * (names are case-insensitive). INVALID_ARGUMENT naming `path.member` otherwise.
 */
export function headerNames(names, what) {
  names = checkMembers(names, what, { token: 'string', opId: 'string', holder: 'string' });
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
  options = checkMembers(options, what, { ...extra, ...REPLY_OPTIONS });
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

/** The codec members every store's options have; `name` is a codec object's own (`{ ...jsonCodec, table }`), not used. */
export const CODEC_OPTIONS = { encode: 'function', decode: 'function', name: null };

/** `[encode, decode]` from a store's options: both given, or neither (then `fallback`'s). */
export function codecOf(options, fallback) {
  const { encode, decode } = options;
  if (encode === undefined && decode === undefined) return [fallback.encode, fallback.decode];
  if (typeof encode !== 'function' || typeof decode !== 'function') {
    throw invalid('encode and decode come as a pair of functions (a codec): pass both, or neither for the default codec', {
      option: typeof encode !== 'function' ? 'encode' : 'decode',
    });
  }
  return [encode, decode];
}

/**
 * The JSON text to store for a transaction's answer `out`: `nextStateText`
 * when the gate gave it (the state's text as it came from Wasm: no parse and
 * no re-serialisation), else `nextState` as JSON (the issuer, older callers).
 */
export function stateTextOf(out) {
  return typeof out.nextStateText === 'string' ? out.nextStateText : JSON.stringify(out.nextState);
}

/** `options.table` (default `"fencegate"`) checked against the store's identifier pattern `ident`, else INVALID_ARGUMENT. */
export function tableOf(options, ident) {
  const table = options.table ?? 'fencegate';
  if (typeof table !== 'string' || !ident.test(table)) {
    throw invalid(`table must be a plain SQL identifier, got ${typeof table === 'string' ? JSON.stringify(table) : typeof table}`, { table });
  }
  return table;
}

/** `encode(value)` checked: a string, or INVALID_ARGUMENT (the value is refused; nothing is written). */
export function encodeWith(encode, value) {
  let text;
  try {
    text = encode(value);
  } catch (e) {
    if (e instanceof FencegateError) throw e;
    throw invalid(`value: the store's encode refused it: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  if (typeof text !== 'string') throw invalid(`value: the store's encode must return a string, got ${typeof text}`);
  return text;
}

/** The stored text of a `set` change: the text the gate already encoded (`encodeValue`), else encoded now. */
export function encodedOf(store, change) {
  return typeof change.encoded === 'string' ? change.encoded : store.encodeValue(change.value);
}

/**
 * A loaded record `{ state, version, value }` whose value is decoded from its
 * stored `text` when first read (`null`/`undefined`: no value). A write never
 * reads the value it replaces, so a stored value the codec cannot decode (a
 * foreign writer's, another codec's) fails `read` with STORE_ERROR but never
 * changes a write's verdict, with the state cache on or off.
 */
export function loadedRecord(state, version, text, decode) {
  if (text === null || text === undefined) return { state, version, value: undefined };
  let decoded = false;
  let value;
  return {
    state,
    version,
    get value() {
      if (!decoded) {
        value = decode(text);
        decoded = true;
      }
      return value;
    },
  };
}
