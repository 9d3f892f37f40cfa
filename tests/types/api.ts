// Compiled by tests/pack with `tsc --noEmit --strict` against the installed
// package: every export is used with the types a caller relies on, and the
// "expect-error" lines prove wrong uses fail.
import {
  MemoryGate,
  FencegateError,
  init,
  parseToken,
  toToken,
  decodeState,
  encodeState,
  errorCodes,
  mintToken,
  verifyToken,
  ed25519PublicKey,
  features,
  type TokenClaims,
  type HigherEpochPolicy,
  type VerifyKey,
  type Epoch,
  type Verdict,
  type Outcome,
  type ErrorCode,
  type RejectCode,
  type PersistedState,
  type GateOptions,
  type Reading,
  type SameEpochPolicy,
  type TransactionVerdict,
  type OwnDataStore,
  type FencedStep,
} from 'fencegate';

export async function use(): Promise<void> {
  await init();
  const options: GateOptions = { sameEpoch: 'strict' };
  const policy: SameEpochPolicy = 'allow';
  const gate = new MemoryGate<{ total: number }>(options);
  const token: Epoch = parseToken('7');
  const big: Epoch = toToken(2n ** 64n - 1n);
  const v: Verdict = gate.write('orders/1', token, { total: 3 });
  const outcome: Outcome = v.outcome;
  const code: RejectCode | null = v.code;
  const ok: boolean = v.ok;
  const marks: [Epoch, Epoch, Epoch | null] = [v.markBefore, v.markAfter, v.token];
  const e: Verdict = gate.establish('orders/1', big);
  const r: Reading<{ total: number }> = gate.read('orders/1');
  const total: number | undefined = gate.value('orders/1')?.total;
  const mark: Epoch = gate.mark('orders/1');
  const state: PersistedState | undefined = gate.state('orders/1');
  const decoded: { mark: Epoch } = decodeState('{"v":1,"mark":"3"}');
  const encoded: PersistedState = encodeState(3);
  const version: 1 = encoded.v;
  const keys: string[] = gate.keys();
  const codes: ErrorCode[] = errorCodes();
  const p: SameEpochPolicy = gate.sameEpoch;
  try {
    parseToken('07');
  } catch (err) {
    if (err instanceof FencegateError) {
      const c: ErrorCode = err.code;
      const m: string = err.message;
      void [c, m, err.token];
    }
  }
  const made = new FencegateError('STORE_ERROR', 'x', { cause: 1 });
  {
    using scoped = new MemoryGate();
    scoped.write('k', 1, 'v');
  }
  gate.free();
  // @ts-expect-error keys are strings
  gate.write(1, 1, { total: 1 });
  // @ts-expect-error the value type is checked
  gate.write('k', 1, 'not an object');
  // @ts-expect-error unknown policy
  new MemoryGate({ sameEpoch: 'lenient' });
  // @ts-expect-error unknown code
  const wrong: ErrorCode = 'NOPE';
  void [policy, outcome, code, ok, marks, e, r, total, mark, state, decoded, version, keys, codes, p, made, wrong];
}

// The issuer (issue 4).
import {
  Issuer,
  Gate,
  MemoryHostStore,
  type IssuerOptions,
  type IssuerCasStore,
  type PersistedIssuerState,
  type PersistedIssuerStateV1,
  type PersistedIssuerStateV2,
  type LeaseNotHeld,
  type RequestIdReused,
  type TransactionStore,
  type TransactionResult,
} from 'fencegate';

import { SqliteStore, type SqliteDatabase } from 'fencegate/sqlite';
import type { PostgresStore } from 'fencegate/postgres';
import type { RedisStore } from 'fencegate/redis';

/** The Issuer takes the shipped adapters (and shares them with a Gate). */
export function issuerOverAdapters(db: SqliteDatabase, pgStore: PostgresStore, redisStore: RedisStore): [Issuer, Issuer, Gate, Gate, Issuer] {
  const sqlite = new SqliteStore(db);
  return [new Issuer(sqlite), new Issuer(pgStore, { keyPrefix: 'locks:' }), new Gate(sqlite), new Gate(redisStore), new Issuer(redisStore)];
}

/** Own data: the caller's statements in the fence's transaction, and the fence inside the caller's transaction. */
export async function ownData(db: SqliteDatabase & { inTransaction: boolean }): Promise<void> {
  const gate = new Gate(new SqliteStore(db));
  const v: TransactionVerdict<number> = await gate.transaction('orders/42', 34, (tx: SqliteDatabase) => {
    tx.exec("UPDATE orders SET status = 'shipped' WHERE id = 42");
    return 1;
  }, { opId: 'ship-42' });
  const n: number | undefined = v.result;
  const applied: Verdict = await gate.fenceIn(db, 'orders/42', 35);
  const now: Verdict = gate.fenceInSync(db, 'orders/42', 35n);
  const codes: ErrorCode[] = ['CALLBACK_FAILED', 'DUPLICATE_OPERATION', 'GUARD_REFUSED'];
  const custom: OwnDataStore = {
    fencedTransaction(key: string, step: FencedStep) {
      const plan = step.decide(step.cached?.state ?? null);
      if (plan === null) return null;
      step.run({ key, text: plan.nextStateText });
      return { version: 1 };
    },
  };
  void [n, applied, now, codes, custom];
}

