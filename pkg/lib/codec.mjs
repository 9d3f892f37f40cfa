// Value codecs (docs/decisions/value-codec.md): how a host store turns a protected value into text
// and back. The contract every codec meets: `decode(encode(v))` is identical
// to `v` (same types, same members, same order), or `encode` refuses `v` with
// INVALID_ARGUMENT and a path to the part it cannot keep. Never a silent change.
//
//   valueCodec  the default of the SQLite, Redis and PostgreSQL stores. A value
//               plain JSON keeps exactly is stored as plain JSON text (the text
//               today's stores wrote); anything else that structured clone keeps
//               (Map, Set, Date, BigInt, NaN, ±Infinity, -0, undefined members,
//               sparse arrays, RegExp, typed arrays, repeated references and
//               cycles, …) as `devalue:` + devalue text. Refused: functions,
//               symbols, class instances, properties JSON and devalue would drop.
//   jsonCodec   strict JSON: stores only what JSON keeps exactly; refuses the rest.
//
// Both decode both forms, so a store can switch codec without losing rows.
// devalue (MIT, github.com/sveltejs/devalue) is bundled into dist/devalue.mjs at build.
import { stringify as devalueStringify, parse as devalueParse } from '../dist/devalue.mjs';
import { FencegateError } from './errors.mjs';

/** The prefix of values stored in devalue form (plain JSON text never starts with `d`). */
export const DEVALUE_PREFIX = 'devalue:';

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const MAP_VALUE = Symbol('map value');
const MAP_KEY = Symbol('map key');
const SET_ITEM = Symbol('set item');

function formatKey(k) {
  switch (typeof k) {
    case 'string':
      return JSON.stringify(k);
    case 'number':
      return Object.is(k, -0) ? '-0' : String(k);
    case 'bigint':
      return `${k}n`;
    case 'boolean':
    case 'undefined':
      return String(k);
    default:
      return k === null ? 'null' : '…';
  }
}

/** `value.items[3]`, `value["a b"]`, `value.m.get("k")`, `value.m.keys()[0]`, `value.s.values()[2]`. */
function formatPath(segments) {
  let out = 'value';
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i];
    if (s === MAP_VALUE) out += `.get(${formatKey(segments[++i])})`;
    else if (s === MAP_KEY) out += `.keys()[${segments[++i]}]`;
    else if (s === SET_ITEM) out += `.values()[${segments[++i]}]`;
    else if (typeof s === 'number') out += `[${s}]`;
    else out += IDENT.test(s) ? `.${s}` : `[${JSON.stringify(s)}]`;
  }
  return out;
}

class Refusal extends Error {}

// Prototypes of the built-in types devalue keeps exactly (a subclass is refused:
// it would come back as its base class).
const RICH = new Map([
  [Map.prototype, 'Map'],
  [Set.prototype, 'Set'],
  [Date.prototype, 'Date'],
  [RegExp.prototype, 'RegExp'],
  [Number.prototype, 'a Number object'],
  [String.prototype, 'a String object'],
  [Boolean.prototype, 'a Boolean object'],
  [BigInt.prototype, 'a BigInt object'],
  [ArrayBuffer.prototype, 'ArrayBuffer'],
  [DataView.prototype, 'DataView'],
]);
for (const T of [
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
  globalThis.Float16Array,
]) {
  if (typeof T === 'function') RICH.set(T.prototype, T.name);
}
for (const name of ['URL', 'URLSearchParams']) {
  if (typeof globalThis[name] === 'function') RICH.set(globalThis[name].prototype, name);
}
// Built-ins whose own enumerable properties would be dropped: refuse those
// properties. Every kept built-in but the typed arrays, whose own names include
// every index (finding a named one costs a pass over all of them: they are
// dropped, as structured clone drops them; docs/stores.md "Values").
const TYPED_ARRAY = Object.getPrototypeOf(Uint8Array.prototype);
const NO_EXTRA_PROPS = new Set([...RICH.keys()].filter((p) => Object.getPrototypeOf(p) !== TYPED_ARRAY));

/** The first own enumerable string member of a kept built-in (a String object's index members are its text, not members). */
function extraMember(v, proto) {
  const keys = Object.keys(v);
  if (proto !== String.prototype) return keys[0];
  const n = String.prototype.valueOf.call(v).length;
  return keys.find((k) => !(String(k >>> 0) === k && k >>> 0 < n));
}

function instanceName(v, proto) {
  if (v instanceof Error) return `an Error (${v.name})`;
  if (typeof v.then === 'function') return 'a Promise or thenable';
  let name;
  try {
    name = proto && typeof proto.constructor === 'function' ? proto.constructor.name : '';
  } catch {
    name = '';
  }
  return name ? `an instance of ${name}` : 'an object with a non-plain prototype';
}

function enumerableSymbol(v) {
  for (const s of Object.getOwnPropertySymbols(v)) {
    if (Object.prototype.propertyIsEnumerable.call(v, s)) return s;
  }
  return undefined;
}

