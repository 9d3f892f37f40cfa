// The demo's IndexedDB host store (www/idb-store.mjs) under fencegate's Gate in
// real Chromium: exact verdicts and stored bytes, u64 marks across a reopen,
// CORRUPT_STATE rolls back, a fenced delete keeps the mark, and concurrent
// writes to one key serialise (IndexedDB runs overlapping readwrite
// transactions on one store in creation order, and the store calls fencegate's
// `fn` synchronously inside the transaction, so nothing can commit in between).
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
  page = await browser.newPage();
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  // Any page of the origin will do; the demo page gives it (its own DB is not touched here).
  await page.goto(`${server.url}/www/`);
  await page.waitForFunction(() => document.body.dataset.ready === 'true');
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Runs `body(ctx)` in the page with the package and the store imported; a fresh database each time. */
function inPage(body) {
  return page.evaluate(async (src) => {
    const fg = await import('/pkg/browser.mjs');
    const idb = await import('/www/idb-store.mjs');
    await fg.init();
    const name = `idb-store-test-${Math.random()}`;
    const db = await idb.openDatabase(name);
    const raw = (key) =>
      new Promise((resolve, reject) => {
        const req = db.transaction('fence').objectStore('fence').get(key);
        req.onsuccess = () => resolve(req.result ?? null);
        req.onerror = () => reject(req.error);
      });
    const put = (key, record) =>
      new Promise((resolve, reject) => {
        const tx = db.transaction('fence', 'readwrite');
        tx.objectStore('fence').put(record, key);
        tx.oncomplete = resolve;
        tx.onabort = () => reject(tx.error);
      });
    const ser = (x) => JSON.parse(JSON.stringify(x, (_, v) => (typeof v === 'bigint' ? `${v}n` : v === undefined ? '(undefined)' : v)));
    const ctx = { fg, idb, db, name, raw, put, ser, store: new idb.IdbStore(db) };
    // eslint-disable-next-line no-new-func
    return ser(await new Function('ctx', `return (async () => { ${src} })()`)(ctx));
  }, typeof body === 'string' ? body : body.toString().replace(/^[^{]*{|}$/g, ''));
}

test('advance, accept, stale, missing: exact verdicts and the exact stored record', async () => {
  const out = await inPage(async (ctx) => {
    const gate = new ctx.fg.Gate(ctx.store);
    const v = [await gate.write('k', 5, 'a'), await gate.write('k', 5, 'b'), await gate.write('k', 4, 'stale'), await gate.write('k', undefined, 'x')];
    return { shape: gate.shape, v, raw: await ctx.raw('k'), read: await gate.read('k') };
  });
  assert.equal(out.shape, 'transaction');
  assert.deepEqual(out.v, [
    { key: 'k', ok: true, outcome: 'advance', code: null, token: 5, markBefore: 0, markAfter: 5 },
    { key: 'k', ok: true, outcome: 'accept', code: null, token: 5, markBefore: 5, markAfter: 5 },
    { key: 'k', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 4, markBefore: 5, markAfter: 5 },
    { key: 'k', ok: false, outcome: 'reject', code: 'MISSING_TOKEN', token: null, markBefore: 5, markAfter: 5 },
  ]);
  assert.deepEqual(out.raw, { state: '{"v":1,"mark":"5"}', value: 'b', hasValue: true });
  assert.deepEqual(out.read, { mark: 5, value: 'b', hasValue: true });
});

test('u64 marks above 2^53 survive closing and reopening the database', async () => {
  const out = await inPage(async (ctx) => {
    const gate = new ctx.fg.Gate(ctx.store);
    const v1 = await gate.establish('k', 2n ** 64n - 2n);
    ctx.db.close();
    const db2 = await ctx.idb.openDatabase(ctx.name);
    const gate2 = new ctx.fg.Gate(new ctx.idb.IdbStore(db2));
    const v2 = await gate2.write('k', 2n ** 64n - 3n, 'stale');
    const v3 = await gate2.write('k', 2n ** 64n - 1n, 'top');
    return { v1, v2, v3, read: await gate2.read('k') };
  });
  assert.equal(out.v1.markAfter, '18446744073709551614n');
  assert.deepEqual([out.v2.code, out.v2.markAfter], ['STALE_TOKEN', '18446744073709551614n']);
  assert.deepEqual([out.v3.outcome, out.v3.markAfter], ['advance', '18446744073709551615n']);
  assert.deepEqual(out.read, { mark: '18446744073709551615n', value: 'top', hasValue: true });
});

test('corrupt stored state is CORRUPT_STATE and the transaction writes nothing', async () => {
  const out = await inPage(async (ctx) => {
    const gate = new ctx.fg.Gate(ctx.store);
    const bad = { state: '{"v":1,"mark":"041"}', value: 'kept', hasValue: true };
    await ctx.put('k', bad);
    let code = null;
    try {
      await gate.write('k', 99, 'new');
    } catch (e) {
      code = e.code;
    }
    return { code, raw: await ctx.raw('k') };
  });
  assert.deepEqual(out, { code: 'CORRUPT_STATE', raw: { state: '{"v":1,"mark":"041"}', value: 'kept', hasValue: true } });
});

test('a fenced delete clears the value and keeps the mark', async () => {
  const out = await inPage(async (ctx) => {
    const gate = new ctx.fg.Gate(ctx.store);
    await gate.write('k', 3, 'v');
    const d = await gate.delete('k', 3);
    const late = await gate.write('k', 2, 'old');
    return { d: d.outcome, late: late.code, raw: await ctx.raw('k'), read: await gate.read('k') };
  });
  assert.deepEqual(out, {
    d: 'accept',
    late: 'STALE_TOKEN',
    raw: { state: '{"v":1,"mark":"3"}', value: '(undefined)', hasValue: false },
    read: { mark: 3, value: '(undefined)', hasValue: false },
  });
});

/** Runs 40 concurrent writes with a fixed permutation of tokens 1..40 (×17 mod 41). */
function concurrentWrites(makeStore) {
  return inPage(`
    const store = (${makeStore})(ctx);
    const gate = new ctx.fg.Gate(store);
    const tokens = Array.from({ length: 40 }, (_, i) => ((i + 1) * 17) % 41);
    const verdicts = await Promise.all(tokens.map((t) => gate.write('k', t, 'v' + t)));
    return { tokens, verdicts, read: await gate.read('k') };
  `);
}

/** Checks every verdict against one serial history in call order. */
function checkSerial(out) {
  let mark = 0;
  let value;
  for (const [i, t] of out.tokens.entries()) {
    const v = out.verdicts[i];
    const want = t > mark ? 'advance' : t === mark ? 'accept' : 'reject';
    assert.deepEqual([v.outcome, v.markBefore], [want, mark], `write ${i} with token ${t}`);
    if (t >= mark) {
      mark = t;
      value = `v${t}`;
    }
    assert.equal(v.markAfter, mark);
  }
  assert.deepEqual(out.read, { mark: 40, value, hasValue: true });
}

test('40 concurrent writes to one key serialise: each decides against every earlier one', async () => {
  checkSerial(await concurrentWrites('(ctx) => ctx.store'));
});

test('control: a store that reads and writes in separate transactions fails that check', async () => {
  // Check-then-write across two IndexedDB transactions: the bug fencing exists to stop (R1).
  const out = await concurrentWrites(`(ctx) => ({
    async transaction(key, fn) {
      const rec = await ctx.store.load(key);
      const out = fn(rec === null ? null : rec.state);
      if (out !== null) await ctx.put(key, { state: JSON.stringify(out.nextState), value: out.change.value, hasValue: true });
    },
    load: (key) => ctx.store.load(key),
  })`);
  assert.throws(() => checkSerial(out), assert.AssertionError);
});

test('no console errors', () => {
  assert.deepEqual(errors, []);
});