export async function useIssuer(): Promise<void> {
  const options: IssuerOptions = { epochs: 'bigint', commitTimeoutMs: 500, clock: () => Date.now() };
  const store = new MemoryHostStore<{ total: number }>();
  const issuer = new Issuer(store, options);
  const shared = new Gate(store);
  const custom: IssuerCasStore = { load: () => null, commit: async () => true };
  new Issuer(custom);
  const plain = new Issuer();
  const a = await issuer.acquire({ scope: 'jobs', holder: 'node-a', ttlMs: 10_000, now: 1, requestId: 'r-1' });
  if (a.ok) {
    const epoch: Epoch = a.epoch;
    const id: string = a.leaseId;
    const expires: number = a.expiresAt;
    const replayed: boolean = a.replayed;
    const gate = new MemoryGate();
    gate.establish('jobs', a.epoch);
    await shared.establish('jobs', a.epoch);
    const r = await issuer.renew({ scope: 'jobs', leaseId: a.leaseId, holder: a.holder, ttlMs: 10_000, now: 2 });
    if (!r.ok) {
      const c: 'LEASE_EXPIRED' | 'LEASE_NOT_HELD' = r.code;
      const notHeld: LeaseNotHeld | null = r.code === 'LEASE_NOT_HELD' ? r : null;
      void [c, notHeld];
    }
    const rel = await issuer.release({ scope: 'jobs', leaseId: id, holder: 'node-a' });
    const released: boolean = rel.ok ? rel.released : false;
    // @ts-expect-error renew and release take the holder (issue 20)
    await issuer.release({ scope: 'jobs', leaseId: id });
    void [epoch, expires, replayed, released];
  } else if (a.code === 'LEASE_HELD') {
    const until: number = a.expiresAt;
    const by: string = a.holder;
    void [until, by];
  } else if (a.code === 'REQUEST_ID_REUSED') {
    const reused: RequestIdReused = a;
    void reused;
  }
  const cur = await plain.current('jobs');
  const holder: string | undefined = cur.lease?.holder;
  const raised = await issuer.raise({ scope: 'jobs', atLeast: 10n, now: 3 });
  const s: PersistedIssuerState = { v: 1, epoch: '3', lease: null };
  const s2: PersistedIssuerStateV2 = {
    v: 2, epoch: '3', lease: { id: '3.AAAAAAAAAAAAAAAAAAAAAA', holder: 'a', expiresAt: '9', ttlMs: '5', requestId: null },
  };
  const s1: PersistedIssuerStateV1 = { v: 1, epoch: '3', lease: { holder: 'a', expiresAt: '9', requestId: null } };
  const codes: ErrorCode[] = ['LEASE_NOT_HELD', 'REQUEST_ID_REUSED'];
  // @ts-expect-error ttlMs is a number of ms
  await issuer.acquire({ scope: 'jobs', holder: 'a', ttlMs: '10s' });
  // @ts-expect-error unknown epoch range
  new Issuer(null, { epochs: 'u64' });
  void [holder, raised, s, s2, s1, codes];
}

/** Signed tokens and gate policies (issue 5, docs/signed-tokens.md). */
export function useSigned(): void {
  const secret = new Uint8Array(32);
  const keys: Record<string, VerifyKey> = { k1: secret, k2: { hmac: secret }, k3: { ed25519: secret } };
  const token: string = mintToken({ scope: 'orders', epoch: 7, leaseId: 'L', generation: 1n }, { kid: 'k1', hmac: secret });
  const claims: TokenClaims = verifyToken(token, { keys, retired: ['k0'], scope: 'orders' });
  const inspected: TokenClaims = verifyToken(token, { keys, scope: null });
  const within: HigherEpochPolicy = { mode: 'adopt-within', maxJump: 1000 };
  const gate = new MemoryGate<string>({ requireSigned: true, keys, scope: (key) => key, higherEpoch: within });
  const v: Verdict = gate.write('orders', token, 'x');
  const leaseId: string | undefined = v.claims?.leaseId;
  const future = new MemoryGate({ higherEpoch: { mode: 'reject-future', ceiling: () => 9n } });
  future.setCeiling(10);
  gate.addKey('k4', { hmac: secret });
  gate.retireKey('k1');
  future.setCeiling(null);
  const hostPolicy: HigherEpochPolicy = { mode: 'reject-future', ceiling: async () => 9n };
  const pub: Uint8Array = ed25519PublicKey(secret);
  const f: string[] = features();
  // @ts-expect-error unknown higher-epoch mode
  new MemoryGate({ higherEpoch: { mode: 'sometimes' } });
  // @ts-expect-error maxJump belongs to adopt-within
  const bad: HigherEpochPolicy = { mode: 'adopt', maxJump: 3 };
  // @ts-expect-error a signing key needs a kid
  mintToken({ scope: 's', epoch: 1 }, { hmac: secret });
  void [claims, inspected, leaseId, pub, f, bad, hostPolicy];
}

