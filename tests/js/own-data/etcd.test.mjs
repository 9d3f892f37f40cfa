// The caller's own keys on etcd (docs/stores.md "Your own data"), on the real 3-member
// cluster of scripts/with-services.sh: the body's put/delete/compare join the fence's one
// Txn. Exact verdicts, the caller's keys and the mark after each step, with the state
// cache on and off; a throwing body writes nothing; one op id applies once; a caller's
// compare that fails is a conflict (retried, then COMMIT_CONFLICT, nothing written);
// builder misuse and fenceIn are INVALID_ARGUMENT.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import { Gate } from '../../../pkg/node.mjs';
import { EtcdStore } from '../../../pkg/adapters/etcd.mjs';

const ETCD_URLS = process.env.FENCEGATE_ETCD_URLS;
const skip = !ETCD_URLS && 'FENCEGATE_ETCD_URLS is not set (scripts/with-services.sh)';
const V = (key, outcome, token, markBefore, markAfter, extra = {}) => ({ key, ok: true, outcome, code: null, token, markBefore, markAfter, ...extra });
const stale = (key, token, mark) => ({ key, ok: false, outcome: 'reject', code: 'STALE_TOKEN', token, markBefore: mark, markAfter: mark });

async function withEtcd(f) {
  const client = new Etcd3({ hosts: ETCD_URLS.split(',') });
  const ns = `own-${randomBytes(6).toString('hex')}/`;
  try {
    await f(client, ns);
  } finally {
    await client.delete().prefix(ns);
    client.close();
  }
}

for (const stateCache of [0, 1024]) {
  test(`etcd transaction (stateCache ${stateCache}): the caller's puts commit in the fence's Txn; stale refused, body never called, keys unchanged`, { skip }, () => withEtcd(async (client, ns) => {
    const store = new EtcdStore(client, { prefix: `${ns}fence/` });
    const gate = new Gate(store, { stateCache });
    const order = `${ns}orders/42`;
    await client.put(order).value('new');
    let calls = 0;
    const setStatus = (s) => (tx) => {
      calls++;
      tx.put(order, s).put(`${ns}log/${calls}`, s);
      return calls;
    };
    assert.deepEqual(await gate.transaction('orders/42', 33, setStatus('paid')), V('orders/42', 'advance', 33, 0, 33, { result: 1 }));
    assert.deepEqual(await gate.transaction('orders/42', 34, setStatus('shipped')), V('orders/42', 'advance', 34, 33, 34, { result: 2 }));
    assert.deepEqual(await gate.transaction('orders/42', 34, setStatus('shipped-2')), V('orders/42', 'accept', 34, 34, 34, { result: 3 }));
    assert.deepEqual(await gate.transaction('orders/42', 33, setStatus('refunded')), stale('orders/42', 33, 34));
    assert.equal(calls, 3);
    assert.deepEqual(await client.getAll().prefix(`${ns}orders/`).strings(), { [order]: 'shipped-2' });
    assert.deepEqual(await client.getAll().prefix(`${ns}log/`).strings(), { [`${ns}log/1`]: 'paid', [`${ns}log/2`]: 'shipped', [`${ns}log/3`]: 'shipped-2' });
    assert.equal(await client.get(`${ns}fence/s/orders/42`).string(), '{"v":1,"mark":"34"}');
    assert.equal(await client.get(`${ns}fence/v/orders/42`).string(), null);
    // another gate (another process) advances; this gate's cache, if any, still says 34
    const other = new Gate(new EtcdStore(client, { prefix: `${ns}fence/` }), { stateCache: 0 });
    assert.deepEqual(await other.transaction('orders/42', 35, (tx) => { tx.put(order, 'other'); }), V('orders/42', 'advance', 35, 34, 35, { result: undefined }));
    assert.deepEqual(await gate.transaction('orders/42', 34, setStatus('zombie')), stale('orders/42', 34, 35));
    assert.equal(await client.get(order).string(), 'other');
    assert.equal(await gate.mark('orders/42'), 35);
  }));
}

