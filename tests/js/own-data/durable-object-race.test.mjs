// Races and lying stores on the caller's own data in a Durable Object, in real workerd
// (Miniflare; docs/stores.md "Your own data on Durable Objects"). The scenarios run in
// tests/workerd/own-race-worker.mjs.
//
// A Durable Object is one instance on one thread, so "several writers" are several clients'
// concurrent fetches into the same object, each with its own Gate kept in the object:
//   - KV API (DurableObjectStore): the transfer's body awaits a slow HTTP service (this test's
//     server) between its txn reads and puts. workerd runs one storage.transaction callback
//     of the object at a time across requests; the other requests run beside it up to their
//     own transactions. Inside ONE request nothing holds a second transaction out: each fetch
//     carries 2 transfers through 2 gates, the second started while the first's body awaits
//     the service, and the store itself orders its calls on one key (the same-event test
//     shows what workerd does without that). The object counts: several requests inside at
//     once, several transfers in flight, never two bodies at once. The bodies await no timer:
//     workerd stalls an object whose transaction callback awaits one while an earlier timer
//     comes due (docs/stores.md).
//   - SQLite storage (DurableObjectSqlStore): transactionSync runs the fence step and the
//     body with no await in between, so no other request can run inside one; the fetches
//     interleave at an await before each transfer, and each client's Gate decides from its
//     own state cache, which falls behind when another client moves the epoch (a conditional
//     UPDATE that misses, then the row read again).
// After each race: exact checks of bank-check.mjs (sum unchanged, each acknowledged transfer
// once, none refused there, refusals STALE_TOKEN, no epoch-10 transfer after the first epoch-20
// one). Then the own-data conformance cases (OWN_CASES) against the honest stores and two
// lying variants of each (tests/js/own-data/liars.mjs): each lie fails the case named in
// CAUGHT_BY with an assertion, the honest store passes both.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { bundleWorker, miniflare, root } from '../workerd.mjs';
import { ownCaseNames } from '../stores/run-cases.mjs';
import { CAUGHT_BY } from './liars.mjs';
import { bankPlan, checkBank, transfers } from './bank-check.mjs';

let worker;
let mf;
let api;
let server;
let n = 0;

before(async () => {
  // the slow service the KV bodies await: answers after ?ms= milliseconds
  server = createServer((req, res) => setTimeout(() => res.end('ok'), Number(new URL(req.url, 'http://x').searchParams.get('ms'))));
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  api = `http://127.0.0.1:${server.address().port}`;
  worker = await bundleWorker(join(root, 'tests/workerd/own-race-worker.mjs'), 'do-own-race');
  mf = await miniflare(worker, { durableObjects: { KV: 'Kv', SQL: { className: 'Sql', useSQLite: true } }, compatibilityFlags: ['nodejs_compat'] });
});

after(async () => {
  await mf?.dispose();
  server?.close();
  if (worker) rmSync(worker.dir, { recursive: true, force: true });
});

async function post(path, body) {
  const r = await mf.dispatchFetch(`http://localhost/${path}`, { method: 'POST', body: JSON.stringify(body) });
  const text = await r.text();
  assert.equal(r.status, 200, text);
  return JSON.parse(text);
}

const ACCOUNTS = 6;
const START = 1000;
const OPS = 24;
const BATCH = 2;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Each client's transfers, BATCH per fetch (the object runs a batch's transfers at once, each
 * through a Gate of its own, started an await apart), one fetch after the other; the clients
 * at once. Returns the outcomes per client.
 */
async function race(path, plan) {
  await post(path, { scenario: 'setup', accounts: ACCOUNTS, start: START });
  return Promise.all(plan.map(async (p, w) => {
    const pick = transfers(7 + w * 101, ACCOUNTS);
    if (p.delayMs > 0) await sleep(p.delayMs);
    const out = [];
    for (let i = 0; i < OPS; i += BATCH) {
      if (p.paceMs > 0) await sleep(p.paceMs);
      const batch = [];
      for (let op = i; op < i + BATCH; op++) {
        const [src, dst, amount] = pick.next();
        batch.push({ worker: w, op, token: p.token, src, dst, amount, waitMs: 1 + Math.floor(pick.random() * 3) });
      }
      const answers = await post(path, { scenario: 'transfer', client: w, api, batch });
      out.push(...answers.map((a, j) => ({ i: i + j, ...a })));
    }
    return out;
  }));
}