import { type OperationOptions, type AuditRecord, type GateCounters, type PersistedStateV2 } from 'fencegate';

/** Issue 6: operation ids, holder binding, audit trail, counters. */
export async function useSameEpoch(): Promise<void> {
  const audit: AuditRecord[] = [];
  const gate = new MemoryGate<string>({ opWindow: 16, onVerdict: (r: AuditRecord) => { audit.push(r); } });
  const op: OperationOptions = { opId: 'r1', holder: 'node-a' };
  const v = gate.write('k', 5, 'v', op);
  if (v.outcome === 'duplicate') {
    const original: 'advance' | 'accept' | undefined = v.original;
    void original;
  }
  gate.establish('k', 6, { holder: 'node-b' });
  const c: GateCounters = gate.counters();
  const n: number = c.codes.EPOCH_CONFLICT ?? 0;
  const s = gate.state('k');
  if (s !== undefined && s.v === 2) {
    const v2: PersistedStateV2 = s;
    const ops: Record<string, string> = v2.ops;
    void ops;
  }
  const host = new Gate<string>(new MemoryHostStore<string>(), { opWindow: 8, onVerdict: async () => {} });
  await host.write('k', 1, 'x', { opId: 'a' });
  await host.delete('k', 1, { holder: 'h' });
  const hc: GateCounters = host.counters();
  // @ts-expect-error opId is a string
  gate.write('k', 5, 'v', { opId: 5 });
  void [n, hc, audit];
}

import { reconcile, type ReconcileReport, type QuarantineResult, type FenceRecord, type PersistedStateV3 } from 'fencegate';
import type { ReconcileScope, ReconcileIssuer, ReconcileLease, ReconcileConflict, ReconcileError, ReconcileIssuerChange, ReconcileRevoked, ReconcileEstablish, ReconcileQuarantine, IssuerRecord, IssuerLeaseRecord, RaiseArgs, RenewArgs, ReleaseArgs, IssuerRaised, IssuerReleased } from 'fencegate';

/** Restores (issue 9, docs/restore.md): quarantine, inspect, raise with revoke, reconcile. */
export async function useRestore(): Promise<void> {
  const store = new MemoryHostStore();
  const issuer = new Issuer(store);
  const gate = new Gate(store);
  const q: QuarantineResult = await gate.quarantine('k', 9);
  const m: QuarantineResult = new MemoryGate().quarantine('k', 0);
  const rec: FenceRecord = await gate.inspect('k');
  const floor: Epoch | null = rec.quarantine;
  const r = await issuer.raise({ scope: 's', atLeast: 9, now: 1, revoke: true });
  if (r.ok) {
    const revoked: boolean = r.revoked;
    void revoked;
  }
  const report: ReconcileReport = await reconcile({ issuer, gate, scopes: { s: ['k'] }, now: 2, dryRun: true });
  for (const c of report.changes) {
    if (c.target === 'resource' && c.action === 'quarantine') {
      const f: Epoch = c.floor;
      void f;
    }
  }
  const v3: PersistedStateV3 = { v: 3, mark: '9', holder: null, ops: {}, evicted: null, quarantine: '9' };
  const code: RejectCode = 'QUARANTINED';
  // @ts-expect-error scopes map to arrays of keys
  await reconcile({ issuer, gate, scopes: { s: 'k' } });
  // Issue 12: the named shapes the Rust definitions are checked against (tests/js/api/types-sync.test.mjs).
  const sc: ReconcileScope = report.scopes[0];
  const ri: ReconcileIssuer = sc.issuer;
  const rl: ReconcileLease | null = ri.lease;
  const rc: ReconcileConflict[] = sc.conflicts;
  const re: ReconcileError[] = sc.errors;
  for (const c of report.changes) {
    if (c.target === 'issuer') {
      const ic: ReconcileIssuerChange = c;
      const rv: ReconcileRevoked | null = ic.revoked;
      void rv;
    } else if (c.action === 'establish') {
      const ec: ReconcileEstablish = c;
      void ec;
    } else {
      const qc: ReconcileQuarantine = c;
      void qc;
    }
  }
  const cur: IssuerRecord = await issuer.current('s');
  const lr: IssuerLeaseRecord | null = cur.lease;
  const ra: RaiseArgs = { scope: 's', atLeast: 10n, now: 3 };
  const raised = await issuer.raise(ra);
  if (raised.ok) {
    const ir: IssuerRaised = raised;
    void ir;
  }
  const g = await issuer.acquire({ scope: 's2', holder: 'A', ttlMs: 10, now: 3 });
  if (g.ok) {
    const rn: RenewArgs = { scope: 's2', leaseId: g.leaseId, holder: 'A', ttlMs: 10, now: 4 };
    await issuer.renew(rn);
    const rel: ReleaseArgs = { scope: 's2', leaseId: g.leaseId, holder: 'A' };
    const done = await issuer.release(rel);
    if (done.ok) {
      const released: IssuerReleased = done;
      void released;
    }
  }
  void [rl, rc, re];
  void [q, m, floor, v3, code];
}

