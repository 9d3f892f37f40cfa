// The own-data conformance cases (tests/js/stores/cases.mjs OWN_CASES) in Chromium against
// IndexedDbStore and two liars (tests/js/own-data/liars.mjs), bundled by
// tests/browser/own-race.test.mjs (the package itself is loaded from the server, as an app
// would): `runOwnConformance(variant)` → [{ name, ok, assertion, error, message }].
//   honest           IndexedDbStore, the caller's object store `own` in its dataStores
//   checkOutside     the fence record read in a readonly transaction of its own, the decision
//                    written by the fence's readwrite transaction whatever it reads there
//   statementsFirst  the body run in a readwrite transaction of its own over `own`, committed
//                    before the fence's transaction decides
import { init } from '/pkg/browser.mjs';
import { IndexedDbStore, openFenceDatabase } from '/pkg/adapters/indexeddb.mjs';
import { runOwnCases } from '../js/stores/run-cases.mjs';
import { checkOutside, statementsFirst } from '../js/own-data/liars.mjs';

const req = (r) => new Promise((resolve, reject) => {
  r.onsuccess = () => resolve(r.result);
  r.onerror = () => reject(r.error);
});

function request(db, storeName, mode, f) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(storeName, mode);
    const r = f(tx.objectStore(storeName));
    tx.oncomplete = () => resolve(r.result);
    tx.onabort = () => reject(tx.error);
  });
}

/** `run(tx)` on a readwrite transaction of its own over `own`; resolves once it committed. */
const ownTransaction = (db) => async (run) => {
  const tx = db.transaction('own', 'readwrite');
  const done = new Promise((resolve, reject) => {
    tx.oncomplete = resolve;
    tx.onabort = () => reject(tx.error);
  });
  done.catch(() => {});
  await run(tx);
  await done;
};

globalThis.runOwnConformance = async (variant) => {
  await init();
  const target = {
    shape: 'transaction',
    async open() {
      const name = `own-cases-${Math.random()}`;
      const db = await openFenceDatabase(name, { upgrade: (d) => d.createObjectStore('own') });
      const real = new IndexedDbStore(db, { dataStores: ['own'] });
      const store = variant === 'checkOutside' ? checkOutside(real) : variant === 'statementsFirst' ? statementsFirst(real, ownTransaction(db)) : real;
      return {
        store,
        raw: async (key) => {
          const r = await request(db, 'fence', 'readonly', (os) => os.get(key));
          return r === undefined ? null : { state: r.state, value: r.value };
        },
        own: {
          sync: false,
          setup: (id) => request(db, 'own', 'readwrite', (os) => os.put('init', id)),
          // the body keeps its transaction busy with reads of its own for `sleepMs` (it may not await
          // anything else: IndexedDB would commit under it), then puts
          write: (id, v, sleepMs = 0) => async (tx) => {
            const os = tx.objectStore('own');
            const end = Date.now() + sleepMs;
            while (Date.now() < end) await req(os.get(id));
            os.put(v, id);
            return 1;
          },
          read: (id) => request(db, 'own', 'readonly', (os) => os.get(id)),
          other: async () => null,
        },
        close: async () => {
          db.close();
          await new Promise((r) => {
            const d = indexedDB.deleteDatabase(name);
            d.onsuccess = d.onerror = d.onblocked = r;
          });
        },
      };
    },
  };
  return runOwnCases(target);
};
