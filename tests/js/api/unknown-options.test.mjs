// Unknown option names (docs/decisions/unknown-options.md):
// every public options/argument object refuses a name it does not know with
// FencegateError INVALID_ARGUMENT (the message names it and lists the known
// ones, `option` holds it) before anything is read or written. Also: SqliteStore
// setup failures are STORE_ERROR with `cause`; a throwing Issuer clock is STORE_ERROR.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { MemoryGate, Gate, Issuer, MemoryHostStore, reconcile, mintToken, verifyToken, jsonCodec, FencegateError } from '../../../pkg/node.mjs';
import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';
import { RedisStore } from '../../../pkg/adapters/redis.mjs';
import { PostgresStore } from '../../../pkg/adapters/postgres.mjs';
import { MysqlStore } from '../../../pkg/adapters/mysql.mjs';
import { EtcdStore } from '../../../pkg/adapters/etcd.mjs';
import { DenoKvStore } from '../../../pkg/adapters/deno-kv.mjs';
import { IndexedDbStore, openFenceDatabase } from '../../../pkg/adapters/indexeddb.mjs';
import { otelAudit } from '../../../pkg/integrations/otel.mjs';
import { prometheusAudit } from '../../../pkg/integrations/prometheus.mjs';
import * as hono from '../../../pkg/integrations/hono.mjs';
import * as express from '../../../pkg/integrations/express.mjs';
import { fence, readFencing, verdictReply, errorReply } from '../../../pkg/integrations/http.mjs';

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3');