import { type PersistedStateV4, type PersistedOp } from 'fencegate';

/** Issue 13: state format 4 (ops as an array) and operation fingerprints (OP_ID_REUSED). */
export async function useFingerprints(): Promise<void> {
  const gate = new MemoryGate<{ pay: number }>();
  const body = JSON.stringify({ pay: 10 });
  gate.write('acct', 5, { pay: 10 }, { opId: 'pay-1', fingerprint: body });
  gate.write('acct', 5, { pay: 10 }, { opId: 'pay-1', fingerprint: new TextEncoder().encode(body) });
  const host = new Gate<{ pay: number }>(new MemoryHostStore<{ pay: number }>());
  const v = await host.write('acct', 5, { pay: 99 }, { opId: 'pay-1', fingerprint: new ArrayBuffer(4) });
  const reused: boolean = v.code === 'OP_ID_REUSED';
  const code: ErrorCode = 'OP_ID_REUSED';
  const s = gate.state('acct');
  if (s !== undefined && s.v === 4) {
    const v4: PersistedStateV4 = s;
    const first: PersistedOp | undefined = v4.ops[0];
    const fp: string | undefined = first?.[2];
    void fp;
  }
  const literal: PersistedStateV4 = { v: 4, mark: '5', holder: null, ops: [['pay-1', '0', '0'.repeat(32)], ['r2', '5']], evicted: null, quarantine: null };
  // @ts-expect-error a fingerprint is text or bytes
  gate.write('acct', 5, { pay: 1 }, { opId: 'x', fingerprint: 5 });
  void [reused, code, literal];
}

// Value codecs, retry classes and the Redis eviction check (issues 21 and 13).
import { valueCodec, jsonCodec, type ValueCodec, type Change, type CasStore, type StoreErrorReason } from 'fencegate';
import { RETRY_SQLSTATES, PostgresStore as PgStore, type PostgresClient } from 'fencegate/postgres';
import { SAFE_EVICTION_POLICIES, RedisStore as RStore, type RedisClient } from 'fencegate/redis';

export async function useCodecs(db: SqliteDatabase, pg: PostgresClient, redis: RedisClient): Promise<void> {
  const codec: ValueCodec = valueCodec;
  const text: string = codec.encode(new Map([['a', 1]]));
  const back: unknown = jsonCodec.decode(text);
  const strict = new SqliteStore<{ n: number }>(db, { ...jsonCodec, table: 'strict' });
  const encoded: string = strict.encodeValue({ n: 1 });
  const change: Change<{ n: number }> = { kind: 'set', value: { n: 1 }, encoded };
  const own: CasStore<string> = {
    load: () => null,
    commit: () => true,
    encodeValue: (v) => jsonCodec.encode(v),
  };
  const pgStore = new PgStore(pg, { encode: valueCodec.encode, decode: valueCodec.decode });
  const retry: readonly string[] = RETRY_SQLSTATES;
  const rs = new RStore(redis, { allowEviction: false });
  const policies: { node: string; policy: string | null }[] = await rs.checkEvictionPolicy();
  const safe: readonly string[] = SAFE_EVICTION_POLICIES;
  const reason: StoreErrorReason = 'EVICTION_POLICY';
  try {
    await new Gate(rs).write('k', 1, 'v');
  } catch (e) {
    if (e instanceof FencegateError && e.code === 'STORE_ERROR' && e.reason === reason) void e.policy;
    if (e instanceof FencegateError && e.code === 'INVALID_ARGUMENT') void e.path;
  }
  // @ts-expect-error allowEviction is a boolean
  new RStore(redis, { allowEviction: 'yes' });
  void [back, change, own, pgStore.encodeValue(1), retry, policies, safe];
}

// The etcd adapter (issue 16).
import { EtcdStore, type EtcdStoreOptions, type EtcdClient, type EtcdKeyValue } from 'fencegate/etcd';

export async function useEtcd(client: EtcdClient): Promise<void> {
  const options: EtcdStoreOptions<{ n: number }> = { prefix: 'app/', ...jsonCodec };
  const store = new EtcdStore<{ n: number }>(client, options);
  const keys: { state: string; value: string; commit: string } = store.etcdKeys('orders/1');
  const text: string = store.encodeValue({ n: 1 });
  const record = await store.load('orders/1');
  const version: string | undefined = record?.version;
  const applied: boolean = await store.commit('orders/1', version ?? '0', { v: 1 }, { kind: 'set', value: { n: 2 } });
  const cached: { version: string } | false = await store.commitFrom('orders/1', version === undefined ? null : { version, state: '{"v":1,"mark":"1"}' }, '{"v":1,"mark":"2"}', { kind: 'set', value: { n: 3 } });
  const cas: CasStore<{ n: number }> = store;
  const gate = new Gate(store);
  const issuer = new Issuer(new EtcdStore(client, { prefix: 'issuer/' }));
  const kv: EtcdKeyValue | undefined = (await client.kv.range({})).kvs[0];
  // @ts-expect-error prefix is a string
  new EtcdStore(client, { prefix: 1 });
  void [keys, text, applied, cached, cas, gate, issuer, kv?.mod_revision];
}