test('etcd transaction: a throwing body is CALLBACK_FAILED and sends nothing; the same op id applies once; delete joins too', { skip }, () => withEtcd(async (client, ns) => {
  const gate = new Gate(new EtcdStore(client, { prefix: `${ns}fence/` }));
  const order = `${ns}orders/42`;
  await client.put(order).value('paid');
  await client.put(`${ns}tmp`).value('x');
  await gate.establish('orders/42', 5);
  const boom = new Error('refund refused');
  const e = await gate.transaction('orders/42', 6, (tx) => { tx.put(order, 'half'); throw boom; }).catch((x) => x);
  assert.equal(e.code, 'CALLBACK_FAILED');
  assert.equal(e.cause, boom);
  assert.deepEqual(e.verdict, V('orders/42', 'advance', 6, 5, 6));
  assert.equal(await client.get(order).string(), 'paid');
  assert.equal(await gate.mark('orders/42'), 5);
  let calls = 0;
  const refund = (tx) => { calls++; tx.put(order, 'refunded').delete(`${ns}tmp`); return 'done'; };
  assert.deepEqual(await gate.transaction('orders/42', 7, refund, { opId: 'r-1' }), V('orders/42', 'advance', 7, 5, 7, { result: 'done' }));
  assert.deepEqual(await gate.transaction('orders/42', 7, refund, { opId: 'r-1' }), { key: 'orders/42', ok: true, outcome: 'duplicate', code: null, original: 'advance', token: 7, markBefore: 7, markAfter: 7 });
  assert.equal(calls, 1);
  assert.deepEqual(await client.getAll().prefix(ns).keys().then((ks) => ks.filter((k) => !k.startsWith(`${ns}fence/`))), [order]);
  assert.equal(await client.get(order).string(), 'refunded');
}));

test('etcd transaction: a caller\'s compare that fails is a conflict: the body runs again on a fresh read, and one that never holds is COMMIT_CONFLICT with nothing written', { skip }, () => withEtcd(async (client, ns) => {
  const gate = new Gate(new EtcdStore(client, { prefix: `${ns}fence/` }), { maxRetries: 2 });
  const balance = `${ns}balance`;
  await client.put(balance).value('100');
  let tries = 0;
  const v = await gate.transaction('acct', 3, async (tx) => {
    tries++;
    const r = await client.get(balance).exec();
    const kv = r.kvs[0];
    if (tries === 1) await client.put(balance).value('90'); // someone else moves it under the first attempt
    tx.compare(balance, 'mod', '==', kv.mod_revision).put(balance, String(Number(kv.value.toString()) - 10));
    return tries;
  });
  assert.deepEqual(v, V('acct', 'advance', 3, 0, 3, { result: 2 }));
  assert.equal(await client.get(balance).string(), '80');
  tries = 0;
  const e = await gate.transaction('acct', 4, (tx) => { tries++; tx.compare(balance, 'value', '==', 'never').put(balance, '0'); }).catch((x) => x);
  assert.equal(e.code, 'COMMIT_CONFLICT');
  assert.equal(e.attempts, 3);
  assert.match(e.message, /a compare of the caller's failed/);
  assert.equal(tries, 3);
  assert.equal(await client.get(balance).string(), '80');
  assert.equal(await gate.mark('acct'), 3);
}));

test('etcd: builder misuse and fenceIn are INVALID_ARGUMENT, nothing written', { skip }, () => withEtcd(async (client, ns) => {
  const gate = new Gate(new EtcdStore(client, { prefix: `${ns}fence/` }));
  const codeOf = (p) => p.then(() => 'no error', (e) => [e.code, e.cause?.message ?? e.message]);
  assert.deepEqual(await codeOf(gate.transaction('k', 1, (tx) => { tx.put(`${ns}fence/s/k`, 'x'); })),
    ['CALLBACK_FAILED', `EtcdStore: ${JSON.stringify(`${ns}fence/s/k`)} is under the fence prefix (the fence keys belong to fencegate)`]);
  assert.deepEqual(await codeOf(gate.transaction('k', 1, (tx) => { tx.compare(`${ns}a`, 'lease', '==', 1); })),
    ['CALLBACK_FAILED', "EtcdStore: compare target must be 'value', 'version', 'create' or 'mod', got \"lease\""]);
  assert.deepEqual(await codeOf(gate.transaction('k', 1, (tx) => { tx.compare(`${ns}a`, 'mod', '>=', 1); })),
    ['CALLBACK_FAILED', "EtcdStore: compare op must be '==', '!=', '<' or '>', got \">=\""]);
  assert.deepEqual(await codeOf(gate.fenceIn(client.if(`${ns}a`, 'Value', '==', 'x'), 'k', 1)),
    ['INVALID_ARGUMENT', 'EtcdStore.fenceIn: an etcd Txn cannot be fenced from outside (a refusal would run its else branch; a resent Txn that landed answers succeeded: false): use gate.transaction(key, token, (tx) => { tx.put(…) })']);
  assert.deepEqual(await client.getAll().prefix(ns).keys(), []);
  assert.equal(await gate.mark('k'), 0);
}));
