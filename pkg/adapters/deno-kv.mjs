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
import { codecOf, encodeWith, encodedOf, loadedRecord, storeOptions, CODEC_OPTIONS } from './support.mjs';
import { invalid } from '../lib/options.mjs';

/**
 * Whether `e` is SQLite's "database is locked" (SQLITE_BUSY) from a commit on a local KV
 * file that another process is writing: the write lock was not taken, nothing was written,
 * the atomic operation may run again.
 */
const busy = (e) => e !== null && typeof e === 'object' && /database is locked/.test(String(e.message));

/** `op.commit()`; SQLite's "database is locked" answers `{ ok: false, busy: true }` (nothing written). */
async function commitOf(op) {
  try {
    return await op.commit();
  } catch (e) {
    if (busy(e)) return { ok: false, busy: true, cause: e };
    throw e;
  }
}
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
    // a commit another process holds the file's write lock against is a lost compare-and-set too: load and decide again
    const r = await commitOf(this.#kv.atomic().check({ key: k, versionstamp: expectedVersion }).set(k, { state: JSON.stringify(nextState), value }));
    return r.ok === true;
  }

  /** INVALID_ARGUMENT when `key` (a Deno KV key of the caller's) lies under this store's prefix: the fence entries are the store's. */
  #ownKey(key) {
    const p = this.#prefix;
    if (Array.isArray(key) && key.length >= p.length && p.every((part, i) => sameKeyPart(part, key[i]))) {
      throw invalid('DenoKvStore: a mutation of the caller under the fence prefix (the fence entries belong to fencegate)', { key: String(key) });
    }
  }

  /**
   * The caller's own checks and mutations in the fence's one atomic operation
   * (Gate.transaction; docs/stores.md "Your own data"): the fence entry is read
   * (strong consistency), decided, and when the verdict applies one
   * `kv.atomic()` gets `check(fence entry's versionstamp)` and `set(fence
   * entry)`; `step.run(op)` then adds the caller's `check`/`set`/`delete`/
   * `sum`/`min`/`max`/`enqueue` (op is a facade of that AtomicOperation
   * without `commit`), and the store commits once. A failed check (the fence
   * entry changed, or one of the caller's) writes nothing and is thrown with
   * `conflict: true`: the gate runs it all again (bounded by maxRetries), as
   * it does for a commit refused with SQLite's "database is locked" (another
   * process writing the same local KV file; nothing written).
   * Answers `{ version }` (the commit's versionstamp) or null (refused).
   */
  async fencedTransaction(key, step) {
    const k = this.kvKey(key);
    const e = await this.#kv.get(k, { consistency: 'strong' });
    const plan = step.decide(e.versionstamp === null ? null : e.value.state);
    if (plan === null) return null;
    const atomic = this.#kv.atomic().check({ key: k, versionstamp: e.versionstamp }).set(k, { state: plan.nextStateText, value: e.versionstamp === null ? null : (e.value.value ?? null) });
    await step.run(this.#facade(atomic));
    const r = await commitOf(atomic);
    if (r.busy === true) {
      throw Object.assign(new Error('DenoKvStore: another process held the KV file\'s write lock ("database is locked"): nothing was written'), { conflict: true, cause: r.cause });
    }
    if (r.ok !== true) {
      throw Object.assign(new Error('DenoKvStore: a check of the atomic operation failed (the fence entry or an entry you checked changed): nothing was written'), { conflict: true });
    }
    return { version: r.versionstamp };
  }

  /** The caller's view of `atomic`: its verbs, chainable, no `commit` (the store commits once, after the body). */
  #facade(atomic) {
    const facade = {};
    const own = (name, keyOf) => (...args) => {
      if (keyOf !== null) this.#ownKey(keyOf(args));
      atomic[name](...args);
      return facade;
    };
    facade.check = own('check', null);
    facade.set = own('set', (a) => a[0]);
    facade.delete = own('delete', (a) => a[0]);
    facade.sum = own('sum', (a) => a[0]);
    facade.min = own('min', (a) => a[0]);
    facade.max = own('max', (a) => a[0]);
    facade.mutate = (...mutations) => {
      for (const m of mutations) this.#ownKey(m?.key);
      atomic.mutate(...mutations);
      return facade;
    };
    facade.enqueue = own('enqueue', null);
    facade.commit = () => {
      throw invalid('DenoKvStore: gate.transaction commits the atomic operation itself, after your body');
    };
    return Object.freeze(facade);
  }

  /**
   * The fence step on an AtomicOperation the caller commits
   * (`const op = kv.atomic(); await gate.fenceIn(op, key, token); op.set(…); await op.commit()`):
   * reads the fence entry (strong consistency) and adds `check(its versionstamp)`
   * and `set(next state)` to `op`, so the caller's commit applies the fence and
   * its mutations together or not at all (`ok: false` when the fence entry
   * changed since: run it again). On a refusal it adds a check no entry can
   * pass (versionstamp 0): even if the caller catches the error and commits,
   * the commit answers `ok: false` and writes nothing.
   * INVALID_ARGUMENT for a handle that is not an AtomicOperation.
   */
  async fenceIn(handle, key, step) {
    if (handle === this.#kv || handle === null || typeof handle !== 'object' || typeof handle.check !== 'function' || typeof handle.set !== 'function' || typeof handle.commit !== 'function') {
      throw invalid('DenoKvStore.fenceIn: the handle must be an AtomicOperation (kv.atomic()) that you commit after it');
    }
    const k = this.kvKey(key);
    const e = await this.#kv.get(k, { consistency: 'strong' });
    const plan = step.decide(e.versionstamp === null ? null : e.value.state);
    if (plan === null) {
      handle.check({ key: k, versionstamp: NEVER });
      return;
    }
    handle.check({ key: k, versionstamp: e.versionstamp }).set(k, { state: plan.nextStateText, value: e.versionstamp === null ? null : (e.value.value ?? null) });
  }
}

// No entry has versionstamp 0 (a commit's versionstamp is above zero): a check on it always fails.
const NEVER = '00000000000000000000';

function sameKeyPart(a, b) {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return a.length === b.length && a.every((x, i) => x === b[i]);
  return typeof a === typeof b && a === b;
}