test('DO KV API: two gates on one key inside one request: the second transaction, started while the first\'s body awaits a timer, waits for it (its puts land after the first\'s)', async () => {
  // without the store's own turn per key, workerd runs the second inside the first: it read
  // mark 6 (uncommitted) and advanced to 7, then the first put '6' last: mark 7, data of epoch 6
  assert.deepEqual(await post(`kv/same-${n++}`, { scenario: 'sameEvent' }), {
    v6: { ok: true, outcome: 'advance', code: null, result: 6 },
    v7: { ok: true, outcome: 'advance', code: null, result: 7 },
    own: '7',
    mark: 7,
  });
});

test('DO KV API bank race: 6 clients\' concurrent fetches (3 at epoch 10, 3 later at epoch 20) of 2 overlapping transfers each, bodies awaiting a slow service inside storage.transaction', async (t) => {
  const plan = bankPlan({ perEpoch: 3, paceMs: 20, freshDelayMs: 150 });
  const path = `kv/bank-${n++}`;
  const outcomes = await race(path, plan);
  const bank = await post(path, { scenario: 'bank' });
  const stats = checkBank(assert, { plan, outcomes, rows: bank.transfers, balances: bank.accounts, accounts: ACCOUNTS, start: START });
  assert.equal(bank.seq, stats.acked, 'the commit counter saw every acknowledged transfer once');
  assert.ok(bank.maxRequests >= 3, `requests inside the object at once: ${bank.maxRequests}`);
  assert.ok(bank.maxTransactions >= 2, `transfers in flight at once: ${bank.maxTransactions}`);
  // one body at a time: the input gate holds other requests out of a running callback, the store its own request's
  assert.equal(bank.maxBodies, 1);
  t.diagnostic(JSON.stringify({ ...stats, maxRequests: bank.maxRequests, maxTransactions: bank.maxTransactions }));
});

test('DO SQLite storage bank race: 6 clients\' concurrent fetches of 2 transfers each, each transfer through a Gate with its own state cache, interleaving at an await before each', async (t) => {
  const plan = bankPlan({ perEpoch: 3, paceMs: 20, freshDelayMs: 150 });
  const path = `sql/bank-${n++}`;
  const outcomes = await race(path, plan);
  const bank = await post(path, { scenario: 'bank' });
  const stats = checkBank(assert, { plan, outcomes, rows: bank.transfers, balances: bank.accounts, accounts: ACCOUNTS, start: START });
  assert.ok(bank.maxRequests >= 3, `requests inside the object at once: ${bank.maxRequests}`);
  t.diagnostic(JSON.stringify({ ...stats, maxRequests: bank.maxRequests }));
});

const [CASE_1, CASE_RACE] = ownCaseNames();

// [class, label, whether the statements-first lie also fails the interleaving case]: on the KV API
// writer 7's statements land while writer 6's still sleep, and 6 is then refused; in SQL the other
// request runs after 6's whole call
for (const [cls, label, firstFailsRace] of [['kv', 'DO KV API (DurableObjectStore)', true], ['sql', 'DO SQLite storage (DurableObjectSqlStore)', false]]) {
  test(`${label}: the own-data cases pass on the honest store and catch both lies (check outside the transaction; statements before the decision)`, async () => {
    const honest = await post(`${cls}/cases-${n++}`, { scenario: 'cases', variant: 'honest' });
    assert.deepEqual(honest.map((r) => [r.name, r.ok, r.message ?? null]), [[CASE_1, true, null], [CASE_RACE, true, null]]);

    const outside = await post(`${cls}/cases-${n++}`, { scenario: 'cases', variant: 'checkOutside' });
    assert.equal(CAUGHT_BY.checkOutside, CASE_RACE);
    // writer 7 read mark 5 outside while writer 6 held its transaction, then wrote 5 → 7 over 6
    assert.deepEqual(outside.map((r) => [r.name, r.ok, r.assertion ?? null, r.error ?? null]), [
      [CASE_1, true, null, null],
      [CASE_RACE, false, true, 'writer 7 decided after 6 committed'],
    ]);

    const first = await post(`${cls}/cases-${n++}`, { scenario: 'cases', variant: 'statementsFirst' });
    assert.equal(CAUGHT_BY.statementsFirst, CASE_1);
    assert.deepEqual(first.map((r) => [r.name, r.ok, r.assertion ?? null]), [[CASE_1, false, true], [CASE_RACE, !firstFailsRace, firstFailsRace ? true : null]]);
    assert.equal(first[0].error, 'the body ran for the two calls that applied, not for the refused one');
  });
}
