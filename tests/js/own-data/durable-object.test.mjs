// The caller's own data in a Durable Object, in real workerd (Miniflare; docs/stores.md
// "Your own data"): the KV API (DurableObjectStore, the body gets storage.transaction's
// txn; fenceIn on that txn) and the SQLite-backed storage (DurableObjectSqlStore, the body
// gets ctx.storage.sql inside transactionSync; fenceInSync inside the caller's
// transactionSync). The scenarios run in tests/workerd/own-data-worker.mjs; exact
// verdicts, marks, fence entries/rows and the caller's keys/rows after each.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorker, miniflare, root } from '../workerd.mjs';
import { caseNames } from '../stores/run-cases.mjs';

let worker;
let mf;
let n = 0;

before(async () => {
  worker = await bundleWorker(join(root, 'tests/workerd/own-data-worker.mjs'), 'do-own-data');
  mf = await miniflare(worker, { durableObjects: { KV: 'Kv', SQL: { className: 'Sql', useSQLite: true } }, compatibilityFlags: ['nodejs_compat'] });
});

after(async () => {
  await mf?.dispose();
  if (worker) rmSync(worker.dir, { recursive: true, force: true });
});

/** Runs `body.scenario` in a fresh object of class `cls` ('kv' | 'sql'). */
async function run(cls, body) {
  const r = await mf.dispatchFetch(`http://localhost/${cls}/o-${n++}`, { method: 'POST', body: JSON.stringify(body) });
  const text = await r.text();
  assert.equal(r.status, 200, text);
  return JSON.parse(text);
}

const V = (key, outcome, token, markBefore, markAfter, extra = {}) => ({ key, ok: true, outcome, code: null, token, markBefore, markAfter, ...extra });
const stale = (key, token, mark) => ({ key, ok: false, outcome: 'reject', code: 'STALE_TOKEN', token, markBefore: mark, markAfter: mark });
const ROLLED_BACK = 'the statements of the fenced transaction on "orders/42" failed, so it was rolled back (the mark and your data are as before): ';
const STALE_IN = (t, m) => `fenceIn "orders/42": token ${t} is below the mark ${m}; the surrounding transaction must not commit (throwing rolls it back)`;
const DUP_IN = (m) => `fenceIn "orders/42": operation id already applied in epoch ${m}; the surrounding transaction must not commit (throwing rolls it back)`;

for (const stateCache of [undefined, 0]) {
  test(`DO KV API transaction (stateCache ${stateCache ?? 'default'}): the caller's txn.put commits with the fence; stale refused, body never called, keys unchanged`, async () => {
    const out = await run('kv', { scenario: 'transaction', stateCache });
    assert.deepEqual(out.verdicts, [
      V('orders/42', 'advance', 33, 0, 33, { result: 1 }),
      V('orders/42', 'advance', 34, 33, 34, { result: 2 }),
      V('orders/42', 'accept', 34, 34, 34, { result: 3 }),
      stale('orders/42', 33, 34),
    ]);
    assert.equal(out.calls, 3);
    assert.deepEqual(out.orders, { 'order:42': 'shipped-2', 'order:log:1': 'paid', 'order:log:2': 'shipped', 'order:log:3': 'shipped-2' });
    assert.equal(out.mark, 34);
    assert.deepEqual(out.entry, { state: '{"v":1,"mark":"34"}', value: null });
  });
}

test('DO KV API transaction: a throwing body is CALLBACK_FAILED (cause: its error), its puts rolled back, mark unchanged', async () => {
  const out = await run('kv', { scenario: 'throws' });
  assert.deepEqual(out, {
    thrown: { code: 'CALLBACK_FAILED', message: `${ROLLED_BACK}the refund service said no`, causeIsBody: true, verdict: V('orders/42', 'advance', 6, 5, 6) },
    orders: { 'order:42': 'paid' },
    mark: 5,
  });
});

