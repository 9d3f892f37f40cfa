// fencegate/etcd — a host store on etcd v3 through the npm `etcd3` client.
//
// Each resource key is three etcd keys under a prefix (default "fencegate/"):
//   <prefix>s/<key>   the fence state (fencegate's state text)
//   <prefix>v/<key>   the value (the codec's text; absent = no value)
//   <prefix>c/<key>   the id of the commit that last wrote the record (random)
// The record's version is the state key's mod_revision (etcd's global,
// monotonic revision of its last write; "0" when it does not exist).
// fencegate makes the decision in Wasm; etcd runs a compare-and-set as one
// Txn: `if mod_revision(s/key) == expected then put state, put or delete the
// value, put the commit id`, or nothing. A lost compare-and-set makes the gate
// load, decide again and retry (bounded). Loads read state and value in one
// read-only Txn (one revision, linearizable).
//
// The gate's state cache (docs/decisions/state-cache.md, docs/stores.md "commitFrom") commits with
// `commitFrom`: the same one Txn, its compare being `mod_revision(s/key) ==
// cached version AND value(s/key) == cached state text` (a new key:
// `create_revision(s/key) == 0`), and it answers the revision the Txn wrote
// (the response header's revision: every put of one Txn gets it, so it is the
// state key's new mod_revision, what load returns next). One round trip per
// uncontended write, no load.
//
// Lost replies: the etcd3 client retries a call whose reply was lost
// (UNAVAILABLE, DEADLINE_EXCEEDED, …; by default 3 attempts), so a Txn that
// did commit may be sent again, fail its compare against its own write, and
// answer "not committed". The commit id tells that case apart: when the compare
// fails, the store walks the commit ids written since the expected revision
// (etcd keeps the history until a compaction) and answers true when its own id
// is among them. If it cannot tell (compacted history, more than
// MAX_WALK commits since, or the walk fails), the error is marked `commitUnknown`.
//
// Values go through a codec (default: fencegate's `valueCodec`, docs/stores.md
// "Values"): exact round trip, or INVALID_ARGUMENT before anything is written.
//
// The client is passed in (an `Etcd3`); this module imports only the codec.
import { randomBytes } from 'node:crypto';
import { valueCodec } from '../lib/codec.mjs';
import { codecOf, encodeWith, encodedOf, loadedRecord, storeOptions, CODEC_OPTIONS } from './support.mjs';
import { invalid } from '../lib/options.mjs';

// etcdserverpb Compare.CompareTarget (CREATE, MOD, VALUE) and Compare.CompareResult.EQUAL.
const COMPARE_CREATE = 1;
const COMPARE_MOD = 2;
const COMPARE_VALUE = 3;
const COMPARE_EQUAL = 0;

// How many commits since its load a failed compare-and-set inspects for its own commit id.
const MAX_WALK = 64;

// Errors after which the Txn surely did not commit: etcd refused the request
// itself (bad request or one over its size limits, no space, too many
// requests, permission, auth, compacted revision), or the client was closed
// before sending. Anything else (UNAVAILABLE, DEADLINE_EXCEEDED,
// CANCELLED, INTERNAL, UNKNOWN, a lost connection) may have committed.
const DEFINITE = new Set([
  'GRPCInvalidArgumentError',
  'GRPCResourceExhastedError', // (sic, etcd3's spelling) over the gRPC message limit, NOSPACE alarm, too many requests
  'GRPCFailedPreconditionError',
  'GRPCOutOfRangeError',
  'GRPCNotImplementedError',
  'GRPCUnauthenticatedError',
  'GRPCAlreadyExistsError',
  'GRPCNotFoundError',
  'EtcdPermissionDeniedError',
  'EtcdAuthenticationFailedError',
  'EtcdInvalidAuthTokenError',
  'ClientClosedError',
]);

function definitelyFailed(e) {
  return e !== null && typeof e === 'object' && DEFINITE.has(e.constructor && e.constructor.name);
}

