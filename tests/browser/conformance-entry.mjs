// The store conformance suite (tests/js/stores/cases.mjs) in Chromium against
// fencegate/indexeddb: bundled by tests/browser/indexeddb.test.mjs (the package
// itself stays unbundled: /pkg/browser.mjs and /pkg/adapters/indexeddb.mjs are
// loaded from the server, as an app would), then `runConformance(variant, only)`.
import { init } from '/pkg/browser.mjs';
import { IndexedDbStore, openFenceDatabase } from '/pkg/adapters/indexeddb.mjs';
import { runCases } from '../js/stores/run-cases.mjs';

/**
 * Drops the precondition: reads and writes in two separate transactions.
 * `beforeWrite` (optional, async) runs between the two: the two-tab control
 * uses it to order the writes.
 */
class LyingStore extends IndexedDbStore {
  #db;
  #beforeWrite;
  constructor(db, beforeWrite = async () => {}) {
    super(db);
    this.#db = db;
    this.#beforeWrite = beforeWrite;
  }
  async transaction(key, fn) {
    const record = await new Promise((resolve, reject) => {
      const req = this.#db.transaction('fence', 'readonly').objectStore('fence').get(key);
      req.onsuccess = () => resolve(req.result ?? null);
      req.onerror = () => reject(req.error);
    });
    const out = fn(record === null ? null : record.state);
    if (out === null) return false;
    await this.#beforeWrite();
    const value = out.change.kind === 'set' ? this.encodeValue(out.change.value) : out.change.kind === 'delete' ? null : (record?.value ?? null);
    await this.update(key, () => ({ state: JSON.stringify(out.nextState), value }));
    return true;
  }
}

function request(db, mode, f) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction('fence', mode);
    const req = f(tx.objectStore('fence'));
    tx.oncomplete = () => resolve(req.result);
    tx.onabort = () => reject(tx.error);
  });
}

globalThis.runConformance = async (variant, only) => {
  await init();
  const Store = variant === 'lying' ? LyingStore : IndexedDbStore;
  const target = {
    shape: 'transaction',
    async open() {
      const name = `conformance-${Math.random()}`;
      const dbs = [await openFenceDatabase(name)];
      const db = () => dbs[dbs.length - 1];
      return {
        store: new Store(db()),
        // close the database and open it again (what a reload of the page does)
        reopen: async () => {
          db().close();
          dbs.push(await openFenceDatabase(name));
          return new Store(db());
        },
        raw: async (key) => {
          const r = await request(db(), 'readonly', (os) => os.get(key));
          return r === undefined ? null : { state: r.state, value: r.value };
        },
        putRaw: (key, state, value) => request(db(), 'readwrite', (os) => os.put({ state, value: value ?? null }, key)),
        close: async () => {
          db().close();
          await new Promise((r) => {
            const req = indexedDB.deleteDatabase(name);
            req.onsuccess = req.onerror = req.onblocked = r;
          });
        },
      };
    },
  };
  return runCases(target, only);
};

/** For the two-tab control in indexeddb.test.mjs. */
globalThis.lyingStore = (db, beforeWrite) => new LyingStore(db, beforeWrite);
