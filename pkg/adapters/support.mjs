// Shared by the shipped store adapters: their options, the value codec options,
// the refusal of a value the codec cannot keep, and the records they load and store.
import { FencegateError } from '../lib/errors.mjs';
import { invalid, checkOptions } from '../lib/options.mjs';

/** A store's constructor options: `undefined` gives `{}`; else {@link checkOptions} against `types`. */
export function storeOptions(options, what, types) {
  return options === undefined ? {} : checkOptions(options, types, what);
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
 * when it has one (a gate's and an issuer's: the text as it came from Wasm, no
 * parse and no re-serialisation), else `nextState` as JSON (a caller of the
 * store's `transaction` that answers only the object form).
 */
export function nextStateTextOf(out) {
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

/**
 * INVALID_ARGUMENT for a fenced transaction whose statements ended it themselves (`how`: the
 * statements that end one on this engine): never reported as applied. `cause`: what the
 * statements threw after that, if they did.
 */
export function endedItself(store, how, cause) {
  return invalid(
    `${store}: the statements function ended the transaction itself (${how}); what ran after that ran outside the fence, and this transaction is not reported as applied`,
    cause === undefined ? {} : { cause },
  );
}

/**
 * `step.run(watched.handle)` for a store that watches the handle it gives the statements:
 * `ended()` becomes the error {@link endedItself} builds when `watched.ended` is set, even when
 * the statements threw after ending the transaction.
 */
export async function runWatched(step, watched, ended) {
  try {
    await step.run(watched.handle);
  } catch (e) {
    if (watched.ended) throw ended(e);
    throw e;
  }
  if (watched.ended) throw ended();
}
