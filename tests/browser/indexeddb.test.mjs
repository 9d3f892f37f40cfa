// fencegate/indexeddb in headless Chromium: the store conformance suite runs in
// the page (bundled by bundle-cases.mjs); a variant that reads and writes in two
// transactions is caught; two tabs of one origin racing on one key end with one
// mark and the loser gets STALE_TOKEN; wrong arguments are INVALID_ARGUMENT; and
// the docs/stores.md example runs as printed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { serve } from './serve.mjs';
import { launch } from './chromium.mjs';
import { bundleCases } from './bundle-cases.mjs';
import { caseNames } from '../js/stores/run-cases.mjs';
import { docBlock } from '../doc-blocks.mjs';

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
  entry = await bundleCases();
  server = await serve(0);
  browser = await launch();
  context = await browser.newContext();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

test('IndexedDB: the whole conformance suite passes in Chromium', async () => {
  const page = await newTab();
  const results = await page.evaluate(async (e) => (await import(e), globalThis.runConformance('real')), entry);
  assert.deepEqual(results.filter((r) => !r.ok), []);
  assert.deepEqual(results.map((r) => r.name), caseNames('transaction'));
  await page.close();
});

test('IndexedDB: a variant that reads and writes in two transactions fails the race case', async () => {
  const page = await newTab();
  const name = 'concurrent writers: the advances form one chain, the rest are STALE_TOKEN, the largest wins';
  const results = await page.evaluate(async ([e, n]) => (await import(e), globalThis.runConformance('lying', [n])), [entry, name]);
  assert.deepEqual(results.map((r) => [r.name, r.ok, r.assertion]), [[name, false, true]]);
  await page.close();
});

/** In a tab: the package, a gate over `fencegate/indexeddb` (or the lying variant) on database `db`. */
async function setUpTab(page, db, lying) {
  await page.evaluate(async ([db, lying, e]) => {
    await import(e); // the lying variant's class, for the control
    const fg = await import('/pkg/browser.mjs');
    const { IndexedDbStore, openFenceDatabase } = await import('/pkg/adapters/indexeddb.mjs');
    await fg.init();
    const conn = await openFenceDatabase(db);
    const store = lying ? globalThis.lyingStore(conn, () => globalThis.tab.beforeWrite()) : new IndexedDbStore(conn);
    globalThis.tab = { fg, conn, gate: new fg.Gate(store), pending: null, beforeWrite: async () => {} };
    // holds the object store with a readwrite transaction kept busy until release()
    globalThis.hold = () => {
      const tx = conn.transaction('fence', 'readwrite');
      const os = tx.objectStore('fence');
      let held = true;
      const spin = () => {
        if (held) os.get('-').onsuccess = spin;
      };
      spin();
      return new Promise((started) => (os.get('-').onsuccess = () => started(() => (held = false))));
    };
  }, [db, lying, entry]);
}

async function twoTabRace(lying) {
  const db = `two-tabs-${Math.random()}`;
  const [a, b] = [await newTab(), await newTab()];
  await setUpTab(a, db, lying);
  await setUpTab(b, db, lying);
  await a.evaluate(async () => { await tab.gate.establish('k', 5); });
  // Tab A holds the store; A's write (token 7) is created first, then B's (token 6)
  // while both would read mark 5; then A lets go and both run.
  await a.evaluate(async () => { globalThis.release = await hold(); });
  await a.evaluate(() => { tab.pending = tab.gate.write('k', 7, 'from A'); });
  // The lying variant writes in a second transaction: B's write waits until A's has
  // finished, so the order of the two writes is fixed (B's read, queued before A's
  // write transaction, still saw mark 5).
  if (lying) await b.evaluate(() => { const open = new Promise((r) => (globalThis.proceed = r)); tab.beforeWrite = () => open; });
  await b.evaluate(() => { tab.pending = tab.gate.write('k', 6, 'from B'); });
  await a.evaluate(() => release());
  const va = await a.evaluate(async () => { const v = await tab.pending; return { ...v, token: Number(v.token), markBefore: Number(v.markBefore), markAfter: Number(v.markAfter) }; });
  if (lying) await b.evaluate(() => proceed());
  const vb = await b.evaluate(async () => { const v = await tab.pending; return { ...v, token: Number(v.token), markBefore: Number(v.markBefore), markAfter: Number(v.markAfter) }; });
  const read = await b.evaluate(async () => { const r = await tab.gate.read('k'); return { ...r, mark: Number(r.mark) }; });
  await a.close();
  await b.close();
  return { va, vb, read };
}

