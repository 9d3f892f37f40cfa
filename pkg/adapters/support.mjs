// Shared by the shipped store adapters (sqlite, redis, postgres, mysql): the value
// codec options and the refusal of a value the codec cannot keep (issue 21).
import { FencegateError } from '../lib/errors.mjs';

function invalid(message, details) {
  return new FencegateError('INVALID_ARGUMENT', message, details);
}

function kindOf(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v;
}

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
export function checkMembers(options, what, types) {
  const known = Object.keys(types).join(', ');
  const copy = {};
  let name;
  try {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw invalid(`${what} options must be an object`, { options });
    }
    const names = [];
    for (const n in options) names.push(n);
    for (name of names) {
      if (!Object.prototype.hasOwnProperty.call(types, name)) {
        throw invalid(`unknown ${what} option ${JSON.stringify(name)} (known: ${known})`, { option: name });
      }
      const want = types[name];
      const v = options[name];
      if (v === undefined) continue;
      copy[name] = v;
      if (want === null) continue;
      const ok = want === 'array' ? Array.isArray(v) : want === 'object' ? v !== null && typeof v === 'object' : typeof v === want;
      if (!ok) throw invalid(`${what} option ${name} must be ${/^[aeiou]/.test(want) ? 'an' : 'a'} ${want}, got ${kindOf(v)}`, { option: name, [name]: v });
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

/**
 * The options of the hono/express `fencing()` middleware checked at the call:
 * `{ gate, key, options }` (`options`: the reply options, headers checked too).
 * `keyOf`: what `key` is a function of, for the message.
 */
export function fencingOptions(fencing, keyOf) {
  const { gate, key, ...options } = checkMembers(fencing, 'fencing', { gate: 'object', key: 'function', headers: 'object', typeBase: 'string', retryAfter: 'number' });
  if (options.headers !== undefined) options.headers = checkMembers(options.headers, 'fencing headers', { token: 'string', opId: 'string', holder: 'string' });
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
