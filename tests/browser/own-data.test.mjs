// The caller's own object stores on IndexedDB, in headless Chromium (docs/stores.md
// "Your own data"): IndexedDbStore's `dataStores` join the fence's readwrite transaction.
// Exact verdicts, the caller's records and the mark after: stale refused (body never
// called), a throwing or rejecting body rolled back (CALLBACK_FAILED), an async body that
// awaits requests of tx commits after it settled, one that awaits a timer and then uses tx
// is rolled back (TransactionInactiveError as cause), one op id applied once, fenceIn
// inside the caller's transaction (a refusal aborts it), bad options INVALID_ARGUMENT.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { serve } from './serve.mjs';
import { launch } from './chromium.mjs';

let server;
let browser;
let page;
const errors = [];

before(async () => {
  server = await serve(0);
  browser = await launch();
  page = await (await browser.newContext()).newPage();
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${server.url}/tests/browser/blank.html`);
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Runs `scenario` (source of an async function of { fg, idb, open, orders, caught }) in the page. */
function inPage(scenario) {
  return page.evaluate(async (src) => {
    const fg = await import('/pkg/browser.mjs');
    const idb = await import('/pkg/adapters/indexeddb.mjs');
    await fg.init();
    const open = async () => {
      const db = await idb.openFenceDatabase(`own-${Math.random()}`, { upgrade: (d) => { d.createObjectStore('orders'); d.createObjectStore('other'); } });
      const w = db.transaction('orders', 'readwrite');
      w.objectStore('orders').put('new', 42);
      w.objectStore('orders').put('new', 43);
      await new Promise((r) => (w.oncomplete = r));
      return db;
    };
    const orders = (db) => new Promise((resolve) => {
      const out = {};
      const c = db.transaction('orders').objectStore('orders').openCursor();
      c.onsuccess = () => {
        const cur = c.result;
        if (cur === null) resolve(out);
        else { out[cur.key] = cur.value; cur.continue(); }
      };
    });
    const caught = async (p, cause) => {
      try { return await p; } catch (e) { return { error: { code: e.code ?? e.name, message: e.message, causeName: e.cause?.name, causeIsBody: cause === undefined ? undefined : e.cause === cause, verdict: e.verdict } }; }
    };
    const req = (r) => new Promise((resolve, reject) => { r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error); });
    // eslint-disable-next-line no-new-func
    return new Function('ctx', `return (${src})(ctx)`)({ fg, idb, open, orders, caught, req });
  }, scenario.toString());
}

const V = (key, outcome, token, markBefore, markAfter, extra = {}) => ({ key, ok: true, outcome, code: null, token, markBefore, markAfter, ...extra });
const stale = (key, token, mark) => ({ key, ok: false, outcome: 'reject', code: 'STALE_TOKEN', token, markBefore: mark, markAfter: mark });
const num = (v) => JSON.parse(JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? Number(x) : x)));

test('IndexedDB transaction: the caller\'s store joins the fence transaction; stale refused, body never called', async () => {
  const out = await inPage(async ({ fg, idb, open, orders }) => {
    const db = await open();
    const gate = new fg.Gate(new idb.IndexedDbStore(db, { dataStores: ['orders'] }));
    let calls = 0;
    const setStatus = (s) => (tx) => { calls++; tx.objectStore('orders').put(s, 42); return calls; };
    const verdicts = [];
    verdicts.push(await gate.transaction('orders/42', 33, setStatus('paid')));
    verdicts.push(await gate.transaction('orders/42', 34, setStatus('shipped')));
    verdicts.push(await gate.transaction('orders/42', 34, setStatus('shipped-2')));
    verdicts.push(await gate.transaction('orders/42', 33, setStatus('refunded')));
    return { verdicts, calls, orders: await orders(db), mark: await gate.mark('orders/42') };
  });
  assert.deepEqual(num(out), {
    verdicts: [
      V('orders/42', 'advance', 33, 0, 33, { result: 1 }),
      V('orders/42', 'advance', 34, 33, 34, { result: 2 }),
      V('orders/42', 'accept', 34, 34, 34, { result: 3 }),
      stale('orders/42', 33, 34),
    ],
    calls: 3,
    orders: { 42: 'shipped-2', 43: 'new' },
    mark: 34,
  });
});

test('IndexedDB transaction: throwing, rejecting and timer-awaiting bodies roll back; a body awaiting its own requests commits after it settled; one op id applies once', async () => {
  const out = await inPage(async ({ fg, idb, open, orders, caught, req }) => {
    const db = await open();
    const gate = new fg.Gate(new idb.IndexedDbStore(db, { dataStores: ['orders'] }));
    await gate.establish('orders/42', 5);
    const boom = new Error('no refund');
    const r = {};
    r.thrown = await caught(gate.transaction('orders/42', 6, (tx) => { tx.objectStore('orders').put('half', 42); throw boom; }), boom);
    r.rejected = await caught(gate.transaction('orders/42', 6, async (tx) => {
      const os = tx.objectStore('orders');
      const s = await req(os.get(42));
      os.put(`${s}-half`, 42);
      await req(os.get(43));
      throw boom;
    }), boom);
    r.timer = await caught(gate.transaction('orders/42', 6, async (tx) => {
      tx.objectStore('orders').put('before-timer', 42);
      await new Promise((t) => setTimeout(t, 20));
      tx.objectStore('orders').put('after-timer', 43);
    }));
    r.afterFailures = { orders: await orders(db), mark: await gate.mark('orders/42') };
    r.awaited = await gate.transaction('orders/42', 7, async (tx) => {
      const os = tx.objectStore('orders');
      const s = await req(os.get(42));
      os.put(`${s}+1`, 42);
      const t = await req(os.get(42));
      os.put(`${t}+2`, 43);
      return t;
    });
    let calls = 0;
    const once = (tx) => { calls++; tx.objectStore('orders').put('once', 43); };
    r.first = await gate.transaction('orders/43', 9, once, { opId: 'o-1' });
    r.again = await gate.transaction('orders/43', 9, once, { opId: 'o-1' });
    r.calls = calls;
    r.orders = await orders(db);
    r.mark = await gate.mark('orders/42');
    return r;
  });
  const failed = (message, causeName, causeIsBody) => ({ error: { code: 'CALLBACK_FAILED', message: `the statements of the fenced transaction on "orders/42" failed, so it was rolled back (the mark and your data are as before): ${message}`, causeName, causeIsBody, verdict: V('orders/42', 'advance', 6, 5, 6) } });
  const o = num(out);
  assert.equal(o.timer.error.code, 'CALLBACK_FAILED');
  assert.equal(o.timer.error.causeName, 'TransactionInactiveError');
  delete o.timer;
  assert.deepEqual(o, {
    thrown: failed('no refund', 'Error', true),
    rejected: failed('no refund', 'Error', true),
    afterFailures: { orders: { 42: 'new', 43: 'new' }, mark: 5 },
    awaited: V('orders/42', 'advance', 7, 5, 7, { result: 'new+1' }),
    first: V('orders/43', 'advance', 9, 0, 9),
    again: { key: 'orders/43', ok: true, outcome: 'duplicate', code: null, original: 'advance', token: 9, markBefore: 9, markAfter: 9 },
    calls: 1,
    orders: { 42: 'new+1', 43: 'once' },
    mark: 7,
  });
});

test('IndexedDB fenceIn inside the caller\'s readwrite transaction: applies with its put; a refusal aborts it (a caught refusal cannot commit); bad handles and options are INVALID_ARGUMENT', async () => {
  const out = await inPage(async ({ fg, idb, open, orders, caught }) => {
    const db = await open();
    const store = new idb.IndexedDbStore(db);
    const gate = new fg.Gate(store);
    const commit = (tx) => new Promise((resolve) => { tx.oncomplete = () => resolve('committed'); tx.onabort = () => resolve(`aborted`); });
    const refund = async (token, status, catchIt) => {
      const tx = db.transaction(['fence', 'orders'], 'readwrite');
      const ended = commit(tx);
      let v;
      try {
        v = await gate.fenceIn(tx, 'orders/42', token);
      } catch (e) {
        v = { code: e.code };
        if (!catchIt) return { v, end: await ended };
      }
      try { tx.objectStore('orders').put(status, 42); } catch (e) { v.putAfter = e.name; }
      return { v, end: await ended };
    };
    const r = {};
    r.applied = await refund(9, 'refunded');
    r.stale = await refund(8, 'zombie', true);
    r.orders = await orders(db);
    r.mark = await gate.mark('orders/42');
    r.readonly = await caught(gate.fenceIn(db.transaction('fence', 'readonly'), 'orders/42', 10));
    r.noFence = await caught(gate.fenceIn(db.transaction('orders', 'readwrite'), 'orders/42', 10));
    r.options = [];
    for (const o of [{ dataStores: ['missing'] }, { dataStores: ['fence'] }, { dataStores: 'orders' }, { stores: ['orders'] }]) {
      try { new idb.IndexedDbStore(db, o); r.options.push('no error'); } catch (e) { r.options.push(`${e.code} ${e.message}`); }
    }
    // a body touching a store not declared in dataStores: NotFoundError, rolled back
    r.undeclared = await caught(new fg.Gate(store).transaction('orders/42', 11, (tx) => tx.objectStore('orders').put('x', 42)));
    r.markAfter = await gate.mark('orders/42');
    return r;
  });
  assert.deepEqual(num(out), {
    applied: { v: V('orders/42', 'advance', 9, 0, 9), end: 'committed' },
    stale: { v: { code: 'STALE_TOKEN', putAfter: 'InvalidStateError' }, end: 'aborted' },
    orders: { 42: 'refunded', 43: 'new' },
    mark: 9,
    readonly: { error: { code: 'INVALID_ARGUMENT', message: 'IndexedDbStore.fenceIn: the handle must be a readwrite transaction of this database over the fence store "fence"' } },
    noFence: { error: { code: 'INVALID_ARGUMENT', message: 'IndexedDbStore.fenceIn: the handle must be a readwrite transaction of this database over the fence store "fence"' } },
    options: [
      'INVALID_ARGUMENT dataStores: "missing" is not an object store of the database (other than the fence store)',
      'INVALID_ARGUMENT dataStores: "fence" is not an object store of the database (other than the fence store)',
      'INVALID_ARGUMENT IndexedDbStore option dataStores must be an array, got string',
      'INVALID_ARGUMENT unknown IndexedDbStore option "stores" (known: storeName, dataStores, encode, decode, name)',
    ],
    undeclared: { error: { code: 'CALLBACK_FAILED', message: out.undeclared.error.message, causeName: 'NotFoundError', verdict: V('orders/42', 'advance', 11, 9, 11) } },
    markAfter: 9,
  });
});

test('no page errors', () => {
  assert.deepEqual(errors, []);
});