test('two tabs of one origin race on one key: one mark, the loser gets STALE_TOKEN', async () => {
  const { va, vb, read } = await twoTabRace(false);
  assert.deepEqual(va, { key: 'k', ok: true, outcome: 'advance', code: null, token: 7, markBefore: 5, markAfter: 7 });
  assert.deepEqual(vb, { key: 'k', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 6, markBefore: 7, markAfter: 7 });
  assert.deepEqual(read, { mark: 7, value: 'from A', hasValue: true });
});

test('control: the same two-tab race over the lying variant loses the newer write', async () => {
  const { va, vb, read } = await twoTabRace(true);
  assert.deepEqual([va.outcome, va.markBefore, vb.outcome, vb.markBefore], ['advance', 5, 'advance', 5]);
  assert.deepEqual(read, { mark: 6, value: 'from B', hasValue: true });
});

test('IndexedDB: wrong arguments are INVALID_ARGUMENT', async () => {
  const page = await newTab();
  const out = await page.evaluate(async () => {
    const fg = await import('/pkg/browser.mjs');
    const { IndexedDbStore, openFenceDatabase } = await import('/pkg/adapters/indexeddb.mjs');
    await fg.init();
    const db = await openFenceDatabase(`args-${Math.random()}`);
    const rows = [];
    const show = async (label, f) => {
      try {
        await f();
        rows.push([label, 'no error']);
      } catch (e) {
        rows.push([label, e.code ?? e.name, e.message]);
      }
    };
    await show('no db', () => new IndexedDbStore(null));
    await show('storeName missing', () => new IndexedDbStore(db, { storeName: 'other' }));
    await show('encode only', () => new IndexedDbStore(db, { encode: String }));
    await show('openFenceDatabase()', () => openFenceDatabase());
    await show('version 0', () => openFenceDatabase('x', { version: 0 }));
    const gate = new fg.Gate(new IndexedDbStore(db));
    const e = await gate.write('f', 1, () => 1).catch((x) => x);
    rows.push(['a function value', e.code, String((await gate.read('f')).mark)]);
    return rows;
  });
  assert.deepEqual(out, [
    ['no db', 'INVALID_ARGUMENT', 'IndexedDbStore needs an open IDBDatabase (openFenceDatabase(name))'],
    ['storeName missing', 'INVALID_ARGUMENT', 'storeName: the database has no object store "other"'],
    ['encode only', 'INVALID_ARGUMENT', 'encode and decode come as a pair of functions (a codec): pass both, or neither for the default codec'],
    ['openFenceDatabase()', 'INVALID_ARGUMENT', 'openFenceDatabase needs a database name'],
    ['version 0', 'INVALID_ARGUMENT', 'version must be a positive integer'],
    ['a function value', 'INVALID_ARGUMENT', '0'],
  ]);
  await page.close();
});

test('docs/stores.md example: indexeddb runs as printed (imports through an import map of the package exports)', async () => {
  const code = docBlock('docs/stores.md', 'example: indexeddb');
  const page = await newTab();
  const logs = [];
  page.on('console', (m) => m.type() === 'log' && logs.push(m.text()));
  await page.setContent(`<link rel="icon" href="data:,"><script type="importmap">{"imports":{"fencegate":"/pkg/browser.mjs","fencegate/indexeddb":"/pkg/adapters/indexeddb.mjs"}}</script>
<script type="module">${code}\ndocument.body.dataset.done = 'true';</script>`, { waitUntil: 'load' });
  await page.waitForFunction(() => document.body.dataset.done === 'true');
  const expected = code.split('\n').filter((l) => l.startsWith('console.log(') && l.includes('// ')).map((l) => l.slice(l.lastIndexOf('// ') + 3).trim());
  assert.deepEqual(logs, expected);
  await page.close();
});

test('no console errors', () => {
  assert.deepEqual(errors, []);
});