function unknown(e) {
  if (e !== null && typeof e === 'object' && !definitelyFailed(e)) e.commitUnknown = true;
  return e;
}

/** `version` as a mod_revision's decimal text, else INVALID_ARGUMENT (nothing sent). */
function revisionOf(version, name) {
  const text = String(version);
  if (!/^(0|[1-9][0-9]{0,18})$/.test(text)) {
    throw invalid(`${name} must be a mod_revision, got ${JSON.stringify(text)}`, { [name]: text });
  }
  return text;
}

function firstKv(response) {
  const r = response && response.response_range;
  return r && r.kvs && r.kvs.length > 0 ? r.kvs[0] : null;
}

/**
 * A compare-and-set host store on an etcd3 client (`new Etcd3({ hosts })`).
 * Options: `prefix` (default `"fencegate/"`), `encode`/`decode` for values
 * (default `valueCodec`).
 */
export class EtcdStore {
  #kv;
  #prefix;
  #encode;
  #decode;
  /** The highest revision any response of this store has reported (a response header), as a BigInt. */
  #clock = 0n;

  constructor(client, options = {}) {
    if (client === null || typeof client !== 'object' || client.kv === null || typeof client.kv !== 'object' || typeof client.kv.txn !== 'function') {
      throw invalid('EtcdStore needs an etcd3 client (new Etcd3(...))', {
        client: client === null ? 'null' : typeof client,
      });
    }
    options = storeOptions(options, 'EtcdStore', { prefix: null, ...CODEC_OPTIONS });
    const prefix = options.prefix ?? 'fencegate/';
    if (typeof prefix !== 'string') throw invalid('prefix must be a string', { prefix });
    this.#kv = client.kv;
    this.#prefix = prefix;
    [this.#encode, this.#decode] = codecOf(options, valueCodec);
  }

  /** The etcd keys of a resource key: `{ state, value, commit }` (strings). */
  etcdKeys(key) {
    const p = this.#prefix;
    return { state: `${p}s/${key}`, value: `${p}v/${key}`, commit: `${p}c/${key}` };
  }

  #buffers(key) {
    const k = this.etcdKeys(key);
    return { state: Buffer.from(k.state, 'utf8'), value: Buffer.from(k.value, 'utf8'), commit: Buffer.from(k.commit, 'utf8') };
  }