test('DO KV API transaction: the same op id applies once', async () => {
  assert.deepEqual(await run('kv', { scenario: 'duplicate' }), {
    first: V('orders/43', 'advance', 7, 0, 7, { result: 'counted' }),
    again: { key: 'orders/43', ok: true, outcome: 'duplicate', code: null, original: 'advance', token: 7, markBefore: 7, markAfter: 7 },
    calls: 1,
    orders: { 'order:43': 1 },
  });
});

test('DO KV API: a body that is not a function, and the storage itself as fenceIn handle, are INVALID_ARGUMENT; nothing written', async () => {
  assert.deepEqual(await run('kv', { scenario: 'arguments' }), {
    body: ['INVALID_ARGUMENT', 'INVALID_ARGUMENT', 'INVALID_ARGUMENT'],
    storageAsHandle: { code: 'INVALID_ARGUMENT', message: 'DurableObjectStore.fenceIn: the handle must be the txn of storage.transaction(async (txn) => …), so the fence and your puts commit together' },
    entry: null,
  });
});

test('DO KV API fenceIn(txn) inside storage.transaction: applies with the caller\'s put; stale and duplicate throw and roll back; a caller that catches the refusal cannot commit its puts', async () => {
  const out = await run('kv', { scenario: 'fenceIn' });
  assert.deepEqual(out, {
    applied: V('orders/42', 'advance', 9, 0, 9),
    afterApplied: { 'order:42': 'refunded' },
    stale: { code: 'STALE_TOKEN', message: STALE_IN(8, 9), verdict: stale('orders/42', 8, 9), mark: 9 },
    afterStale: { 'order:42': 'refunded' },
    caughtCode: 'STALE_TOKEN',
    // fenceIn called txn.rollback() on the refusal: the put after it fails, the one before it is gone
    caughtAndPut: { error: { code: 'Error', message: 'Cannot put() on rolled back transaction' } },
    afterCaught: { 'order:42': 'refunded' },
    once: V('orders/42', 'advance', 10, 9, 10),
    twice: { code: 'DUPLICATE_OPERATION', message: DUP_IN(10), verdict: { key: 'orders/42', ok: true, outcome: 'duplicate', code: null, original: 'advance', token: 10, markBefore: 10, markAfter: 10 }, mark: 10 },
    afterDuplicate: { 'order:42': 'once' },
    mark: 10,
  });
});

const ORDERS = (s42, s43 = 'new') => [{ id: 42, status: s42 }, { id: 43, status: s43 }];

for (const stateCache of [0, 1024]) {
  test(`DO SQLite storage transaction (stateCache ${stateCache}): the caller's UPDATE commits with the fence row; stale refused, rows unchanged; another instance's newer epoch is seen`, async () => {
    const out = await run('sql', { scenario: 'transaction', stateCache });
    assert.deepEqual(out, {
      verdicts: [
        V('orders/42', 'advance', 33, 0, 33, { result: 1 }),
        V('orders/42', 'advance', 34, 33, 34, { result: 1 }),
        V('orders/42', 'accept', 34, 34, 34, { result: 1 }),
        stale('orders/42', 33, 34),
      ],
      calls: 3,
      orders: ORDERS('shipped-2'),
      mark: 34,
      fence: { state: '{"v":1,"mark":"34"}', value: null, version: 3 },
      other: V('orders/42', 'advance', 35, 34, 35, { result: 1 }),
      // with the cache on, this gate remembers mark 34: the conditional update misses, the row is read
      zombie: stale('orders/42', 34, 35),
      ordersAfter: ORDERS('other'),
      fenceAfter: { state: '{"v":1,"mark":"35"}', value: null, version: 4 },
      // a key this gate just wrote: cache on, one conditional UPDATE; off, SELECT then UPDATE
      statementsCachedKey: stateCache === 0 ? 2 : 1,
    });
  });
}