// Copies of the built-ins whose content lives in internal slots, made through
// the intrinsic methods (an own property shadowing `getTime` or `valueOf`
// changes nothing). Typed arrays, ArrayBuffer, DataView, URL and
// URLSearchParams are kept as they are: no property of theirs is read here.
const getTime = Date.prototype.getTime;
const isEnumerable = Object.prototype.propertyIsEnumerable;
const regexpSource = Object.getOwnPropertyDescriptor(RegExp.prototype, 'source').get;
const regexpFlags = Object.getOwnPropertyDescriptor(RegExp.prototype, 'flags').get;
const BOXED = new Map([
  [Number.prototype, (v) => Object(Number.prototype.valueOf.call(v))],
  [String.prototype, (v) => Object(String.prototype.valueOf.call(v))],
  [Boolean.prototype, (v) => Object(Boolean.prototype.valueOf.call(v))],
  [BigInt.prototype, (v) => Object(BigInt.prototype.valueOf.call(v))],
  [Date.prototype, (v) => new Date(getTime.call(v))],
  [RegExp.prototype, (v) => new RegExp(regexpSource.call(v), regexpFlags.call(v))],
]);

/** Sets own data property `k` of a copy (`__proto__` too, as an own member, not the prototype). */
function put(out, k, x) {
  if (k === '__proto__') Object.defineProperty(out, k, { value: x, enumerable: true, writable: true, configurable: true });
  else out[k] = x;
}

/**
 * Walks `value` once, reading every property (getter, Proxy trap) exactly
 * once, and answers `{ json, snapshot }`: whether plain JSON keeps it exactly,
 * and a copy made only of what was read (plain data properties, new Maps and
 * Sets, shared references and cycles kept) which is what gets encoded — so a
 * getter or a Proxy that answers differently on a second read cannot make the
 * stored text differ from the value that was checked. Throws a Refusal (path,
 * what) for a part no codec of this module keeps. `strict` (jsonCodec)
 * refuses at the first part JSON would change.
 */
function classify(value, strict) {
  const path = [];
  const copies = new Map(); // every object met → its copy: a second meeting is a shared reference
  const open = new Set(); // the objects on the current path: meeting one again is a cycle
  let json = true;
  const refuse = (what) => {
    const e = new Refusal(what);
    e.path = formatPath(path);
    throw e;
  };
  const rich = (what) => {
    if (strict) refuse(what);
    json = false;
  };
  const walk = (v) => {
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return v;
      case 'number':
        if (Number.isFinite(v)) {
          if (Object.is(v, -0)) rich('-0');
          return v;
        }
        rich(Number.isNaN(v) ? 'NaN' : v > 0 ? 'Infinity' : '-Infinity');
        return v;
      case 'bigint':
        rich('BigInt');
        return v;
      case 'undefined':
        rich('undefined');
        return v;
      case 'function':
        return refuse('a function');
      case 'symbol':
        return refuse('a symbol');
      default:
        break;
    }
    if (v === null) return v;
    if (open.has(v)) {
      rich('a cycle (a reference to an object that contains it)');
      return copies.get(v);
    }
    const copy = copies.get(v);
    if (copy !== undefined) {
      // JSON would write a second copy: equal, but no longer the same object.
      if (!strict) json = false;
      return copy;
    }
    open.add(v);
    const out = walkObject(v);
    open.delete(v);
    return out;
  };
  // The property `k` of `v`, read once (under its path: a getter that throws is refused there) and walked.
  const child = (v, k, segment) => {
    path.push(segment);
    const out = walk(v[k]);
    path.pop();
    return out;
  };
  // The own enumerable string keys, from one `ownKeys` (a Proxy answering
  // differently on a second call cannot make the keys checked differ from the
  // keys copied); an enumerable symbol-keyed property is refused.
  const keysOf = (v) => {
    const keys = [];
    for (const k of Reflect.ownKeys(v)) {
      if (!isEnumerable.call(v, k)) continue;
      if (typeof k === 'symbol') refuse('a symbol-keyed property');
      keys.push(k);
    }
    return keys;
  };
  const walkObject = (v) => {
    const proto = Object.getPrototypeOf(v);
    if (Array.isArray(v)) {
      if (proto !== Array.prototype) return refuse(instanceName(v, proto));
      const keys = keysOf(v);
      const length = v.length;
      // Integer keys come first, ascending: length keys ending in length−1 are exactly 0..length−1.
      const dense = keys.length === length && (length === 0 || keys[length - 1] === String(length - 1));
      if (!dense) {
        for (const k of keys) {
          if (String(k >>> 0) !== k || k >>> 0 === 2 ** 32 - 1 || k >>> 0 >= length) {
            path.push(k);
            refuse('a named property on an array (neither JSON nor devalue keeps it)');
          }
        }
        rich('a sparse array');
      }
      const out = new Array(length);
      copies.set(v, out);
      for (const k of keys) {
        const i = Number(k);
        out[i] = child(v, k, i);
      }
      return out;
    }
    if (proto === Object.prototype || proto === null) {
      if (proto === null) rich('an object with a null prototype');
      const keys = keysOf(v);
      const out = proto === null ? Object.create(null) : {};
      copies.set(v, out);
      for (const k of keys) put(out, k, child(v, k, k));
      return out;
    }
    const name = RICH.get(proto);
    if (name === undefined) return refuse(instanceName(v, proto));
    rich(name);
    if (NO_EXTRA_PROPS.has(proto)) {
      const extra = extraMember(v, proto);
      if (extra !== undefined) {
        path.push(extra);
        refuse(`a property on ${name} (it would be dropped)`);
      }
      if (enumerableSymbol(v) !== undefined) refuse('a symbol-keyed property');
    }
    if (proto === Map.prototype) {
      const out = new Map();
      copies.set(v, out);
      let i = 0;
      for (const [k, x] of Map.prototype.entries.call(v)) {
        path.push(MAP_KEY, i);
        const key = walk(k);
        path.pop();
        path.pop();
        path.push(MAP_VALUE, k);
        out.set(key, walk(x));
        path.pop();
        path.pop();
        i++;
      }
      return out;
    }
    if (proto === Set.prototype) {
      const out = new Set();
      copies.set(v, out);
      let i = 0;
      for (const x of Set.prototype.values.call(v)) {
        path.push(SET_ITEM, i);
        out.add(walk(x));
        path.pop();
        path.pop();
        i++;
      }
      return out;
    }
    const box = BOXED.get(proto);
    const out = box === undefined ? v : box(v);
    copies.set(v, out);
    return out;
  };
  let snapshot;
  try {
    snapshot = walk(value);
  } catch (e) {
    if (e instanceof Refusal) throw e;
    // a getter that throws, a revoked proxy, a value nested too deeply
    const r = new Refusal(`it could not be read (${e instanceof Error ? e.message : 'a thrown non-Error'})`);
    r.path = formatPath(path);
    throw r;
  }
  return { json, snapshot };
}

