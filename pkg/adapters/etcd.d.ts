/**
 * fencegate/etcd — a compare-and-set host store on etcd v3 (npm `etcd3` ≥ 1.1,
 * etcd server ≥ 3.4). Each resource key is three etcd keys: `<prefix>s/<key>`
 * (state text), `<prefix>v/<key>` (the value's codec text; absent = no value) and
 * `<prefix>c/<key>` (the id of the last commit). A commit is one Txn:
 * `mod_revision(s/key) == expected` → put state, put or delete the value, put
 * the commit id. Use with `new Gate(new EtcdStore(new Etcd3({ hosts })))`; the
 * Issuer takes it as well.
 */
export interface EtcdStoreOptions<V = unknown> {
  /** Prefix of the store's etcd keys; default `"fencegate/"`. */
  prefix?: string;
  /**
   * Value to stored text, with `decode` as a pair (a codec, e.g. `...jsonCodec`);
   * default fencegate's `valueCodec`. A throw refuses the write: INVALID_ARGUMENT.
   */
  encode?(value: V): string;
  /** Stored text to value; default `valueCodec.decode` (reads JSON text and `devalue:` text). */
  decode?(text: string): V;
}

/** One key-value pair as etcd3 returns it (revisions as decimal strings). */
export interface EtcdKeyValue {
  key: Uint8Array;
  value: Uint8Array;
  mod_revision: string;
  create_revision?: string;
  version?: string;
}

/** Structural type of the etcd3 `Etcd3` client used: its raw KV service. */
export interface EtcdClient {
  readonly kv: {
    txn(request: object): Promise<{ header?: { revision: string }; succeeded: boolean; responses: Array<{ response_range?: { kvs: EtcdKeyValue[] } }> }>;
    range(request: object): Promise<{ header?: { revision: string }; kvs: EtcdKeyValue[] }>;
  };
}

/**
 * Versions are the state key's `mod_revision` as decimal text (`"0"`: no record).
 * @throws FencegateError INVALID_ARGUMENT when `client` is not an etcd3 client, `options`
 * is not an object, `prefix` is not a string, or `encode` comes without `decode` (or the reverse).
 * An unknown option name or an option of the wrong type is INVALID_ARGUMENT too.
 */
export class EtcdStore<V = unknown> {
  constructor(client: EtcdClient, options?: EtcdStoreOptions<V>);
  /** The etcd keys that hold `key`'s record. */
  etcdKeys(key: string): { state: string; value: string; commit: string };
  /** The stored text of `value`; FencegateError INVALID_ARGUMENT (with `path`) when the codec refuses it. */
  encodeValue(value: V): string;
  /** State and value read in one read-only Txn (one revision), or null when neither exists. */
  load(key: string): Promise<{ state: string | undefined; version: string; value?: V } | null>;
  /**
   * `true` when the Txn committed (also when an earlier attempt of it, resent by
   * the etcd3 client after a lost reply, committed: found by its commit id);
   * `false` when another commit came first. Errors after which the Txn may have
   * committed (UNAVAILABLE, DEADLINE_EXCEEDED, a lost connection, history
   * compacted during the check) carry `commitUnknown: true`.
   */
  commit(key: string, expectedVersion: unknown, nextState: object, change: { kind: string; value?: V; encoded?: string }): Promise<boolean>;
  /**
   * The commit of a gate's state cache (docs/stores.md "commitFrom"), one Txn:
   * `mod_revision(s/key) == expected.version` AND `value(s/key) == expected.state`
   * (`expected` null: `create_revision(s/key) == 0`, the key does not exist) →
   * put `nextText` as is, put or delete the value, put the commit id.
   * `{ version }`: the revision the Txn wrote (decimal text), which `load` returns
   * next; `false`: the compare failed and no earlier attempt of this Txn landed.
   * Errors as for `commit` (`commitUnknown: true` when it may have committed, also
   * when more than 64 commits on the key since the store's last response hide
   * whether a resent attempt landed). FencegateError INVALID_ARGUMENT, nothing
   * sent: `expected.version` not a mod_revision, or `expected.state` not a string.
   */
  commitFrom(key: string, expected: { version: unknown; state: string } | null, nextText: string, change: { kind: string; value?: V; encoded?: string }): Promise<{ version: string } | false>;
  /**
   * Store verb of `gate.transaction(key, token, (tx) => { tx.put(k, v) })` (docs/stores.md
   * "Your own data"): the fence state is read (or taken from the state cache), decided, and
   * when the verdict applies the body fills an {@link EtcdTxnBuilder}; then ONE Txn: `fence
   * unchanged AND the caller's compares` → put the fence state, the caller's puts/deletes, a
   * commit id. A failed compare (the fence's or the caller's; the message says which) writes
   * nothing and is a conflict: the whole step runs again, body included (bounded by
   * `maxRetries`, then COMMIT_CONFLICT). `{ version }` = the revision written, or null (refused).
   */
  fencedTransaction(key: string, step: { cached: { state: string; version: unknown } | null; decide(state: string | null): { nextStateText: string } | null; run(tx: EtcdTxnBuilder): unknown }): Promise<{ version: string } | null>;
  /**
   * Always FencegateError INVALID_ARGUMENT: a Txn the caller builds and commits cannot take
   * the fence safely (a refusal would run its else branch; a resent Txn that landed answers
   * `succeeded: false`). Use `gate.transaction`.
   */
  fenceIn(handle: unknown, key: string, step: unknown): never;
}

/**
 * What the body of `gate.transaction` on an EtcdStore gets; every method chains. Keys are
 * strings or Buffers outside the store's prefix (else INVALID_ARGUMENT, thrown in the body:
 * CALLBACK_FAILED); values strings or bytes. `compare(key, target, op, value)`: target
 * `'value'` (value: bytes/string), `'version'`, `'create'` or `'mod'` (value: a revision,
 * decimal text or number); op `'=='`, `'!='`, `'<'`, `'>'`. The builder is closed once the
 * body (or its Promise) returns.
 */
export interface EtcdTxnBuilder {
  put(key: string | Uint8Array, value: string | Uint8Array): EtcdTxnBuilder;
  delete(key: string | Uint8Array): EtcdTxnBuilder;
  compare(key: string | Uint8Array, target: 'value' | 'version' | 'create' | 'mod', op: '==' | '!=' | '<' | '>', value: string | number | Uint8Array): EtcdTxnBuilder;
}

