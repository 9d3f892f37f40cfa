// Value codecs (issue 21): how a host store turns a protected value into text
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
// Built-ins whose own enumerable properties would be dropped: refuse those properties.
const NO_EXTRA_PROPS = new Set([Map.prototype, Set.prototype, Date.prototype, RegExp.prototype]);

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

/**
 * Walks `value` and answers whether plain JSON keeps it exactly; throws a
 * Refusal (path, what) for a part no codec of this module keeps. `strict`
 * (jsonCodec) refuses at the first part JSON would change.
 */
function classify(value, strict) {
  const path = [];
  const seen = new Set(); // every object met: a second meeting is a shared reference
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
        return;
      case 'number':
        if (Number.isFinite(v)) {
          if (Object.is(v, -0)) rich('-0');
          return;
        }
        return rich(Number.isNaN(v) ? 'NaN' : v > 0 ? 'Infinity' : '-Infinity');
      case 'bigint':
        return rich('BigInt');
      case 'undefined':
        return rich('undefined');
      case 'function':
        return refuse('a function');
      case 'symbol':
        return refuse('a symbol');
      default:
        break;
    }
    if (v === null) return;
    if (open.has(v)) return rich('a cycle (a reference to an object that contains it)');
    if (seen.has(v)) {
      // JSON would write a second copy: equal, but no longer the same object.
      if (!strict) json = false;
      return;
    }
    seen.add(v);
    open.add(v);
    walkObject(v);
    open.delete(v);
  };
  const walkObject = (v) => {
    const proto = Object.getPrototypeOf(v);
    if (Array.isArray(v)) {
      if (proto !== Array.prototype) return refuse(instanceName(v, proto));
      const keys = Object.keys(v);
      // Integer keys come first, ascending: length keys ending in length−1 are exactly 0..length−1.
      const dense = keys.length === v.length && (v.length === 0 || keys[v.length - 1] === String(v.length - 1));
      if (!dense) {
        let present = 0;
        for (const k of keys) {
          if (String(k >>> 0) !== k || k >>> 0 === 2 ** 32 - 1) {
            path.push(k);
            refuse('a named property on an array (neither JSON nor devalue keeps it)');
          }
          present++;
        }
        if (present !== v.length) rich('a sparse array');
      }
      if (enumerableSymbol(v) !== undefined) refuse('a symbol-keyed property');
      if (dense) {
        for (let i = 0; i < v.length; i++) {
          path.push(i);
          walk(v[i]);
          path.pop();
        }
      } else {
        for (const k of keys) {
          const i = Number(k);
          path.push(i);
          walk(v[i]);
          path.pop();
        }
      }
      return;
    }
    if (proto === Object.prototype || proto === null) {
      if (proto === null) rich('an object with a null prototype');
      if (enumerableSymbol(v) !== undefined) refuse('a symbol-keyed property');
      for (const k of Object.keys(v)) {
        path.push(k);
        walk(v[k]);
        path.pop();
      }
      return;
    }
    const name = RICH.get(proto);
    if (name === undefined) return refuse(instanceName(v, proto));
    rich(name);
    if (NO_EXTRA_PROPS.has(proto)) {
      const extra = Object.keys(v)[0];
      if (extra !== undefined) {
        path.push(extra);
        refuse(`a property on ${name} (it would be dropped)`);
      }
      if (enumerableSymbol(v) !== undefined) refuse('a symbol-keyed property');
    }
    if (proto === Map.prototype) {
      let i = 0;
      for (const [k, x] of v) {
        path.push(MAP_KEY, i);
        walk(k);
        path.pop();
        path.pop();
        path.push(MAP_VALUE, k);
        walk(x);
        path.pop();
        path.pop();
        i++;
      }
    } else if (proto === Set.prototype) {
      let i = 0;
      for (const x of v) {
        path.push(SET_ITEM, i);
        walk(x);
        path.pop();
        path.pop();
        i++;
      }
    }
  };
  try {
    walk(value);
  } catch (e) {
    if (e instanceof Refusal) throw e;
    // a getter that throws, a revoked proxy, a value nested too deeply
    const r = new Refusal(`it could not be read (${e instanceof Error ? e.message : 'a thrown non-Error'})`);
    r.path = formatPath(path);
    throw r;
  }
  return json;
}

function refusal(codecName, r) {
  return new FencegateError('INVALID_ARGUMENT', `${r.path}: ${r.message} is not encodable by the ${codecName}`, {
    path: r.path,
    codec: codecName,
  });
}

/** Decodes text written by either codec (or by the JSON stores before issue 21). */
function decode(text) {
  if (typeof text !== 'string') throw new TypeError(`a stored value must be text, got ${typeof text}`);
  return text.startsWith(DEVALUE_PREFIX) ? devalueParse(text.slice(DEVALUE_PREFIX.length)) : JSON.parse(text);
}

/**
 * The default codec: exact round trip or INVALID_ARGUMENT with a path.
 * `encode` gives plain JSON text when JSON keeps the value exactly, else
 * `devalue:` + devalue text.
 */
export const valueCodec = Object.freeze({
  name: 'default codec',
  encode(value) {
    let json;
    try {
      json = classify(value, false);
    } catch (e) {
      if (e instanceof Refusal) throw refusal('default codec', e);
      throw e;
    }
    if (json) return JSON.stringify(value);
    try {
      return DEVALUE_PREFIX + devalueStringify(value);
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
    try {
      classify(value, true);
    } catch (e) {
      if (e instanceof Refusal) throw refusal('JSON codec', e);
      throw e;
    }
    return JSON.stringify(value);
  },
  decode,
});
