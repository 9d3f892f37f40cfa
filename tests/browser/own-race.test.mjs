// The caller's own object stores on IndexedDB under races, in headless Chromium (docs/stores.md
// "Your own data on IndexedDB"):
//   - the bank race: 4 tabs of one origin share one database; each moves money between the
//     records of its `accounts` store with gate.transaction on one fence key, 2 with epoch 10
//     and, a little later, 2 with epoch 20. Each body awaits its reads of tx, puts both
//     balances and adds a record of itself to `transfers` (autoIncrement: the key is its place
//     in commit order, since IndexedDB runs readwrite transactions over overlapping scopes one
//     after another across tabs). The exact checks of tests/js/own-data/bank-check.mjs.
//   - the own-data conformance cases (OWN_CASES) against IndexedDbStore and two liars
//     (own-cases-entry.mjs): the fence record read in a readonly transaction of its own, and
//     the body run in a readwrite transaction of its own before the decision. Each lie fails
//     the case named in CAUGHT_BY (tests/js/own-data/liars.mjs); the honest store passes both.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { serve } from './serve.mjs';
import { launch } from './chromium.mjs';
import { bundleCases } from './bundle-cases.mjs';
import { ownCaseNames } from '../js/stores/run-cases.mjs';
import { CAUGHT_BY } from '../js/own-data/liars.mjs';
import { bankPlan, checkBank } from '../js/own-data/bank-check.mjs';

let server;
let browser;
let context;
let entry;
const errors = [];

async function newTab() {
  const page = await context.newPage();
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${server.url}/tests/browser/blank.html`);
  return page;
}

before(async () => {
  entry = await bundleCases('tests/browser/own-cases-entry.mjs', 'browser-own-cases');
  server = await serve(0);
  browser = await launch();
  context = await browser.newContext();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

const ACCOUNTS = 6;
const START = 1000;
const OPS = 30;

/** In a tab: opens the bank database (creating its stores and accounts when new). */
function openBank(page, name, accounts, start) {
  return page.evaluate(async ([name, accounts, start]) => {
    const fg = await import('/pkg/browser.mjs');
    const idb = await import('/pkg/adapters/indexeddb.mjs');
    await fg.init();
    const db = await idb.openFenceDatabase(name, {
      upgrade: (d) => {
        const acc = d.createObjectStore('accounts');
        for (let i = 1; i <= accounts; i++) acc.put(start, i);
        d.createObjectStore('transfers', { autoIncrement: true });
      },
    });
    globalThis.bank = { fg, db, gate: new fg.Gate(new idb.IndexedDbStore(db, { dataStores: ['accounts', 'transfers'] })) };
  }, [name, accounts, start]);
}

/** In a tab: one writer's transfers from `startAt` (epoch ms) + its delay; resolves to its outcomes. */
function writer(page, config) {
  return page.evaluate(async ({ worker, token, ops, accounts, delayMs, paceMs, seed, startAt }) => {
    const { transfers } = await import('/tests/js/own-data/bank-check.mjs');
    const { gate } = globalThis.bank;
    const req = (r) => new Promise((resolve, reject) => {
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error);
    });
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    const pick = transfers(seed, accounts);
    const body = (i, [src, dst, amount]) => async (tx) => {
      const acc = tx.objectStore('accounts');
      const a = await req(acc.get(src));
      const b = await req(acc.get(dst));
      acc.put(a - amount, src);
      acc.put(b + amount, dst);
      return req(tx.objectStore('transfers').add({ worker, op: i, token }));
    };
    await sleep(Math.max(0, startAt - Date.now()) + delayMs);
    const outcomes = [];
    for (let i = 0; i < ops; i++) {
      if (paceMs > 0) await sleep(paceMs);
      const t = pick.next();
      try {
        const v = await gate.transaction('bank/ledger', token, body(i, t), { opId: `w${worker}-${i}` });
        outcomes.push({ i, ok: v.ok && v.outcome !== 'duplicate', outcome: v.outcome, code: v.code });
      } catch (e) {
        outcomes.push({ i, ok: false, error: e.code ?? String(e), message: String(e.cause?.message ?? e.message) });
      }
    }
    return outcomes;
  }, config);
}

test('IndexedDB bank race: 4 tabs of one origin (2 at epoch 10, 2 later at epoch 20) move money between the records of their own object store', async (t) => {
  const name = `bank-${Math.random()}`;
  const plan = bankPlan({ perEpoch: 2, paceMs: 15, freshDelayMs: 250 });
  const tabs = [];
  for (let w = 0; w < plan.length; w++) {
    tabs.push(await newTab());
    await openBank(tabs[w], name, ACCOUNTS, START);
  }
  const startAt = Date.now() + 200;
  const outcomes = await Promise.all(plan.map((p, w) => writer(tabs[w], { worker: w, ops: OPS, accounts: ACCOUNTS, seed: 7 + w * 101, startAt, ...p })));
  const { balances, rows } = await tabs[0].evaluate(async () => {
    const { db } = globalThis.bank;
    const all = (store) => new Promise((resolve, reject) => {
      const out = [];
      const c = db.transaction(store).objectStore(store).openCursor();
      c.onsuccess = () => {
        const cur = c.result;
        if (cur === null) resolve(out);
        else {
          out.push([cur.key, cur.value]);
          cur.continue();
        }
      };
      c.onerror = () => reject(c.error);
    });
    return {
      balances: (await all('accounts')).map(([, v]) => v),
      rows: (await all('transfers')).map(([seq, v]) => ({ ...v, seq })),
    };
  });
  const stats = checkBank(assert, { plan, outcomes, rows, balances, accounts: ACCOUNTS, start: START });
  t.diagnostic(JSON.stringify(stats));
  for (const tab of tabs) await tab.close();
});

const [CASE_1, CASE_RACE] = ownCaseNames();

test('IndexedDB: the own-data cases pass on IndexedDbStore and catch both lies (the fence read in a transaction of its own; the body before the decision)', async () => {
  const page = await newTab();
  const run = (variant) => page.evaluate(async ([e, v]) => (await import(e), globalThis.runOwnConformance(v)), [entry, variant]);

  const honest = await run('honest');
  assert.deepEqual(honest.map((r) => [r.name, r.ok, r.message ?? null]), [[CASE_1, true, null], [CASE_RACE, true, null]]);

  const outside = await run('checkOutside');
  assert.equal(CAUGHT_BY.checkOutside, CASE_RACE);
  // writer 7's read, queued before writer 6's readwrite transaction, saw mark 5; it wrote 5 → 7 after 6
  assert.deepEqual(outside.map((r) => [r.name, r.ok, r.assertion ?? null, r.error ?? null]), [
    [CASE_1, true, null, null],
    [CASE_RACE, false, true, 'writer 7 decided after 6 committed'],
  ]);

  const first = await run('statementsFirst');
  assert.equal(CAUGHT_BY.statementsFirst, CASE_1);
  assert.deepEqual(first.map((r) => [r.name, r.ok, r.assertion ?? null, r.error ?? null]), [
    [CASE_1, false, true, 'the body ran for the two calls that applied, not for the refused one'],
    // the interleaving case fails too: with the statements outside the fence transaction,
    // writer 6's verdict is not the advance from mark 5
    [CASE_RACE, false, true, 'writer 6, deciding first, advanced from mark 5'],
  ]);
  await page.close();
});

test('no console errors', () => {
  assert.deepEqual(errors, []);
});