// Issue 15: the runtime adapters (fencegate/durable-object, /indexeddb, /deno-kv).
import {
  DurableObjectStore,
  DurableObjectSqlStore,
  type DurableObjectSqlStoreOptions,
  type DurableObjectSqlStorageLike,
  type DurableObjectTransactionLike,
  FencedObject,
  fencedFetch,
  fencedWorker,
  type DurableObjectStoreOptions,
  type DurableObjectStorageLike,
  type DurableObjectNamespaceLike,
  type FencedFetchOptions,
  type FencedObjectGateOptions,
} from 'fencegate/durable-object';
import { IndexedDbStore, openFenceDatabase, type IndexedDbStoreOptions, type IndexedDbRecord, type OpenFenceDatabaseOptions } from 'fencegate/indexeddb';
import { DenoKvStore, type DenoKv, type DenoKvKeyPart, type DenoKvStoreOptions, type DenoKvAtomicFacade } from 'fencegate/deno-kv';
import type { EtcdTxnBuilder } from 'fencegate/etcd';

export class MyFenced extends FencedObject {}

// Own data on the runtime adapters: the store verbs and the handles their bodies get.
export async function useOwnDataAdapters(storage: DurableObjectStorageLike & DurableObjectSqlStorageLike, txn: DurableObjectTransactionLike, kv: DenoKv, db: IDBDatabase, tx: IDBTransaction, op: DenoKvAtomicFacade, etx: EtcdTxnBuilder): Promise<void> {
  const sqlOptions: DurableObjectSqlStoreOptions<string> = { table: 'fence' };
  const sqlStore = new DurableObjectSqlStore<string>(storage, sqlOptions);
  const table: string = sqlStore.table;
  const sqlGate = new Gate(sqlStore, { stateCache: 64 });
  const written: { version: number } | null = sqlStore.fencedTransaction('k', { cached: null, decide: () => null, run: (sql) => sql.exec('SELECT 1').rowsWritten, body: null });
  sqlStore.fenceIn(storage.sql, 'k', { decide: () => null });
  await new DurableObjectStore(storage).fenceIn(txn, 'k', { decide: () => null });
  const idb = new IndexedDbStore(db, { dataStores: ['orders'] });
  await idb.fenceIn(tx, 'k', { decide: () => null });
  const chained: DenoKvAtomicFacade = op.check({ key: ['a'], versionstamp: null }).set(['a'], 1).sum(['n'], 1n);
  const built: EtcdTxnBuilder = etx.put('a', 'b').delete('c').compare('a', 'mod', '==', '5');
  await new DenoKvStore(kv).fenceIn({ check: () => 0, set: () => 0, commit: async () => 0 }, 'k', { decide: () => null });
  // @ts-expect-error dataStores is a list of names
  new IndexedDbStore(db, { dataStores: 'orders' });
  // @ts-expect-error an etcd compare target is value, version, create or mod
  etx.compare('a', 'lease', '==', 1);
  void [table, sqlGate, written, chained, built];
}

export async function useRuntimeAdapters(storage: DurableObjectStorageLike, kv: DenoKv, ns: DurableObjectNamespaceLike): Promise<void> {
  const doOptions: DurableObjectStoreOptions<{ n: number }> = { prefix: 'fence:', ...jsonCodec };
  const doStore = new DurableObjectStore<{ n: number }>(storage, doOptions);
  const doKey: string = doStore.storageKey('k');
  const doGate = new Gate(doStore);
  const object = new MyFenced({ storage }, { FENCE_KEYS: '{}' });
  const fetchOptions: FencedFetchOptions = { key: 'k', action: 'establish', headers: { token: 'X-Fence' }, typeBase: 'https://example.com/problems/', retryAfter: 2 };
  const answer: Response = await fencedFetch(object.gate, new Request('http://x/resources/k', { method: 'PUT', body: 'v' }), fetchOptions);
  const worker = fencedWorker('RESOURCES');
  const routed: Response = await worker.fetch(new Request('http://x/resources/k'), { RESOURCES: ns });
  const gateOptions: FencedObjectGateOptions = { sameEpoch: 'strict' };
  // @ts-expect-error the prefix is a string
  new DurableObjectStore(storage, { prefix: ['fence'] });

  const dbOptions: OpenFenceDatabaseOptions = { storeName: 'fence', version: 2, upgrade: (db) => db.createObjectStore('ui') };
  const db: IDBDatabase = await openFenceDatabase('app', dbOptions);
  const idbOptions: IndexedDbStoreOptions<string> = { storeName: 'fence' };
  const idb = new IndexedDbStore<string>(db, idbOptions);
  const wrote: boolean = await idb.update('k', (r: IndexedDbRecord | null) => r);
  const idbGate = new Gate(idb);
  // @ts-expect-error a database, not its name
  new IndexedDbStore('app');

  const prefix: DenoKvKeyPart[] = ['app', 1n];
  const kvOptions: DenoKvStoreOptions = { prefix };
  const kvStore = new DenoKvStore(kv, kvOptions);
  const kvKey: DenoKvKeyPart[] = kvStore.kvKey('k');
  const committed: boolean = await kvStore.commit('k', null, encodeState(1), { kind: 'none' });
  const kvGate = new Gate(kvStore);
  // @ts-expect-error the prefix is an array of key parts
  new DenoKvStore(kv, { prefix: 'app' });
  void [doKey, doGate, answer, routed, gateOptions, wrote, idbGate, kvKey, committed, kvGate, doStore.encodeValue({ n: 1 }), idb.encodeValue('x'), kvStore.encodeValue(1), await doStore.load('k'), await idb.load('k'), await kvStore.load('k')];
}

