// fencegate/deno-kv — a compare-and-set host store on Deno KV (`Deno.openKv`).
//
// One KV entry per resource key, `[...prefix, key]` → `{ state, value }`: the
// fence state as its versioned JSON text and the value as codec text (null =
// no value). State and value are one entry, so they change together. The
// entry's versionstamp is the version: `commit` is one atomic operation,
// `kv.atomic().check({ key, versionstamp: expected }).set(key, …)`, which Deno
// KV refuses (`ok: false`) when the entry changed since `load` read it (or
// exists, when `expected` is null): the gate reloads and decides again.
//
// Values go through a codec (default `valueCodec`, docs/stores.md "Values").
import { valueCodec } from '../lib/codec.mjs';
import { FencegateError } from '../lib/errors.mjs';
import { codecOf, encodeWith, encodedOf, loadedRecord, storeOptions, CODEC_OPTIONS } from './support.mjs';

const invalid = (message, details) => new FencegateError('INVALID_ARGUMENT', message, details);
const PART = (p) => ['string', 'number', 'bigint', 'boolean'].includes(typeof p) || p instanceof Uint8Array;

export class DenoKvStore {
  #kv;
  #prefix;
  #encode;
  #decode;

  constructor(kv, options = {}) {
    if (kv === null || typeof kv !== 'object' || typeof kv.atomic !== 'function' || typeof kv.get !== 'function') {
      throw invalid('DenoKvStore needs an open Deno.Kv (await Deno.openKv(path))');
    }
    options = storeOptions(options, 'DenoKvStore', { prefix: null, ...CODEC_OPTIONS });
    const prefix = options.prefix ?? ['fencegate'];
    if (!Array.isArray(prefix) || prefix.length === 0 || !prefix.every(PART)) {
      throw invalid('prefix must be a non-empty Deno KV key prefix (an array of strings, numbers, bigints, booleans or Uint8Arrays)', {
        option: 'prefix',
      });
    }
    this.#kv = kv;
    this.#prefix = [...prefix];
    [this.#encode, this.#decode] = codecOf(options, valueCodec);
  }

  /** The Deno KV key of a resource key: `[...prefix, key]`. */
  kvKey(key) {
    return [...this.#prefix, key];
  }

  encodeValue(value) {
    return encodeWith(this.#encode, value);
  }

  async load(key) {
    const e = await this.#kv.get(this.kvKey(key), { consistency: 'strong' });
    if (e.versionstamp === null) return null;
    return loadedRecord(e.value.state, e.versionstamp, e.value.value, this.#decode);
  }

  async commit(key, expectedVersion, nextState, change) {
    const k = this.kvKey(key);
    let value = null;
    if (change.kind === 'set') value = encodedOf(this, change);
    else if (change.kind === 'none') {
      // the value stays: carried over from the entry the version names
      if (expectedVersion !== null) {
        const e = await this.#kv.get(k, { consistency: 'strong' });
        if (e.versionstamp !== expectedVersion) return false;
        value = e.value.value;
      }
    }
    const r = await this.#kv.atomic().check({ key: k, versionstamp: expectedVersion }).set(k, { state: JSON.stringify(nextState), value }).commit();
    return r.ok === true;
  }
}