test('DO SQLite storage transaction: a throwing body or a failing statement is CALLBACK_FAILED, rolled back; an async body is refused (INVALID_ARGUMENT)', async () => {
  assert.deepEqual(await run('sql', { scenario: 'throws' }), {
    thrown: { code: 'CALLBACK_FAILED', message: `${ROLLED_BACK}no such column: stauts`, causeIsBody: true, verdict: V('orders/42', 'advance', 6, 5, 6) },
    sqlError: { code: 'CALLBACK_FAILED', message: `${ROLLED_BACK}no such column: stauts: SQLITE_ERROR`, verdict: V('orders/42', 'advance', 6, 5, 6) },
    async: { code: 'INVALID_ARGUMENT', message: 'DurableObjectSqlStore: transactionSync is synchronous: the statements function returned a Promise (rolled back; run the statements without await)' },
    orders: ORDERS('paid'),
    mark: 5,
    fence: { state: '{"v":1,"mark":"5"}', value: null, version: 1 },
  });
});

test('DO SQLite storage transaction: the same op id applies once', async () => {
  assert.deepEqual(await run('sql', { scenario: 'duplicate' }), {
    first: V('orders/43', 'advance', 7, 0, 7, { result: 1 }),
    again: { key: 'orders/43', ok: true, outcome: 'duplicate', code: null, original: 'advance', token: 7, markBefore: 7, markAfter: 7 },
    calls: 1,
    orders: ORDERS('new', 'new+'),
  });
});

test('DO SQLite storage fenceInSync(sql) inside the caller\'s transactionSync: applies with its UPDATE; stale and duplicate throw and roll back; another handle is INVALID_ARGUMENT', async () => {
  const out = await run('sql', { scenario: 'fenceIn' });
  assert.deepEqual(out, {
    applied: V('orders/42', 'advance', 9, 0, 9),
    stale: { code: 'STALE_TOKEN', message: STALE_IN(8, 9), verdict: stale('orders/42', 8, 9), mark: 9 },
    afterStale: ORDERS('refunded'),
    once: V('orders/42', 'advance', 10, 9, 10),
    twice: { code: 'DUPLICATE_OPERATION', message: DUP_IN(10), verdict: { key: 'orders/42', ok: true, outcome: 'duplicate', code: null, original: 'advance', token: 10, markBefore: 10, markAfter: 10 }, mark: 10 },
    afterDuplicate: ORDERS('once'),
    otherHandle: { code: 'INVALID_ARGUMENT', message: 'DurableObjectSqlStore.fenceIn: the handle must be this storage\'s ctx.storage.sql (inside ctx.storage.transactionSync)' },
    mark: 10,
    fence: { state: '{"v":4,"mark":"10","holder":null,"ops":[["o-1","9"]],"evicted":null,"quarantine":null}', value: null, version: 2 },
  });
});

test('DurableObjectSqlStore as an ordinary gate store: write, stale, read, delete; wrong constructor arguments are INVALID_ARGUMENT', async () => {
  assert.deepEqual(await run('sql', { scenario: 'plain' }), {
    write: V('v', 'advance', 3, 0, 3),
    stale: stale('v', 2, 3),
    read: { mark: 3, value: { a: 1 }, hasValue: true },
    del: V('v', 'advance', 4, 3, 4),
    readAfter: { mark: 4, hasValue: false },
    row: { state: '{"v":1,"mark":"4"}', value: null, version: 2 },
    constructor: [
      'DurableObjectSqlStore needs the storage of a SQLite-backed Durable Object (ctx.storage with sql and transactionSync)',
      'DurableObjectSqlStore needs the storage of a SQLite-backed Durable Object (ctx.storage with sql and transactionSync)',
      'table must be a SQL identifier (letters, digits, _; not starting with _cf_)',
      'table must be a SQL identifier (letters, digits, _; not starting with _cf_)',
      'unknown DurableObjectSqlStore option "tabel" (known: table, encode, decode, name)',
    ],
  });
});

test('DurableObjectSqlStore: the whole store conformance suite passes in a SQLite-backed object', async () => {
  const results = await run('sql', { scenario: 'conformance' });
  assert.deepEqual(results.filter((r) => !r.ok), []);
  assert.deepEqual(results.map((r) => r.name), caseNames('transaction'));
});