// MySQL, node-redis and postgres.js (issue 15 items 4 and 5).
import { MysqlStore, RETRY_ERRNOS, type MysqlClient, type MysqlStoreOptions } from 'fencegate/mysql';
import type { PostgresJsSql } from 'fencegate/postgres';
import type { NodeRedisClient } from 'fencegate/redis';

export async function useOtherClients(my: MysqlClient, sql: PostgresJsSql, nodeRedis: NodeRedisClient): Promise<unknown[]> {
  const options: MysqlStoreOptions<string> = { table: 'fenced', encode: (v) => JSON.stringify(v), decode: (t) => String(JSON.parse(t)) };
  const mysqlStore: MysqlStore<string> = await new MysqlStore<string>(my, options).init();
  const text: string = mysqlStore.encodeValue('v');
  const loaded: { state: string; version: string; value?: string } | null = await mysqlStore.load('k');
  const ok: boolean = await mysqlStore.commit('k', loaded?.version ?? null, { v: 1, mark: '1' }, { kind: 'set', value: 'v', encoded: text });
  const retry: readonly number[] = RETRY_ERRNOS;
  const pgJs = await new PgStore<string>(sql, { table: 'fenced' }).init();
  const nr = new RStore<string>(nodeRedis, { prefix: 'app:' });
  const policies: { node: string; policy: string | null }[] = await nr.checkEvictionPolicy();
  // @ts-expect-error a table name is a string
  new MysqlStore(my, { table: 1 });
  // @ts-expect-error MysqlStore needs a client
  new MysqlStore({});
  const issuer = new Issuer(mysqlStore);
  void [ok, retry, policies, issuer];
  return [new Gate(mysqlStore), new Gate(pgJs), new Gate(nr)];
}

// ───────────── fencegate/http, /hono, /express (issue 18, docs/http.md) ─────────────
import {
  fence, fenceReply, readFencing, statusFor, verdictReply, errorReply, tokenProblemReply, toResponse,
  TOKEN_HEADER, OP_ID_HEADER, HOLDER_HEADER, PROBLEM_JSON, PROBLEM_TYPE_BASE,
  type FencingInput, type Reply, type RefusalProblem, type ErrorProblem, type FencedBody, type FenceOptions, type FencedRun, type HeaderNames,
} from 'fencegate/http';
import { fencing as honoFencing, fenced as honoFenced, type FencingEnv } from 'fencegate/hono';
import { fencing as expressFencing, fenced as expressFenced, type ResponseLike } from 'fencegate/express';
import { Hono } from 'hono';

export async function useHttp(request: Request): Promise<Response> {
  const gate = new MemoryGate<string>();
  const names: HeaderNames = { token: TOKEN_HEADER, opId: OP_ID_HEADER, holder: HOLDER_HEADER };
  const options: FenceOptions = { headers: names, typeBase: PROBLEM_TYPE_BASE, retryAfter: 2 };
  const input: FencingInput = readFencing(request, names);
  const t: Epoch | string | undefined = input.token;
  const problem: 'MISSING_TOKEN' | 'MALFORMED_TOKEN' | null = input.problem;
  const status: number = statusFor('STALE_TOKEN');
  const run: FencedRun = (token, o) => gate.write('k', token, 'v', o);
  const reply: Reply = await fenceReply({ 'fencing-token': '3' }, 'k', run, options);
  const ok = verdictReply(gate.write('k', 4, 'v'), input);
  if (ok.status !== 200) {
    const body = ok.body as RefusalProblem;
    const mark: string = body.mark;
    void mark;
  } else {
    const body = ok.body as FencedBody;
    const outcome: 'advance' | 'accept' | 'duplicate' = body.outcome;
    void outcome;
  }
  const err: Reply<ErrorProblem> | null = errorReply(new Error('x'), 'k');
  const tp: Reply<RefusalProblem> = tokenProblemReply('k', input, 0);
  const contentType: string = PROBLEM_JSON;
  // @ts-expect-error statusFor takes a code
  statusFor(404);
  void [t, problem, status, reply, err, tp, contentType, toResponse(tp)];
  return fence(request, 'k', (token, o) => gate.write('k', token, 'v', o));
}