/** Asserts INVALID_ARGUMENT naming `option` (in `option` and in the message, with the known names listed). */
function refused(e, option) {
  assert.ok(e instanceof FencegateError, `a FencegateError, got ${e}`);
  assert.equal(e.code, 'INVALID_ARGUMENT', e.message);
  assert.equal(e.option, option, e.message);
  assert.ok(e.message.includes(JSON.stringify(option)) || e.message.includes(option), e.message);
  return true;
}
const unknown = (option) => (e) => refused(e, option) && /\(known: /.test(e.message);

test('MemoryGate: write with {opId} then {opid} is INVALID_ARGUMENT, applied once (was accept: applied twice)', () => {
  const m = new MemoryGate();
  const first = m.write('p', 1, 'charge-1', { opId: 'c1' });
  assert.equal(first.outcome, 'advance');
  assert.throws(() => m.write('p', 1, 'charge-2', { opid: 'c1' }), unknown('opid'));
  assert.deepEqual(m.read('p'), { mark: 1, value: 'charge-1', hasValue: true });
  assert.equal(m.counters().total, 1);
  // the known names still work, and a retry with opId is a duplicate
  assert.equal(m.write('p', 1, 'charge-1', { opId: 'c1' }).outcome, 'duplicate');
});

test('MemoryGate: write {foo}, {Holder}, {fingerPrint}, establish {foo}: INVALID_ARGUMENT, mark and value unchanged', () => {
  const m = new MemoryGate();
  m.write('k', 3, 'v3');
  assert.throws(() => m.write('k', 4, 'v4', { foo: 1 }), unknown('foo'));
  assert.throws(() => m.write('k', 4, 'v4', { Holder: 'h' }), unknown('Holder'));
  assert.throws(() => m.write('k', 4, 'v4', { opId: 'o', fingerPrint: 'x' }), unknown('fingerPrint'));
  assert.throws(() => m.establish('k', 9, { foo: 1 }), unknown('foo'));
  assert.throws(() => m.establish('new', 9, { foo: 1 }), unknown('foo'));
  assert.deepEqual(m.read('k'), { mark: 3, value: 'v3', hasValue: true });
  assert.equal(m.mark('new'), 0);
  assert.deepEqual(m.keys(), ['k']);
  // an inherited enumerable name is refused too
  assert.throws(() => m.write('k', 4, 'v4', Object.create({ opid: 'x' })), unknown('opid'));
  assert.equal(m.write('k', 4, 'v4', { opId: 'o', holder: 'h', fingerprint: 'f' }).outcome, 'advance');
});

test('Gate: write/establish/delete with unknown names reject with INVALID_ARGUMENT; the store is unchanged', async () => {
  const store = new MemoryHostStore();
  const g = new Gate(store);
  assert.equal((await g.write('p', 1, 'charge-1', { opId: 'c1' })).outcome, 'advance');
  const before = JSON.stringify(store.load('p'));
  await assert.rejects(g.write('p', 1, 'charge-2', { opid: 'c1' }), unknown('opid'));
  await assert.rejects(g.write('p', 2, 'x', { foo: 1 }), unknown('foo'));
  await assert.rejects(g.write('p', 2, 'x', { Holder: 'h' }), unknown('Holder'));
  await assert.rejects(g.write('p', 2, 'x', { opId: 'o', fingerPrint: 'x' }), unknown('fingerPrint'));
  await assert.rejects(g.establish('p', 2, { foo: 1 }), unknown('foo'));
  await assert.rejects(g.delete('p', 2, { foo: 1 }), unknown('foo'));
  assert.equal(JSON.stringify(store.load('p')), before);
  assert.deepEqual(await g.read('p'), { mark: 1, value: 'charge-1', hasValue: true });
  assert.equal(g.counters().total, 1);
});

test('Issuer: acquire/renew/release/raise with an unknown member are INVALID_ARGUMENT; nothing is issued', async () => {
  const issuer = new Issuer();
  await assert.rejects(issuer.acquire({ scope: 's', holder: 'a', ttlMs: 1000, now: 0, requestID: 'r1' }), unknown('requestID'));
  assert.deepEqual(await issuer.current('s'), { scope: 's', epoch: 0, lease: null });
  const lease = await issuer.acquire({ scope: 's', holder: 'a', ttlMs: 1000, now: 0, requestId: 'r1' });
  assert.equal(lease.epoch, 1);
  await assert.rejects(issuer.renew({ scope: 's', leaseId: lease.leaseId, holder: 'a', ttlMs: 5000, now: 1, ttl: 9 }), unknown('ttl'));
  await assert.rejects(issuer.release({ scope: 's', leaseId: lease.leaseId, holder: 'a', now: 2 }), unknown('now'));
  await assert.rejects(issuer.raise({ scope: 's', atLeast: 7, now: 3, revoked: true }), unknown('revoked'));
  const cur = await issuer.current('s');
  assert.equal(cur.epoch, 1);
  assert.equal(cur.lease.expiresAt, 1000);
  assert.equal(cur.lease.leaseId, lease.leaseId);
});

test('Issuer: a clock that throws is STORE_ERROR (callback "clock", cause kept); nothing is issued', async () => {
  const boom = new Error('clock down');
  const issuer = new Issuer(undefined, { clock: () => { throw boom; } });
  await assert.rejects(issuer.acquire({ scope: 's', holder: 'a', ttlMs: 10 }), (e) => {
    assert.ok(e instanceof FencegateError);
    assert.equal(e.code, 'STORE_ERROR');
    assert.equal(e.callback, 'clock');
    assert.equal(e.cause, boom);
    assert.match(e.message, /clock down/);
    return true;
  });
  assert.deepEqual(await issuer.current('s'), { scope: 's', epoch: 0, lease: null });
});

test('reconcile({ …, dryrun: true }) is INVALID_ARGUMENT: no real run, issuer and resources unchanged', async () => {
  const issuer = new Issuer(new MemoryHostStore());
  const gate = new Gate(new MemoryHostStore());
  await gate.establish('k', 5); // above the issuer's epoch 0: a real run would raise the issuer to 5
  await assert.rejects(reconcile({ issuer, gate, scopes: { k: ['k'] }, now: 0, dryrun: true }), unknown('dryrun'));
  assert.equal((await issuer.current('k')).epoch, 0);
  assert.equal(await gate.mark('k'), 5);
  await assert.rejects(reconcile({ issuer, gate, scopes: [{ scope: 'k', keys: ['k'], key: 'x' }], now: 0 }), unknown('key'));
  assert.equal((await issuer.current('k')).epoch, 0);
  // the dry run spelled right plans the raise and writes nothing
  const dry = await reconcile({ issuer, gate, scopes: { k: ['k'] }, now: 0, dryRun: true });
  assert.equal(dry.changes[0].epochAfter, 5);
  assert.equal((await issuer.current('k')).epoch, 0);
});

test('mintToken: unknown claim or key fields; verifyToken: unknown option names → INVALID_ARGUMENT', () => {
  const key = { kid: 'k1', hmac: new Uint8Array(32).fill(7) };
  assert.throws(() => mintToken({ scope: 's', epoch: 1, leaseID: 'L' }, key), unknown('leaseID'));
  assert.throws(() => mintToken({ scope: 's', epoch: 1 }, { ...key, secret: 'x' }), unknown('secret'));
  const t = mintToken({ scope: 's', epoch: 1, leaseId: 'L' }, key);
  assert.throws(() => verifyToken(t, { keys: { k1: key.hmac }, scope: 's', Scope: 'other' }), unknown('Scope'));
  assert.throws(() => verifyToken(t, { keys: { k1: key.hmac }, scope: 's', retire: ['k1'] }), unknown('retire'));
  assert.equal(verifyToken(t, { keys: { k1: key.hmac }, scope: 's' }).epoch, 1);
});

test('SqliteStore: options {foo}, 5 and {createTable: "no"} are INVALID_ARGUMENT; no table is made', () => {
  const db = new Database(':memory:');
  const tables = () => db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
  assert.throws(() => new SqliteStore(db, { foo: 1 }), unknown('foo'));
  assert.throws(() => new SqliteStore(db, 5), (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT' && e.options === 5);
  assert.throws(() => new SqliteStore(db, null), (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT');
  assert.throws(() => new SqliteStore(db, { createTable: 'no' }), (e) => refused(e, 'createTable') && /boolean/.test(e.message));
  assert.throws(() => new SqliteStore(db, { encode: 5, decode: (s) => s }), (e) => refused(e, 'encode'));
  assert.deepEqual(tables(), []);
  new SqliteStore(db, { table: 't2', createTable: true });
  assert.deepEqual(tables(), ['t2']);
  new SqliteStore(db, { ...jsonCodec, table: 't3' }); // a codec object spread in: its `name` is a known member
  assert.deepEqual(tables().sort(), ['t2', 't3']);
  db.close();
});

test('SqliteStore: setup failures are STORE_ERROR with the SqliteError as cause (no such table; SQLITE_BUSY)', () => {
  const db = new Database(':memory:');
  assert.throws(() => new SqliteStore(db, { createTable: false }), (e) => {
    assert.ok(e instanceof FencegateError);
    assert.equal(e.code, 'STORE_ERROR');
    assert.equal(e.table, 'fencegate');
    assert.equal(e.cause.name, 'SqliteError');
    assert.match(e.cause.message, /no such table/);
    return true;
  });
  db.close();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fg-opts-'));
  const file = path.join(dir, 'busy.db');
  const holder = new Database(file);
  holder.exec('BEGIN EXCLUSIVE');
  const other = new Database(file, { timeout: 0 });
  try {
    assert.throws(() => new SqliteStore(other), (e) => {
      assert.ok(e instanceof FencegateError);
      assert.equal(e.code, 'STORE_ERROR');
      assert.match(e.cause.code, /^SQLITE_BUSY/);
      return true;
    });
  } finally {
    holder.exec('ROLLBACK');
    other.close();
    holder.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the other adapters: unknown option names and wrong types are INVALID_ARGUMENT at construction', async () => {
  const redisLike = { defineCommand() {}, on() {}, status: 'ready', options: {} };
  const cases = [
    ['RedisStore', (o) => new RedisStore(redisLike, o), { allowevictions: true }, 'allowevictions'],
    ['PostgresStore', (o) => new PostgresStore({ query: async () => ({ rows: [] }) }, o), { prepared: false }, 'prepared'],
    ['MysqlStore', (o) => new MysqlStore({ query: async () => [[]], execute: async () => [[]], getConnection: async () => ({}) }, o), { tabel: 'x' }, 'tabel'],
    ['EtcdStore', (o) => new EtcdStore({ kv: { txn() {} } }, o), { prefx: 'a/' }, 'prefx'],
    ['DenoKvStore', (o) => new DenoKvStore({ atomic() {}, get() {} }, o), { preffix: ['a'] }, 'preffix'],
    ['IndexedDbStore', (o) => new IndexedDbStore({ transaction() {}, objectStoreNames: { contains: () => true } }, o), { store: 'x' }, 'store'],
  ];
  for (const [name, make, bad, option] of cases) {
    assert.throws(() => make(bad), unknown(option), name);
    assert.throws(() => make(5), (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT', name);
    assert.throws(() => make({ decode: 5, encode: (v) => v }), (e) => refused(e, 'decode'), name);
  }
  await assert.rejects(async () => openFenceDatabase('db', { storName: 'x' }), unknown('storName'));
});

test('otelAudit / prometheusAudit: a non-object, an unknown name or a wrong type is INVALID_ARGUMENT at the call', () => {
  const invalid = (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT';
  assert.throws(() => otelAudit(5), invalid);
  assert.throws(() => otelAudit({ next: 5 }), (e) => refused(e, 'next'));
  assert.throws(() => otelAudit({ spanevents: false }), unknown('spanevents'));
  assert.throws(() => prometheusAudit(5), invalid);
  assert.throws(() => prometheusAudit({ registry: 5 }), (e) => refused(e, 'registry'));
  assert.throws(() => prometheusAudit({ bucket: [1] }), unknown('bucket'));
  assert.equal(typeof otelAudit(), 'function');
});

test('hono / express fencing(): missing options, gate 5, key 5 and unknown names are INVALID_ARGUMENT at the call', () => {
  const gate = new MemoryGate();
  const key = () => 'k';
  for (const [name, fencing] of [['hono', hono.fencing], ['express', express.fencing]]) {
    assert.throws(() => fencing(), (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT', name);
    assert.throws(() => fencing({ gate: 5, key }), (e) => refused(e, 'gate'), name);
    assert.throws(() => fencing({ gate: {}, key }), (e) => refused(e, 'gate'), name);
    assert.throws(() => fencing({ gate, key: 5 }), (e) => refused(e, 'key'), name);
    assert.throws(() => fencing({ gate, key, header: { token: 'X' } }), unknown('header'), name);
    assert.throws(() => fencing({ gate, key, headers: { tokn: 'X' } }), unknown('tokn'), name);
    assert.equal(typeof fencing({ gate, key, headers: { token: 'X' }, retryAfter: 2 }), 'function', name);
  }
});

test('http: fence / readFencing / verdictReply / errorReply options with unknown names are INVALID_ARGUMENT; the gate is not called', async () => {
  const gate = new MemoryGate();
  let called = 0;
  const req = new Request('http://x/', { method: 'PUT', headers: { 'fencing-token': '1' } });
  await assert.rejects(fence(req, 'k', (t, o) => { called++; return gate.write('k', t, 'v', o); }, { retryafter: 3 }), unknown('retryafter'));
  await assert.rejects(fence(req, 'k', (t, o) => { called++; return gate.write('k', t, 'v', o); }, { headers: { opid: 'X' } }), unknown('opid'));
  assert.equal(called, 0);
  assert.equal(gate.mark('k'), 0);
  assert.throws(() => readFencing({}, { Token: 'X' }), unknown('Token'));
  const v = gate.write('k', 1, 'v');
  assert.throws(() => verdictReply(v, null, { typebase: 'x' }), unknown('typebase'));
  assert.throws(() => errorReply(new FencegateError('STORE_ERROR', 'x'), 'k', { retry: 1 }), unknown('retry'));
});