function refusal(codecName, r) {
  return new FencegateError('INVALID_ARGUMENT', `${r.path}: ${r.message} is not encodable by the ${codecName}`, {
    path: r.path,
    codec: codecName,
  });
}

/**
 * The text of a value JSON keeps exactly with no walk: a string (lone
 * surrogates too: JSON.stringify escapes them and JSON.parse gives them back),
 * a boolean, null, or a finite number other than -0. Undefined for anything
 * else (objects, and the numbers JSON would change, take the full walk).
 * The common values of a fenced write skip classify's copy (JSON keeps them exactly).
 */
function plainText(value) {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0) ? JSON.stringify(value) : undefined;
    default:
      return value === null ? 'null' : undefined;
  }
}

/** Decodes text written by either codec (or by the JSON stores before these codecs). */
function decode(text) {
  if (typeof text !== 'string') throw new TypeError(`a stored value must be text, got ${typeof text}`);
  return text.startsWith(DEVALUE_PREFIX) ? devalueParse(text.slice(DEVALUE_PREFIX.length)) : JSON.parse(text);
}

/** `classify(value, strict)` with a Refusal turned into the INVALID_ARGUMENT of the codec named `codec`. */
function classifyFor(codec, value, strict) {
  try {
    return classify(value, strict);
  } catch (e) {
    if (e instanceof Refusal) throw refusal(codec, e);
    throw e;
  }
}

/**
 * The default codec: exact round trip or INVALID_ARGUMENT with a path.
 * `encode` gives plain JSON text when JSON keeps the value exactly, else
 * `devalue:` + devalue text.
 */
export const valueCodec = Object.freeze({
  name: 'default codec',
  encode(value) {
    const plain = plainText(value);
    if (plain !== undefined) return plain;
    const c = classifyFor('default codec', value, false);
    // The snapshot, not `value`: every property was read once, by classify.
    if (c.json) return JSON.stringify(c.snapshot);
    try {
      return DEVALUE_PREFIX + devalueStringify(c.snapshot);
    } catch (e) {
      // e.g. an own `__proto__` member beside a Map: devalue refuses what it cannot keep
      const path = `value${e !== null && typeof e === 'object' && typeof e.path === 'string' ? e.path : ''}`;
      throw new FencegateError(
        'INVALID_ARGUMENT',
        `${path}: the default codec cannot keep this value exactly (devalue: ${e instanceof Error ? e.message : String(e)})`,
        { path, codec: 'default codec' },
      );
    }
  },
  decode,
});

/** Strict JSON: plain JSON text for what JSON keeps exactly, INVALID_ARGUMENT with a path for the rest. */
export const jsonCodec = Object.freeze({
  name: 'JSON codec',
  encode(value) {
    return plainText(value) ?? JSON.stringify(classifyFor('JSON codec', value, true).snapshot);
  },
  decode,
});
