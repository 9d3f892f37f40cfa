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
import { FencegateError } from '../lib/errors.mjs';
import { codecOf, encodeWith, encodedOf } from './support.mjs';

// etcdserverpb Compare.CompareTarget.MOD and Compare.CompareResult.EQUAL.
const COMPARE_MOD = 2;
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

  constructor(client, options = {}) {
    if (client === null || typeof client !== 'object' || client.kv === null || typeof client.kv !== 'object' || typeof client.kv.txn !== 'function') {
      throw new FencegateError('INVALID_ARGUMENT', 'EtcdStore needs an etcd3 client (new Etcd3(...))', {
        client: client === null ? 'null' : typeof client,
      });
    }
    if (options === null || typeof options !== 'object') {
      throw new FencegateError('INVALID_ARGUMENT', 'EtcdStore options must be an object', { options });
    }
    const prefix = options.prefix ?? 'fencegate/';
    if (typeof prefix !== 'string') throw new FencegateError('INVALID_ARGUMENT', 'prefix must be a string', { prefix });
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
    const state = firstKv(r.responses[0]);
    const value = firstKv(r.responses[1]);
    if (state === null && value === null) return null;
    return {
      state: state === null ? undefined : state.value.toString('utf8'),
      version: state === null ? '0' : String(state.mod_revision),
      value: value === null ? undefined : this.#decode(value.value.toString('utf8')),
    };
  }

  /** Writes state and change when the state key's mod_revision is still `expectedVersion`; true when it did. */
  async commit(key, expectedVersion, nextState, change) {
    const b = this.#buffers(key);
    const expected = expectedVersion === null || expectedVersion === undefined || expectedVersion === '' ? '0' : String(expectedVersion);
    if (!/^(0|[1-9][0-9]{0,18})$/.test(expected)) {
      throw new FencegateError('INVALID_ARGUMENT', `expectedVersion must be a mod_revision, got ${JSON.stringify(expected)}`, { expectedVersion: expected });
    }
    const id = randomBytes(16).toString('hex');
    const success = [{ request_put: { key: b.state, value: Buffer.from(JSON.stringify(nextState), 'utf8') } }];
    if (change.kind === 'set') {
      success.push({ request_put: { key: b.value, value: Buffer.from(encodedOf(this, change), 'utf8') } });
    } else if (change.kind === 'delete') {
      success.push({ request_delete_range: { key: b.value } });
    }
    success.push({ request_put: { key: b.commit, value: Buffer.from(id, 'ascii') } });
    let r;
    try {
      r = await this.#kv.txn({
        compare: [{ key: b.state, target: COMPARE_MOD, result: COMPARE_EQUAL, mod_revision: expected }],
        success,
        failure: [{ request_range: { key: b.commit } }],
      });
    } catch (e) {
      throw unknown(e);
    }
    if (r.succeeded) return true;
    // The compare failed: another writer got there first, or this very Txn
    // committed on an earlier attempt whose reply was lost (client retry).
    try {
      return await this.#committedEarlier(b.commit, firstKv(r.responses[0]), id, BigInt(expected));
    } catch (e) {
      throw unknown(e);
    }
  }

  /** Whether commit id `id` was written to `commitKey` after revision `after` (walking back from `kv`). */
  async #committedEarlier(commitKey, kv, id, after) {
    for (let steps = 0; kv !== null && BigInt(kv.mod_revision) > after; steps++) {
      if (kv.value.toString('ascii') === id) return true;
      if (steps >= MAX_WALK) {
        throw Object.assign(new Error(`EtcdStore: more than ${MAX_WALK} commits since the load; cannot tell whether this commit landed`), {
          commitUnknown: true,
        });
      }
      const r = await this.#kv.range({ key: commitKey, revision: String(BigInt(kv.mod_revision) - 1n) });
      kv = r.kvs && r.kvs.length > 0 ? r.kvs[0] : null;
    }
    return false;
  }

  /** The stored text of `value` (the codec's `encode`); INVALID_ARGUMENT when the codec refuses it. */
  encodeValue(value) {
    return encodeWith(this.#encode, value);
  }
}