export function useHono(): Hono<FencingEnv> {
  const gate = new MemoryGate<string>();
  const app = new Hono<FencingEnv>();
  app.put('/r/:key', honoFencing({ gate, key: (c) => c.req.param('key') ?? '' }), async (c) => {
    const value = await c.req.text();
    const key: string = c.var.fencing.key;
    return honoFenced(c, (token, options) => gate.write(key, token, value, options));
  });
  return app;
}

export function useExpress(): void {
  const gate = new Gate<string>(new MemoryHostStore());
  const mw = expressFencing<{ headers: Record<string, string | string[] | undefined>; params: { key: string } }>({ gate, key: (req) => req.params.key });
  const handler = (req: { params: { key: string }; body: string }, res: ResponseLike) =>
    expressFenced(res, (token, options) => gate.write(req.params.key, token, req.body, options));
  void [mw, handler];
}

// ───────────── fencegate/otel, fencegate/prometheus (issue 18) ─────────────
import { otelAudit, type OtelAuditOptions } from 'fencegate/otel';
import { prometheusAudit, DURATION_BUCKETS, type PrometheusAuditOptions } from 'fencegate/prometheus';
import { metrics } from '@opentelemetry/api';
import { Registry } from 'prom-client';

export function useObservability(): void {
  const o: OtelAuditOptions = { meter: metrics.getMeter('fencegate'), spanEvents: false };
  const p: PrometheusAuditOptions = { registry: new Registry(), prefix: 'app_fencegate_', buckets: DURATION_BUCKETS };
  const gate = new MemoryGate({ onVerdict: otelAudit({ ...o, next: prometheusAudit(p) }) });
  const timed = (r: AuditRecord): number => r.durationMs - (r.commitMs ?? 0);
  // @ts-expect-error buckets are numbers
  prometheusAudit({ buckets: ['1'] });
  void [gate, timed];
}

// ───────────── fencegate/memory, Gate.free (issue 12) ─────────────
import { MemoryHostStore as MemoryStore } from 'fencegate/memory';

export function useMemoryEntry(): void {
  const store: MemoryHostStore<string> = new MemoryStore<string>();
  const gate = new Gate<string>(store, { keys: { k1: new Uint8Array(32) } });
  const dispose: () => void = gate[Symbol.dispose];
  gate.free();
  void [dispose];
}

// Issue 14: the gate's state cache, its commit, and the load timeout.
import { type CommitPrecondition, type HostGateOptions } from 'fencegate';
export async function useStateCache(pg: PostgresClient): Promise<void> {
  const options: HostGateOptions = { stateCache: 4096, loadTimeoutMs: 2000, commitTimeoutMs: 2000 };
  const pgStore = new PgStore(pg, { prepare: false });
  const gate = new Gate(pgStore, options);
  await gate.write('k', 1, 'v');
  gate.forget('k');
  gate.forget();
  new Gate(pgStore, { stateCache: 0 });
  const records = new Map<string, { state: string; version: number; value?: string }>();
  const own: CasStore<string> = {
    load: (key) => records.get(key) ?? null,
    commit: () => false,
    commitFrom: (key, expected: CommitPrecondition | null, nextText, change) => {
      const r = records.get(key);
      if (expected === null ? r !== undefined : r === undefined || r.version !== expected.version || r.state !== expected.state) return false;
      const version = (r?.version ?? 0) + 1;
      records.set(key, { state: nextText, version, value: change.kind === 'set' ? change.value : r?.value });
      return { version };
    },
  };
  await new Gate(own).write('k', 1, 'v');
  const cf: { version: string } | false = await pgStore.commitFrom('k', null, '{"v":1,"mark":"1"}', { kind: 'none' });
}

// A transaction store that keeps text writes `nextStateText` as it is (issue 14).
export async function useTextTransaction(): Promise<void> {
  const rows = new Map<string, string>();
  const textStore: TransactionStore<string> = {
    transaction(key, fn) {
      const out: TransactionResult<string> = fn(rows.get(key) ?? null);
      if (out === null) return false;
      const text: string = out.nextStateText ?? JSON.stringify(out.nextState);
      rows.set(key, text);
      return true;
    },
  };
  await new Gate<string>(textStore).write('k', 1, 'v');
}

// Fenced objects: fencegate/s3 and fencegate/r2 (docs/stores.md "Objects: S3 and R2").
import { S3Store, decodeObjectBody, encodeObjectBody, S3_LIMITS, type S3StoreOptions, type S3ClientLike, type FencedObjectBody, type ObjectStoreOptions } from 'fencegate/s3';
import { R2Store, R2_LIMITS, decodeObjectBody as decodeR2, encodeObjectBody as encodeR2, type R2BucketLike } from 'fencegate/r2';