  /** `{ state, version, value }` of `key` (version: the state key's mod_revision, decimal text), or null. */
  async load(key) {
    const b = this.#buffers(key);
    const r = await this.#kv.txn({
      compare: [],
      success: [{ request_range: { key: b.state } }, { request_range: { key: b.value } }],
      failure: [],
    });
    this.#observe(r);
    const state = firstKv(r.responses[0]);
    const value = firstKv(r.responses[1]);
    if (state === null && value === null) return null;
    return loadedRecord(
      state === null ? undefined : state.value.toString('utf8'),
      state === null ? '0' : String(state.mod_revision),
      value === null ? null : value.value.toString('utf8'),
      this.#decode,
    );
  }

  /** Writes state and change when the state key's mod_revision is still `expectedVersion`; true when it did. */
  async commit(key, expectedVersion, nextState, change) {
    const b = this.#buffers(key);
    const expected = revisionOf(expectedVersion === null || expectedVersion === undefined || expectedVersion === '' ? '0' : expectedVersion, 'expectedVersion');
    const compare = [{ key: b.state, target: COMPARE_MOD, result: COMPARE_EQUAL, mod_revision: expected }];
    return (await this.#txn(b, compare, JSON.stringify(nextState), change, expected)) !== null;
  }

  /**
   * The gate's state-cache commit (docs/stores.md "commitFrom"): one Txn that
   * writes `nextText` (the next state's JSON text, stored as is) and the change
   * when the state key still has mod_revision `expected.version` AND the value
   * `expected.state` (null: the state key does not exist, create_revision 0).
   * Resolves to `{ version }` (the mod_revision it wrote, decimal text: what
   * load returns next), or false when the compare failed.
   */
  async commitFrom(key, expected, nextText, change) {
    const b = this.#buffers(key);
    let compare;
    let after;
    if (expected === null) {
      compare = [{ key: b.state, target: COMPARE_CREATE, result: COMPARE_EQUAL, create_revision: '0' }];
      after = '0';
    } else {
      after = revisionOf(expected.version, 'expected.version');
      if (typeof expected.state !== 'string') {
        throw invalid(`expected.state must be the state text, got ${typeof expected.state}`, { state: typeof expected.state });
      }
      compare = [
        { key: b.state, target: COMPARE_MOD, result: COMPARE_EQUAL, mod_revision: after },
        { key: b.state, target: COMPARE_VALUE, result: COMPARE_EQUAL, value: Buffer.from(expected.state, 'utf8') },
      ];
    }
    const version = await this.#txn(b, compare, nextText, change, after);
    if (version === null) return false;
    if (!/^[1-9][0-9]{0,18}$/.test(version)) {
      // committed, but the version the record now has is not known: the gate must not cache a guess
      throw Object.assign(new Error(`EtcdStore: the Txn committed but its response carries no revision (${JSON.stringify(version)})`), { commitUnknown: true });
    }
    return { version };
  }

  /**
   * One commit Txn: if `compare` holds, put the state text `stateText`, apply
   * `change` to the value key and put a fresh commit id. Resolves to the
   * revision the Txn wrote (decimal text), or null when the compare failed and
   * no earlier attempt of this Txn (a resend by the client) committed after
   * revision `after`. Transport errors that may have committed carry `commitUnknown`.
   */
  async #txn(b, compare, stateText, change, after) {
    const id = randomBytes(16).toString('hex');
    // An attempt of this Txn that landed, landed after every response seen so far.
    const floor = this.#clock > BigInt(after) ? this.#clock : BigInt(after);
    const success = [{ request_put: { key: b.state, value: Buffer.from(stateText, 'utf8') } }];
    if (change.kind === 'set') {
      success.push({ request_put: { key: b.value, value: Buffer.from(encodedOf(this, change), 'utf8') } });
    } else if (change.kind === 'delete') {
      success.push({ request_delete_range: { key: b.value } });
    }
    success.push({ request_put: { key: b.commit, value: Buffer.from(id, 'ascii') } });
    let r;
    try {
      r = await this.#kv.txn({ compare, success, failure: [{ request_range: { key: b.commit } }] });
    } catch (e) {
      throw unknown(e);
    }
    this.#observe(r);
    if (r.succeeded) {
      // every put of the Txn has the revision the header reports: the state key's new mod_revision
      const revision = r.header ? r.header.revision : undefined;
      return revision === undefined || revision === null ? '' : String(revision);
    }
    // The compare failed: another writer got there first, or this very Txn
    // committed on an earlier attempt whose reply was lost (client retry).
    try {
      return await this.#committedEarlier(b.commit, firstKv(r.responses[0]), id, floor);
    } catch (e) {
      throw unknown(e);
    }
  }

  /** Moves the store's clock to the revision of a response's header (when it has one). */
  #observe(r) {
    const revision = r && r.header ? r.header.revision : undefined;
    if (typeof revision === 'string' && /^[0-9]{1,19}$/.test(revision)) {
      const rev = BigInt(revision);
      if (rev > this.#clock) this.#clock = rev;
    }
  }

  /**
   * The revision at which commit id `id` was written to `commitKey` after
   * revision `after` (walking back from `kv`), or null when it was not.
   */
  async #committedEarlier(commitKey, kv, id, after) {
    for (let steps = 0; kv !== null && BigInt(kv.mod_revision) > after; steps++) {
      if (kv.value.toString('ascii') === id) return String(kv.mod_revision);
      if (steps >= MAX_WALK) {
        throw Object.assign(new Error(`EtcdStore: more than ${MAX_WALK} commits since the load; cannot tell whether this commit landed`), {
          commitUnknown: true,
        });
      }
      const r = await this.#kv.range({ key: commitKey, revision: String(BigInt(kv.mod_revision) - 1n) });
      this.#observe(r);
      kv = r.kvs && r.kvs.length > 0 ? r.kvs[0] : null;
    }
    return null;
  }

  /** The stored text of `value` (the codec's `encode`); INVALID_ARGUMENT when the codec refuses it. */
  encodeValue(value) {
    return encodeWith(this.#encode, value);
  }

  /**
   * The caller's own puts, deletes and compares in the fence's one Txn
   * (Gate.transaction; docs/stores.md "Your own data"). The fence state is
   * read (or taken from `step.cached`), decided, and when the verdict applies
   * `step.run(tx)` gives the body a builder `tx` ({@link EtcdTxnBuilder}:
   * `put(key, value)`, `delete(key)`, `compare(key, target, op, value)`); the
   * store then sends ONE Txn: `if fence unchanged AND the caller's compares
   * then put the fence state, the caller's puts/deletes, a commit id`. A
   * failed compare writes nothing and is thrown with `conflict: true` (the
   * gate runs it all again, body included, bounded by maxRetries): the
   * message says whether the fence or one of the caller's compares failed.
   * A resent Txn that landed is found by its commit id, as for `commit`.
   * Answers `{ version }` (the revision written) or null (refused).
   */
  async fencedTransaction(key, step) {
    const b = this.#buffers(key);
    let state;
    let revision;
    let plan = null;
    const cached = step.cached;
    if (cached !== null) {
      plan = step.decide(cached.state);
      state = cached.state;
      revision = revisionOf(cached.version, 'cached.version');
    }
    if (plan === null) {
      const r = await this.#kv.range({ key: b.state });
      this.#observe(r);
      const kv = r.kvs && r.kvs.length > 0 ? r.kvs[0] : null;
      state = kv === null ? null : kv.value.toString('utf8');
      revision = kv === null ? '0' : String(kv.mod_revision);
      plan = step.decide(state);
      if (plan === null) return null;
    }
    const compare = state === null
      ? [{ key: b.state, target: COMPARE_CREATE, result: COMPARE_EQUAL, create_revision: '0' }]
      : [
        { key: b.state, target: COMPARE_MOD, result: COMPARE_EQUAL, mod_revision: revision },
        { key: b.state, target: COMPARE_VALUE, result: COMPARE_EQUAL, value: Buffer.from(state, 'utf8') },
      ];
    const fenceCompares = compare.length;
    const success = [{ request_put: { key: b.state, value: Buffer.from(plan.nextStateText, 'utf8') } }];
    const own = (k) => {
      const text = Buffer.isBuffer(k) ? k.toString('utf8') : k;
      if (typeof text !== 'string') throw invalid('EtcdStore: a key of the Txn builder is a string or a Buffer', {});
      if (text.startsWith(this.#prefix)) throw invalid(`EtcdStore: ${JSON.stringify(text)} is under the fence prefix (the fence keys belong to fencegate)`, { key: text });
      return Buffer.from(text, 'utf8');
    };
    const bytes = (v) => (Buffer.isBuffer(v) || v instanceof Uint8Array ? Buffer.from(v) : Buffer.from(String(v), 'utf8'));
    let open = true;
    const tx = Object.freeze({
      put: (k, v) => {
        if (!open) throw invalid('EtcdStore: the Txn builder is used after the body returned', {});
        success.push({ request_put: { key: own(k), value: bytes(v) } });
        return tx;
      },
      delete: (k) => {
        if (!open) throw invalid('EtcdStore: the Txn builder is used after the body returned', {});
        success.push({ request_delete_range: { key: own(k) } });
        return tx;
      },
      compare: (k, target, op, value) => {
        if (!open) throw invalid('EtcdStore: the Txn builder is used after the body returned', {});
        compare.push(callerCompare(Buffer.from(typeof k === 'string' ? k : bytes(k)), target, op, value, bytes));
        return tx;
      },
    });
    try {
      await step.run(tx);
    } finally {
      open = false;
    }
    const after = state === null ? '0' : revision;
    const written = await this.#send(b, compare, success, after, [{ request_range: { key: b.state } }]);
    if (written.revision !== null) return { version: written.revision };
    // not committed: did the fence change, or one of the caller's compares fail?
    const now = firstKv(written.failure[1]);
    const fenceHeld = state === null ? now === null : now !== null && String(now.mod_revision) === revision && now.value.toString('utf8') === state;
    const why = fenceHeld && compare.length > fenceCompares
      ? 'a compare of the caller\'s failed'
      : 'the fence state changed since it was read';
    throw Object.assign(new Error(`EtcdStore: the Txn did not commit (${why}): nothing was written`), { conflict: true });
  }

  /**
   * Refused: an etcd Txn the caller builds and commits (etcd3's `client.if(…)`)
   * cannot take the fence safely (docs/stores.md "Your own data", etcd): a
   * refusal can only fail its compare, which runs the caller's `else` branch,
   * and the etcd3 client resends a Txn whose reply was lost, so a Txn that
   * landed may answer `succeeded: false`. Use `gate.transaction`, whose Txn
   * carries a commit id for that case. Always INVALID_ARGUMENT.
   */
  fenceIn() {
    throw invalid('EtcdStore.fenceIn: an etcd Txn cannot be fenced from outside (a refusal would run its else branch; a resent Txn that landed answers succeeded: false): use gate.transaction(key, token, (tx) => { tx.put(…) })');
  }

  /**
   * Sends one Txn of `compare` → `success` plus a fresh commit id. `{ revision }`
   * written (also when an earlier attempt of this Txn, resent by the client,
   * landed), or `{ revision: null, failure }` (the failure branch's responses:
   * the commit key's range, then `extraFailure`'s).
   */
  async #send(b, compare, success, after, extraFailure) {
    const id = randomBytes(16).toString('hex');
    const floor = this.#clock > BigInt(after) ? this.#clock : BigInt(after);
    success = [...success, { request_put: { key: b.commit, value: Buffer.from(id, 'ascii') } }];
    let r;
    try {
      r = await this.#kv.txn({ compare, success, failure: [{ request_range: { key: b.commit } }, ...extraFailure] });
    } catch (e) {
      throw unknown(e);
    }
    this.#observe(r);
    if (r.succeeded) {
      const revision = r.header ? r.header.revision : undefined;
      if (revision === undefined || revision === null || !/^[1-9][0-9]{0,18}$/.test(String(revision))) {
        throw Object.assign(new Error('EtcdStore: the Txn committed but its response carries no revision'), { commitUnknown: true });
      }
      return { revision: String(revision) };
    }
    let earlier;
    try {
      earlier = await this.#committedEarlier(b.commit, firstKv(r.responses[0]), id, floor);
    } catch (e) {
      throw unknown(e);
    }
    return earlier === null ? { revision: null, failure: r.responses } : { revision: earlier };
  }
}

const TARGETS = { version: 0, create: 1, mod: 2, value: 3 };
const FIELDS = { version: 'version', create: 'create_revision', mod: 'mod_revision', value: 'value' };
const OPS = { '==': 0, '>': 1, '<': 2, '!=': 3 };

/** One etcd Compare of the caller's: target 'value' | 'version' | 'create' | 'mod', op '==' | '!=' | '<' | '>'. */
function callerCompare(key, target, op, value, bytes) {
  if (!Object.prototype.hasOwnProperty.call(TARGETS, target)) {
    throw invalid(`EtcdStore: compare target must be 'value', 'version', 'create' or 'mod', got ${JSON.stringify(String(target))}`, { target: String(target) });
  }
  if (!Object.prototype.hasOwnProperty.call(OPS, op)) {
    throw invalid(`EtcdStore: compare op must be '==', '!=', '<' or '>', got ${JSON.stringify(String(op))}`, { op: String(op) });
  }
  const v = target === 'value' ? bytes(value) : revisionOf(value, `compare ${target}`);
  return { key, target: TARGETS[target], result: OPS[op], [FIELDS[target]]: v };
}