export async function useObjects(s3: S3ClientLike, bucket: R2BucketLike): Promise<void> {
  const options: S3StoreOptions = { bucket: 'my-bucket', prefix: 'manifests/', contentType: 'application/json', metadata: { app: 'x' }, maxBytes: 1 << 20 };
  const store = new S3Store(s3, options);
  const name: string = store.bucket;
  const objectKey: string = store.objectKey('tenant-1.json');
  const checked: string = store.encodeValue(new Uint8Array([1]));
  const record = await store.load('tenant-1.json');
  const etag: string | undefined = record?.version;
  const landed: boolean = await store.commit('tenant-1.json', etag ?? null, { v: 1, mark: '2' }, { kind: 'set', value: 'text' });
  const cached: { version: string } | false = await store.commitFrom('tenant-1.json', null, '{"v":1,"mark":"3"}', { kind: 'delete' });
  const cas: CasStore = store;
  const gate = new Gate(store);
  await gate.write('tenant-1.json', 3, '{"plan":"pro"}');
  const json = new S3Store<{ plan: string }>(s3, { bucket: 'my-bucket', ...jsonCodec });
  const body: FencedObjectBody | null = decodeObjectBody(encodeObjectBody('{"v":1,"mark":"1"}', null));
  const r2options: ObjectStoreOptions = { readAs: 'text' };
  const r2 = new R2Store(bucket, r2options);
  const r2gate = new Gate(r2);
  const r2body = decodeR2(encodeR2('{"v":1,"mark":"1"}', new Uint8Array(0), 'AAAAAAAAAAAAAAAAAAAAAA'));
  const limits: number = S3_LIMITS.metadataBytes + R2_LIMITS.maxBytes;
  // @ts-expect-error bucket is required
  new S3Store(s3, {});
  // @ts-expect-error readAs is 'bytes' or 'text'
  new R2Store(bucket, { readAs: 'json' });
  void [name, objectKey, checked, landed, cached, cas, json, body, r2gate, r2body, limits];
}

// fencegate/guard (docs/guard.md)
import { installGuard, removeGuard, guardSql, isGuardRefusal, qualifyKey, GUARD_SQLSTATE, FENCE_SQLSTATE, type GuardResult, type GuardEngine } from 'fencegate/guard';
export async function guardApi(client: object): Promise<void> {
  const done: GuardResult = await installGuard(client, { table: 'orders', key: "'orders/' || id", fenceTable: 'fencegate', dryRun: true });
  const engine: GuardEngine = done.engine;
  const sql: string = done.sql + guardSql({ engine, table: 'orders', key: "'orders/' || id", columns: ['id'] }) + guardSql({ engine: 'mysql', remove: true, fence: true });
  await removeGuard(client, { table: 'orders', fence: true });
  const refused: boolean = isGuardRefusal(new Error(sql));
  const codes: string = `${GUARD_SQLSTATE}${FENCE_SQLSTATE}${qualifyKey('id', ['id'], 'NEW', 'postgres')}${refused}`;
  void codes;
}

// The caller's own data (docs/stores.md "Your own data"): Gate.transaction, fenceIn, fenceInSync;
// PostgresStore's isolation option and both stores' verbs.
import { PostgresStore as OwnPgStore } from 'fencegate/postgres';
import { MysqlStore as OwnMysqlStore } from 'fencegate/mysql';
export async function ownDataNetwork(pg: PostgresClient, my: import('fencegate/mysql').MysqlClient, handle: unknown): Promise<number> {
  const gate = new Gate(new OwnPgStore(pg, { isolation: 'serializable' }));
  const v = await gate.transaction('orders/42', 7, async (tx: PostgresClient) => (await tx.query('UPDATE orders SET status = $1', ['paid'])).rowCount ?? 0, { opId: 'o-1' });
  const n: number | undefined = v.result;
  const f: Verdict = await gate.fenceIn(handle, 'orders/42', 7);
  const s: Verdict = gate.fenceInSync(handle, 'orders/42', 7);
  const mstore = new OwnMysqlStore(my);
  const r: { version: string } | null = await mstore.fencedTransaction('k', { cached: null, decide: () => null, run: () => 1, body: null });
  await mstore.fenceIn(handle, 'k', { decide: () => null });
  return (n ?? 0) + Number(f.markAfter) + Number(s.markAfter) + (r === null ? 0 : 1);
}

// Redis: the own-data transaction with a command list.
import { TRANSACTION_COMMANDS, MAX_COMMAND_ARGUMENTS, hashSlot, type RedisCommandList, type RedisArgument } from 'fencegate/redis';

export async function useRedisTransaction(redis: RedisClient): Promise<void> {
  const store = new RStore(redis);
  const arg: RedisArgument = new Uint8Array([1]);
  const commands: RedisCommandList = [['HSET', '{job:7}:state', 'state', 'done'], ['INCRBY', '{job:7}:n', 2], ['SET', '{job:7}:b', arg]];
  store.checkBody(commands);
  const v = await new Gate(store).transaction<unknown[]>('{job:7}', 7, commands, { opId: 'op-1' });
  const replies: unknown[] | undefined = v.result;
  const slot: number = hashSlot('{job:7}') + hashSlot(new Uint8Array([0x61]));
  const names: readonly string[] = TRANSACTION_COMMANDS;
  const most: number = MAX_COMMAND_ARGUMENTS;
  // @ts-expect-error a command starts with its name
  const bad: RedisCommandList = [[1, 'k']];
  void [replies, slot, names, most, bad];
}
